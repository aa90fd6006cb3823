"""A run launched from the UI (or a sensor) gets an HTML report too, and the `leaderboard` asset
links to it; a `wenheng run` writes its own as it ends, and the asset links to that one."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "unit" / "reports"))
from report_warehouse import build  # noqa: E402

from assets.warehouse import score_tables  # noqa: E402
from pipeline.paths import RUN_TAG  # noqa: E402
from resources.engines import WarehouseResource  # noqa: E402


@pytest.fixture(scope="module")
def warehouse(baseline_build, tmp_path_factory) -> Path:
    return build(baseline_build, tmp_path_factory.mktemp("leaderboard_report"))


def _materialize(warehouse: Path, reports: Path, monkeypatch, tags=None) -> dict:
    monkeypatch.setenv("WENHENG_REPORTS", str(reports))
    monkeypatch.setenv("WENHENG_MODELS", str(warehouse.parent / "models.yaml"))
    result = dg.materialize([score_tables], selection=["leaderboard"], tags=tags or {},
                            resources={"warehouse_db": WarehouseResource(database=str(warehouse))})
    assert result.success
    [materialization] = result.asset_materializations_for_node("score_tables")   # the leaderboard alone
    assert materialization.asset_key == dg.AssetKey("leaderboard")
    return materialization.metadata


def test_a_ui_run_writes_the_report_and_the_asset_links_to_it(warehouse, tmp_path, monkeypatch):
    metadata = _materialize(warehouse, tmp_path / "reports", monkeypatch)
    index = Path(metadata["report"].value)
    assert index.is_file() and index.parent.parent == tmp_path / "reports" and index.name == "index.html"
    assert "report_url" not in metadata   # a file:// link the UI's page cannot open
    assert (index.parent / "results.json").is_file() and list(index.parent.glob("samples_*.jsonl"))
    assert "dagster run " in (index.parent / "results.json").read_text(encoding="utf-8")


def test_a_wenheng_run_links_the_report_it_writes_as_it_ends(warehouse, tmp_path, monkeypatch):
    metadata = _materialize(warehouse, tmp_path / "reports", monkeypatch, {RUN_TAG: "20260101-000000-abc"})
    assert Path(metadata["report"].value) == tmp_path / "reports" / "20260101-000000-abc" / "index.html"
    assert not (tmp_path / "reports").exists()   # nothing written by the asset: the CLI writes it
