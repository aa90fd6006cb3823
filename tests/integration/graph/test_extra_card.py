"""Adding a benchmark is one card folder: tests/cards/toybench (a card, its protocol, its sample
file), registered through WENHENG_CARDS and given a sources.yaml entry, runs through the whole
graph. In pipeline/benchmarks/ the registry finds a new folder by itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import duckdb
from conftest import ROOT

TOY = ROOT / "tests" / "cards" / "toybench"   # the card, its protocol and its sample file


def _run(tmp_path, sources: str) -> subprocess.CompletedProcess:
    (tmp_path / "sources.yaml").write_text(sources, encoding="utf-8")
    (tmp_path / "models.yaml").write_text(
        "models:\n  oracle: {engine: baseline, strategy: oracle}\n"
        "  random: {engine: baseline, strategy: random, seed: 0}\n", encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "WENHENG_CARDS": str(TOY), "DAGSTER_HOME": str(home),
           "WENHENG_LAKE": str(tmp_path / "lake"), "WENHENG_WAREHOUSE": str(tmp_path / "wh.duckdb"),
           "WENHENG_CACHE": str(tmp_path / "cache"), "WENHENG_REPORTS": str(tmp_path / "reports"),
           "WENHENG_HISTORY": str(tmp_path / "history"), "WENHENG_LOGS": str(tmp_path / "logs")}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--sources", str(tmp_path / "sources.yaml"),
                           "--models", str(tmp_path / "models.yaml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _repository_state() -> str:
    """What git sees changed in the checkout (ignored files, such as data/cache, left out)."""
    done = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else "(not a git checkout)"


def test_a_card_folder_runs_through_the_graph_and_nothing_outside_it_changes(tmp_path):
    before = _repository_state()
    done = _run(tmp_path, f"benchmarks:\n  toybench: {{path: {TOY / 'samples'}, version: v1}}\n")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Toy bench - overall" in done.stdout   # the printed leaderboard has the new benchmark (default tables)
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM items WHERE benchmark = 'toybench'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM quarantine WHERE benchmark = 'toybench'").fetchone() == (1,)
    board = dict(con.execute("SELECT model, score FROM leaderboard WHERE benchmark = 'toybench'").fetchall())
    assert con.execute("SELECT count(*) FROM toybench_by_task").fetchone() == (2,)   # a view per table
    assert board["oracle"] == 100.0 and 0 <= board["random"] <= 100
    prompt = con.execute("SELECT messages FROM prompts WHERE item_id = 'toybench/test/pairs/2'").fetchone()[0]
    assert "A. 杜甫\\nB. 李白" in prompt

    assert _repository_state() == before   # the run wrote nothing into the checkout


def test_a_card_folder_brings_its_own_layout_check(tmp_path):
    """The card's `layout` (the jsonl readers' layout) is checked before any stage: one line, exit 2."""
    (tmp_path / "empty").mkdir()
    done = _run(tmp_path, f"benchmarks:\n  toybench: {{path: {tmp_path / 'empty'}, version: v1}}\n")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "holds no toybench file; expected a .jsonl file, or a folder of <split>.jsonl files" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
