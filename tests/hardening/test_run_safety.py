"""`wenheng run` on a bad day, each as a real subprocess against the loopback OpenAI server: two
runs on one data directory, Ctrl-C / SIGTERM and SIGKILL mid-partition, a dead endpoint.

Each run is the leader of a process group of its own, as a command started from a shell is, so
Ctrl-C can be sent the way a terminal sends it: to every process of the group."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT, write_yaml

from pipeline.testing.openai_server import OpenAIServer

SAMPLES = ROOT / "data" / "samples"
CONCURRENCY = 4


def _setup(tmp: Path, base_url: str, benchmarks=("wenmind",), extra: str = "", baseline: bool = False) -> dict:
    home = tmp / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    entries = {"wenmind": "path: " + str(SAMPLES / "wenmind" / "WenMind_sample.json"),
               "aceval": f"path: {SAMPLES / 'aceval'}, evaluate: [dev]"}
    sources = write_yaml(tmp / "sources.yaml", "benchmarks:\n" + "".join(
        f"  {b}: {{{entries[b]}, version: t}}\n" for b in benchmarks))
    models = write_yaml(tmp / "models.yaml", f"""models:
  served:
    engine: openai
    base_url: {base_url}
    model: fake-model
    api_key_env: null
    concurrency: {CONCURRENCY}
{extra}""" + ("  oracle: {engine: baseline, strategy: oracle}\n" if baseline else ""))
    env = {**os.environ, "WENHENG_LAKE": str(tmp / "lake"), "WENHENG_WAREHOUSE": str(tmp / "warehouse.duckdb"),
           "WENHENG_CACHE": str(tmp / "cache"), "DAGSTER_HOME": str(home), "WENHENG_STOP_GRACE_S": "10",
           "WENHENG_SOURCES": str(sources), "WENHENG_MODELS": str(models), "PYTHONUNBUFFERED": "1"}
    return env


def _spawn(env: dict, tmp: Path, name: str) -> subprocess.Popen:
    out = open(tmp / f"{name}.log", "w")
    return subprocess.Popen([sys.executable, "-m", "pipeline.cli", "run"], cwd=ROOT, env=env,
                            stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _log(tmp: Path, name: str) -> str:
    return (tmp / f"{name}.log").read_text()


def _wait(condition, what: str, child: subprocess.Popen | None = None, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if child is not None and child.poll() is not None:
            raise AssertionError(f"the run exited ({child.returncode}) before {what}")
        if time.monotonic() > deadline:
            if child is not None:
                child.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _finish(child: subprocess.Popen, timeout_s: float = 120) -> int:
    try:
        return child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        raise


def _cached(tmp: Path) -> int:
    try:
        with sqlite3.connect(f"file:{tmp / 'cache' / 'responses.sqlite'}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _runs(env: dict) -> list:
    """(job, status, tags) of every run in the instance, oldest first, read in a fresh process's way."""
    import dagster as dg

    old = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with dg.DagsterInstance.get() as instance:
            return [(r.job_name, r.status.value, dict(r.tags)) for r in reversed(instance.get_runs())]
    finally:
        if old is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = old


def test_a_second_run_on_the_same_data_refuses_and_nothing_is_billed_twice(tmp_path):
    with OpenAIServer(latency_s=0.05) as server:
        env = _setup(tmp_path, server.base_url, benchmarks=("wenmind", "aceval"))
        first = _spawn(env, tmp_path, "first")
        _wait(lambda: sum(server.attempts.values()) > 0, "the first run to send", first)
        second = _spawn(env, tmp_path, "second")
        assert _finish(second, 60) != 0
        refusal = _log(tmp_path, "second")
        assert f"pid {first.pid}" in refusal and "started" in refusal and "in use by another wenheng run" in refusal
        assert first.poll() is None, "the refusal came only after the first run had finished"
        assert _finish(first) == 0, _log(tmp_path, "first")[-3000:]
        twice = [p for p, n in server.successes.items() if n > 1]
        assert twice == [] and max(server.attempts.values()) == 1 and len(server.successes) > 20
        # the lock is released with the run: a third run goes ahead (everything from the cache)
        before = sum(server.attempts.values())
        assert _finish(_spawn(env, tmp_path, "third")) == 0 and sum(server.attempts.values()) == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_sending_stores_what_is_in_flight_and_cancels_the_run(tmp_path, signum):
    with OpenAIServer(latency_s=0.5) as server:
        env = _setup(tmp_path, server.base_url, benchmarks=("wenmind", "aceval"))
        run = _spawn(env, tmp_path, "run")
        _wait(lambda: sum(server.successes.values()) >= 2 * CONCURRENCY and server.in_flight == CONCURRENCY,
              "answers to arrive with calls in flight", run)
        sent_at_signal, answered_at_signal = sum(server.attempts.values()), sum(server.successes.values())
        if signum == signal.SIGINT:
            os.killpg(run.pid, signum)   # Ctrl-C: the terminal signals every process of the group
        else:
            os.kill(run.pid, signum)     # `kill PID`: the run alone
        code = _finish(run, 60)
        log = _log(tmp_path, "run")
        assert code == 128 + signum, log[-3000:]
        # one line says so; no traceback from the run, its threads or the processes it started
        assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-3000:]
        sent_after = sum(server.attempts.values()) - sent_at_signal
        assert sent_after <= 1, f"{sent_after} prompts sent after the signal"   # 1: the signal's own race
        _wait(lambda: server.in_flight == 0, "calls in flight to end", timeout_s=10)
        answered = sum(server.successes.values())
        assert _cached(tmp_path) == answered   # every answer that reached the client is stored
        assert answered >= answered_at_signal + CONCURRENCY   # the calls in flight were waited for
        assert f"stopped by {signal.Signals(signum).name}" in log and "publish" not in log
        assert "evaluate: aceval" not in log   # no further partition
        assert not (tmp_path / "warehouse.duckdb").exists()
        runs = _runs(env)
        # a prepare run per benchmark (wenmind, aceval), then the stopped partition (contamination runs
        # with the publish, which a stop leaves out)
        assert [(job, status) for job, status, _ in runs] == [("prepare", "SUCCESS")] * 2 + [("evaluate", "CANCELED")]
        stored = set(server.successes)
        before = Counter(server.attempts)
        server.latency_s = 0.0
        assert _finish(_spawn(env, tmp_path, "resume")) == 0, _log(tmp_path, "resume")[-3000:]
        resent = server.attempts - before
        assert not set(resent) & stored    # 0 re-sends of stored answers
        print(f"\n{signal.Signals(signum).name}: {sent_after} sent after the signal, {answered} answers stored, "
              f"{len(set(resent) & stored)} re-sent on resume, {sum(resent.values())} sent on resume")
        assert all(n == 1 for n in server.successes.values())


def test_after_a_sigkill_the_next_run_marks_the_dead_run_failed_and_resumes(tmp_path):
    with OpenAIServer(latency_s=0.3) as server:
        env = _setup(tmp_path, server.base_url)
        run = _spawn(env, tmp_path, "killed")
        _wait(lambda: _cached(tmp_path) >= CONCURRENCY, "answers to be stored", run)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        assert [s for job, s, _ in _runs(env) if job == "evaluate"] == ["STARTED"]
        time.sleep(0.6)   # calls in flight at the kill end at the server
        stored, before = _cached(tmp_path), Counter(server.attempts)
        server.latency_s = 0.0
        assert _finish(_spawn(env, tmp_path, "next")) == 0, _log(tmp_path, "next")[-3000:]
        assert "marked failed" in _log(tmp_path, "next")
        runs = _runs(env)
        # wenmind's prepare run, then the killed partition
        assert [(job, s) for job, s, _ in runs][:2] == [("prepare", "SUCCESS"), ("evaluate", "FAILURE")]
        assert all(s == "SUCCESS" for _, s, _ in runs[2:])
        resent = server.attempts - before
        assert sum(resent.values()) == len(server.attempts) - stored   # only what the cache lacked


def test_a_dead_endpoint_fails_loudly_and_publishes_nothing_of_that_partition(tmp_path):
    with socket.socket() as s:   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _setup(tmp_path, f"http://127.0.0.1:{port}/v1", benchmarks=("aceval",),
                 extra="    max_retries: 0\n    timeout_s: 2\n", baseline=True)
    started = time.monotonic()
    run = _spawn(env, tmp_path, "dead")
    code = _finish(run, 120)
    log = _log(tmp_path, "dead")
    assert code == 1, log[-3000:]
    assert time.monotonic() - started < 100
    assert "responses [aceval|served]:" in log and "prompts failed (100%" in log and "APIConnectionError" in log
    assert "FAILED in" in log and "done in" not in log
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        per_model = dict(con.execute("SELECT model, count(*) FROM responses GROUP BY 1").fetchall())
        assert "served" not in per_model and per_model.get("oracle", 0) > 0
        assert con.execute("SELECT count(*) FROM scores WHERE model = 'served'").fetchone()[0] == 0
    assert not list((tmp_path / "lake" / "responses").glob("*served*"))
