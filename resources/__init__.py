"""Dagster resources: where the lake and warehouse live, and which engines serve which models."""
