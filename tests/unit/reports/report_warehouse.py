"""A real warehouse for the report tests: the whole pipeline on the bundled samples with the oracle
and random baselines, copied from the session's build (tests/conftest.py) into a temp dir."""

from __future__ import annotations

from pathlib import Path


def build(baseline_build, base: Path) -> Path:
    """A copy of the session's baseline build in `base` (its models.yaml beside the warehouse);
    returns the warehouse file."""
    return baseline_build.copy(base) / "warehouse.duckdb"
