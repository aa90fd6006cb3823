"""A step that fails says why in one terminal line: the step, its partition, the exception's class
and the first line of its message (unwrapped from Dagster's errors around it; a dg.Failure by its
description). The full tracebacks go to the run's log file, whose path the run prints once at the
end."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, write_yaml

from pipeline.runner import run_pipeline

SAMPLES = ROOT / "data" / "samples"
SOURCES = f"benchmarks:\n  wenmind: {{path: {SAMPLES / 'wenmind' / 'WenMind_sample.json'}, version: t}}\n"


def test_a_failed_write_is_one_line_with_its_cause_and_the_traceback_is_in_the_log(tmp_path):
    """The lake cannot take the responses (where their folder should be is a file): the write
    fails with NotADirectoryError inside Dagster's output handling."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "responses").write_text("not a folder")
    env = {**os.environ, "WENHENG_LAKE": str(lake), "WENHENG_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
           "WENHENG_CACHE": str(tmp_path / "cache"), "DAGSTER_HOME": str(home),
           "WENHENG_SOURCES": str(write_yaml(tmp_path / "sources.yaml", SOURCES)),
           "WENHENG_MODELS": str(write_yaml(tmp_path / "models.yaml",
                                            "models:\n  oracle: {engine: baseline, strategy: oracle}\n")),
           "WENHENG_CORPORA": str(tmp_path / "corpora.yaml"), "PYTHONUNBUFFERED": "1"}
    env.pop("WENHENG_LIMIT", None)
    env.pop("WENHENG_LOGS", None)
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--no-report"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    terminal = done.stdout + done.stderr
    assert done.returncode == 1, terminal[-3000:]
    failed = [line for line in terminal.splitlines() if "FAILED" in line and "FAILED in" not in line]
    assert failed == ["[wenheng]   FAILED responses [wenmind|oracle]: NotADirectoryError: [Errno 20] Not a directory: "
                      f"'{lake / 'responses' / 'wenmind'}'"], terminal[-3000:]
    assert "Traceback" not in terminal and "Stack Trace" not in terminal
    details = re.findall(r"^wenheng: details: (.+)$", done.stderr, re.MULTILINE)
    assert len(details) == 1, done.stderr
    log = Path(details[0])
    assert log.parent == tmp_path / "logs" and log.suffix == ".log"   # beside the warehouse, named by the run
    assert log.stem in done.stdout   # the run's tag, printed at its start
    text = log.read_text(encoding="utf-8")
    assert "=== responses [wenmind|oracle] failed" in text and "Traceback (most recent call last):" in text
    assert "NotADirectoryError: [Errno 20] Not a directory" in text and "upath_io_manager.py" in text
    assert "The above exception was the direct cause of the following exception:" in text
    assert "DagsterExecutionHandleOutputError" in text   # the wrapper too, below its cause
    assert not list(log.parent.glob("*.json"))   # the run's vLLM logging config is gone with it


def test_a_dg_failure_is_its_description_on_the_failed_line(workdir, monkeypatch):
    """A model the models file does not hold: its first step (model_inputs, what the model reads)
    raises dg.Failure, whose description is the cause (no class name: it is wenheng's own
    sentence)."""
    models = write_yaml(workdir / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")
    monkeypatch.setenv("WENHENG_MODELS", str(models))
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(workdir / "sources.yaml", SOURCES)))
    monkeypatch.setenv("WENHENG_CORPORA", str(workdir / "corpora.yaml"))
    monkeypatch.delenv("WENHENG_LIMIT", raising=False)
    monkeypatch.delenv("WENHENG_LOGS", raising=False)
    lines: list[str] = []
    summary = run_pipeline(["wenmind"], ["ghost"], selection="group:sources or group:items or key:model_inputs",
                           log=lines.append)
    assert not summary.ok
    assert [line for line in lines if "FAILED" in line] == [
        f"  FAILED model_inputs [wenmind|ghost]: model 'ghost' is not in {models}; configured: oracle"]
    assert summary.log_file == workdir / "logs" / f"{summary.run_tag}.log"
    text = summary.log_file.read_text(encoding="utf-8")
    assert "=== model_inputs [wenmind|ghost] failed" in text and "Traceback (most recent call last):" in text
    assert "model 'ghost' is not in" in text and "resources/engines.py" in text
