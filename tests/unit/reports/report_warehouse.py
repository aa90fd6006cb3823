"""A real warehouse for the report tests: the whole pipeline on the bundled samples with the oracle
and random baselines (seconds), built once per test module in a temp dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT, write_yaml

from pipeline import benchmarks

BASELINES = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
  oracle: {engine: baseline, strategy: oracle}
"""


def build(base: Path) -> Path:
    """Run the pipeline into `base`; returns the warehouse file."""
    from pipeline.runner import run_pipeline

    (base / "dagster_home").mkdir(parents=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", base / "dagster_home" / "dagster.yaml")
    with pytest.MonkeyPatch.context() as mp:
        for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                          ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
            mp.setenv(name, str(base / sub))
        mp.setenv("WENHENG_MODELS", str(write_yaml(base / "models.yaml", BASELINES)))
        mp.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
        summary = run_pipeline(list(benchmarks.names()), ["random", "oracle"], log=lambda _: None)
    assert summary.ok, summary.failures
    return base / "warehouse.duckdb"
