"""The terminal is not the run: a reader that goes away (`wenheng run | head -1`) and a terminal
that cannot encode Chinese (PYTHONIOENCODING=ascii) change what is shown, never what is built.
Real subprocesses on the bundled WYWEB sample, with the oracle baseline (no model to load)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import ROOT, write_yaml


def _env(tmp: Path) -> dict:
    home = tmp / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    sources = write_yaml(tmp / "sources.yaml", "benchmarks:\n  wyweb: {path: "
                         f"{ROOT / 'data' / 'samples' / 'wyweb'}, version: t}}\n")
    models = write_yaml(tmp / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")
    return {**os.environ, "WENHENG_LAKE": str(tmp / "lake"), "WENHENG_WAREHOUSE": str(tmp / "warehouse.duckdb"),
            "WENHENG_CACHE": str(tmp / "cache"), "WENHENG_LOGS": str(tmp / "logs"), "DAGSTER_HOME": str(home),
            "WENHENG_SOURCES": str(sources), "WENHENG_MODELS": str(models), "PYTHONUNBUFFERED": "1"}


def _wenheng(*args: str) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", *args]


def test_a_reader_that_goes_away_does_not_stop_the_run(tmp_path):
    env = _env(tmp_path)
    run = subprocess.Popen(_wenheng("run", "--no-report"), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    first = run.stdout.readline()
    run.stdout.close()   # as `head -1` does
    _, stderr = run.communicate(timeout=300)
    assert first.startswith("[wenheng] run ")
    assert run.returncode == 0, stderr
    assert "Traceback" not in stderr
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from scores").fetchone()[0] > 0
    [log] = (tmp_path / "logs").glob("*.log")
    assert "[wenheng] done in " in log.read_text(encoding="utf-8")   # what the reader missed is in the run's log


def test_a_terminal_that_cannot_encode_chinese_gets_replacements_not_a_traceback(tmp_path):
    env = {**_env(tmp_path), "PYTHONIOENCODING": "ascii"}
    run = subprocess.run(_wenheng("run", "--no-report"), cwd=ROOT, env=env, capture_output=True, timeout=300)
    assert run.returncode == 0 and b"Traceback" not in run.stderr, run.stderr[-2000:]
    shown = subprocess.run(_wenheng("leaderboard"), cwd=ROOT, env=env, capture_output=True, timeout=120)
    assert shown.returncode == 0 and shown.stderr == b"", shown.stderr[-2000:]
    assert b"Leaderboard" in shown.stdout and b"?" in shown.stdout
    shown.stdout.decode("ascii")   # nothing but ASCII reached the terminal
