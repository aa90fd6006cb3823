"""`wenheng` as a user runs it (a subprocess): every mistake is one line on stderr and a non-zero
exit, never a traceback; a run filtered by benchmark and limited to a few items ends with the
partition table, the leaderboard and the report's path."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, write_yaml

SAMPLES = ROOT / "data" / "samples"
MODELS = ("models:\n  random: {engine: baseline, strategy: random, seed: 0}\n"
          "  oracle: {engine: baseline, strategy: oracle}\n")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    sources = write_yaml(tmp_path / "sources.yaml", (
        "benchmarks:\n"
        f"  wenmind: {{path: {SAMPLES / 'wenmind' / 'WenMind_sample.json'}, version: t}}\n"
        f"  aceval: {{path: {SAMPLES / 'aceval'}, version: t, evaluate: [dev]}}\n"))
    models = write_yaml(tmp_path / "models.yaml", MODELS)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "WENHENG_LAKE": str(tmp_path / "lake"), "WENHENG_WAREHOUSE": str(tmp_path / "wh.duckdb"),
            "WENHENG_CACHE": str(tmp_path / "cache"), "DAGSTER_HOME": str(home), "WENHENG_SOURCES": str(sources),
            "WENHENG_MODELS": str(models), "PYTHONUNBUFFERED": "1"}


def wenheng(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in env.items() if k != "WENHENG_LIMIT"}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=timeout)


MISTAKES = [
    (["run", "--benchmark", "nosuch"], 2, "wenheng: unknown benchmark 'nosuch'; known: wenmind, aceval, "),
    (["run", "--benchmark", "aceval", "--benchmark", "fuxi"], 2, "wenheng: benchmark fuxi is not configured in "),
    (["run", "--model", "nosuch"], 2, "wenheng: unknown models ['nosuch']; configured: random, oracle"),
    (["run", "--limit", "0"], 2, "wenheng run: argument --limit: expected a positive whole number, got '0'"),
    (["run", "--sources", "missing.yaml"], 2, "wenheng: "),
    (["frobnicate"], 2, "wenheng: argument COMMAND: invalid choice: 'frobnicate'"),
    (["query", "SELECT 1"], 2, "wenheng: no warehouse at "),
    (["query", "--timeout", "0", "SELECT 1"], 2, "wenheng query: argument --timeout: expected a number of seconds"),
    (["leaderboard"], 2, "wenheng: no warehouse at "),
    (["leaderboard", "nosuch"], 2, "wenheng: unknown benchmark 'nosuch'"),
    (["tasks", "nosuch"], 2, "wenheng: unknown benchmark 'nosuch'"),
    (["models", "--models", "missing.yaml"], 2, "wenheng: "),
    (["report"], 2, "wenheng: no warehouse at "),
    (["diff", "nosuch", "--from", "a", "--to", "b"], 2, "wenheng: unknown benchmark 'nosuch'"),
    (["diff", "wenmind", "--from", "a"], 2, "wenheng diff: the following arguments are required: --to"),
    (["submission", "wenmind", "--model", "oracle", "-o", "out.json"], 2, "wenheng: WenMind has no submission format"),
]


@pytest.mark.parametrize(("args", "code", "start"), MISTAKES, ids=[" ".join(m[0]) for m in MISTAKES])
def test_a_mistake_is_one_line_and_a_non_zero_exit(env, tmp_path, args, code, start):
    done = wenheng(env, *args)
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "lake").exists()   # nothing ran


def test_a_limited_run_of_one_benchmark_then_tasks_models_query_and_report(env, tmp_path):
    done = wenheng(env, "run", "--benchmark", "aceval", "--limit", "4", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert "\r" not in out and "\x1b" not in out   # not a terminal: plain lines only
    assert "[wenheng] at most 4 items per benchmark (--limit / $WENHENG_LIMIT)" in done.stdout
    # the progress line of each partition, named for it, when it ends
    assert re.search(r"^aceval x random: 4/4 answered in \S+ s, [\d,.]+ calls/s, 0 errors$", out, re.M), out
    # the table: one row per requested partition, none for the benchmark not asked for
    rows = [re.split(r"\s{2,}", line) for line in done.stdout.splitlines() if line.startswith(("aceval ", "wenmind "))]
    assert [r[:6] for r in rows] == [["aceval", "random", "4", "4", "0", "0"], ["aceval", "oracle", "4", "4", "0", "0"]]
    assert "AC-EVAL - Tables 3-6: Average" in done.stdout and "WenMind - " not in done.stdout
    page = Path(re.search(r"^report: (\S+)$", done.stdout, re.M).group(1))
    assert page.is_file() and page.parent.parent == tmp_path / "reports"
    assert re.fullmatch(r"\d{8}-\d{6}.*", page.parent.name)
    results = json.loads((page.parent / "results.json").read_text(encoding="utf-8"))
    assert results["limit"] == 4 and results["run"]["benchmarks"] == ["aceval"]
    assert results["run"]["command"] == "wenheng run --benchmark aceval --limit 4"

    tasks = wenheng(env, "tasks", "aceval")
    assert tasks.returncode == 0, tasks.stderr
    header, *task_rows = [re.split(r"\s{2,}", line) for line in tasks.stdout.splitlines()]
    assert header == ["benchmark", "task", "format", "scorer", "eval split", "items"]
    assert task_rows and all(r[0] == "aceval" and r[4] == "dev" and r[3] for r in task_rows)
    items = wenheng(env, "query", "SELECT count(*) AS n FROM items WHERE benchmark = 'aceval' AND split = 'dev'")
    assert sum(int(r[5]) for r in task_rows) == int(items.stdout.split()[-1])

    models = wenheng(env, "models")
    assert models.returncode == 0 and re.search(r"^oracle\s+baseline\s+strategy=oracle", models.stdout, re.M)

    bad = wenheng(env, "query", "SELEC oops")
    assert bad.returncode == 1 and bad.stderr.startswith("wenheng: query failed: ") and len(bad.stderr.splitlines()) == 1

    again = wenheng(env, "report", "--out", str(tmp_path / "again"))
    assert again.returncode == 0 and again.stdout.strip() == f"wrote {tmp_path / 'again' / 'index.html'}"

    # queries that used to end in a traceback or hang: one line, a non-zero exit, a time limit
    for sql, start in [("", "wenheng: no SQL given"), ("  -- only a comment\n", "wenheng: the SQL holds no statement"),
                       (str(tmp_path / "missing.sql"), "wenheng: no SQL file at ")]:
        done = wenheng(env, "query", sql)
        assert done.returncode == 2 and done.stderr.startswith(start), (sql, done.stderr)
        assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    started = time.monotonic()
    slow = wenheng(env, "query", "--timeout", "1", "SELECT count(*) FROM range(100000000000)")
    assert slow.returncode == 1 and slow.stderr.startswith("wenheng: query stopped after 1 s"), slow.stderr
    assert time.monotonic() - started < 30
    # a reader that stops early (| head -1): no "Broken pipe", exit 0
    piped = subprocess.run(["bash", "-c", f"'{sys.executable}' -m pipeline.cli query "
                            "\"SELECT repeat('x', 1000) AS x FROM range(200)\" | head -1; exit ${PIPESTATUS[0]}"],
                           cwd=ROOT, env={k: v for k, v in env.items() if k != "WENHENG_LIMIT"},
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
