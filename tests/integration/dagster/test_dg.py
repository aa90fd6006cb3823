"""`dg` (dagster-dg-cli) takes the repo as a Dagster project ([tool.dg] in pyproject.toml): its
definitions check and list from the repo root, in the project's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

DG = Path(sys.executable).with_name("dg")


def run_dg(*args: str, workdir: Path) -> subprocess.CompletedProcess:
    # As from an activated .venv, with the instance the project uses (a temp copy of .dagster_home).
    env = dict(os.environ, DAGSTER_HOME=str(workdir / "dagster_home"), VIRTUAL_ENV=sys.prefix,
               PATH=f"{DG.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    result = subprocess.run([str(DG), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"dg {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_dg_check_defs(workdir):
    result = run_dg("check", "defs", workdir=workdir)
    assert "All definitions loaded successfully" in result.stdout + result.stderr


def test_dg_list_defs(workdir):
    listed = json.loads(run_dg("list", "defs", "--json", workdir=workdir).stdout)
    assets = {a["asset_key"] for a in listed["assets"]}
    assert {"raw_items", "items", "quarantine", "corrections_audit", "dedup_clusters", "contamination",
            "item_variants", "prompts", "responses", "scores", "corpus_overlap", "corpus_quarantine", "corpus_reading",
            "warehouse"} <= assets
    assert {j["name"] for j in listed["jobs"]} == {"prepare", "evaluate", "scan", "publish"}
