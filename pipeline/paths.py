"""Where things live. Defaults sit inside the project; environment variables override them
(pipeline/settings.py declares each one). Each function reads the environment when called."""

from __future__ import annotations

from pathlib import Path

from pipeline.settings import DATA_DIR as DATA_DIR
from pipeline.settings import PROJECT_ROOT as PROJECT_ROOT
from pipeline.settings import settings

SQL_DIR = PROJECT_ROOT / "sql"


def sources_file() -> Path:
    return settings().sources


def models_file() -> Path:
    return settings().models


def corrections_dir() -> Path:
    return settings().corrections


def warehouse_file() -> Path:
    return settings().warehouse


# The Dagster tag every run of one `wenheng run` carries; its value names the run's report folder.
RUN_TAG = "wenheng/run"
# the process (and its host) that runs a `wenheng run`'s Dagster runs in process: a run it left
# started when killed is marked failed; the daemon's runs carry neither
PID_TAG, HOST_TAG = "wenheng/pid", "wenheng/host"


def reports_dir() -> Path:
    """HTML reports, one folder per run: data/reports beside the warehouse (WENHENG_REPORTS overrides)."""
    return settings().reports


def charts_dir() -> Path:
    """Drawn charts by content (pipeline/charts/cache.py): data/charts beside the warehouse
    (WENHENG_CHARTS overrides)."""
    return settings().charts


def logs_dir() -> Path:
    """Run log files: data/logs beside the warehouse (WENHENG_LOGS overrides)."""
    return settings().logs


def run_log_file(run_tag: str) -> Path:
    """The log of one `wenheng run` (its tag wenheng/run=<run_tag>): the full tracebacks of the steps
    that failed, and the warnings and log lines of the libraries it ran (`--verbose` shows those
    on the terminal instead)."""
    return logs_dir() / f"{run_tag}.log"


def lake_dir() -> Path:
    """Parquet files written by the assets (one file per asset or partition)."""
    return settings().lake


def cache_dir() -> Path:
    """Response cache and converted models; expensive to rebuild, cheap to keep."""
    return settings().cache


def dagster_home() -> Path:
    return settings().dagster_home


def model_store() -> Path:
    """Bundled models converted for vLLM (hundreds of MB, minutes to build): kept apart from
    the response cache so a fresh cache or a test never rebuilds them."""
    return settings().model_store


def corpora_file() -> Path:
    """The corpora scanned for contamination (pipeline/contamination/corpora.py)."""
    return settings().corpora


def scanned_corpora_file() -> Path:
    """Corpora scanned from the command line (`wenheng contamination scan PATH...`), kept so their
    partitions can be rebuilt."""
    return cache_dir() / "corpora.scanned.yaml"
