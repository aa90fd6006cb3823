"""Where things live. Defaults sit inside the project; environment variables override them."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"
SQL_DIR = PROJECT_ROOT / "sql"


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def sources_file() -> Path:
    return _env_path("WENHENG_SOURCES", DATA_DIR / "sources.yaml")


def models_file() -> Path:
    return _env_path("WENHENG_MODELS", DATA_DIR / "models.yaml")


def corrections_dir() -> Path:
    return _env_path("WENHENG_CORRECTIONS", DATA_DIR / "corrections")


def warehouse_file() -> Path:
    return _env_path("WENHENG_WAREHOUSE", DATA_DIR / "warehouse.duckdb")


# The Dagster tag every run of one `wenheng run` carries; its value names the run's report folder.
RUN_TAG = "wenheng/run"


def reports_dir() -> Path:
    """HTML reports, one folder per run: data/reports beside the warehouse (WENHENG_REPORTS overrides)."""
    value = os.environ.get("WENHENG_REPORTS")
    return Path(value).expanduser().resolve() if value else warehouse_file().parent / "reports"


def lake_dir() -> Path:
    """Parquet files written by the assets (one file per asset or partition)."""
    return _env_path("WENHENG_LAKE", DATA_DIR / "lake")


def cache_dir() -> Path:
    """Response cache and converted models; expensive to rebuild, cheap to keep."""
    return _env_path("WENHENG_CACHE", DATA_DIR / "cache")


def dagster_home() -> Path:
    return _env_path("DAGSTER_HOME", PROJECT_ROOT / ".dagster_home")


def model_store() -> Path:
    """Bundled models converted for vLLM (hundreds of MB, minutes to build): kept apart from
    the response cache so a fresh cache or a test never rebuilds them."""
    return _env_path("WENHENG_MODEL_STORE", DATA_DIR / "cache" / "models")


def corpora_file() -> Path:
    """The corpora scanned for contamination (pipeline/contamination/corpora.py)."""
    return _env_path("WENHENG_CORPORA", DATA_DIR / "corpora.yaml")


def scanned_corpora_file() -> Path:
    """Corpora scanned from the command line (`wenheng contamination scan PATH...`), kept so their
    partitions can be rebuilt."""
    return cache_dir() / "corpora.scanned.yaml"
