"""Thin Dagster assets: each reads like a sentence and calls into `pipeline`."""
