from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The benchmarks' own files (not redistributable, so not in the repo): WENHENG_UPSTREAM, or a
# folder beside the checkout.
UPSTREAM = Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream"))


def upstream(*parts: str) -> Path:
    """A real upstream benchmark file; tests that need one skip when it is absent."""
    path = UPSTREAM.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real upstream file {path} is not available on this machine")
    return path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Lake, warehouse, Dagster instance and sources in a temp dir; the response cache too,
    unless a test shares the project cache (model conversions are expensive)."""
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
        monkeypatch.setenv(name, str(tmp_path / sub))
    (tmp_path / "dagster_home").mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", tmp_path / "dagster_home" / "dagster.yaml")
    return tmp_path


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def pytest_sessionfinish(session, exitstatus):
    """Stop a loaded vLLM engine so the test process exits when the tests are done."""
    import sys

    engine_module = sys.modules.get("pipeline.engines.vllm_engine")
    if engine_module is not None:
        engine_module.shutdown_engines()
