"""Resuming after a SIGKILL: a run of the OpenAI engine behind the response cache is killed
part-way; the next run, in a fresh process, sends only the prompts the cache lacks.

The child process is this file run as a script: `python tests/integration/engines/test_resume.py BASE_URL CACHE`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pipeline.engines import Request
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.testing.openai_server import OpenAIServer

N_PROMPTS, N_REPEATS, CONCURRENCY = 60, 12, 8
PROMPTS = [f"第{i}题：解释“{i}”" for i in range(N_PROMPTS)]
SAMPLING = {"temperature": 0.0, "max_tokens": 16}


def _engine(base_url: str) -> OpenAIEngine:
    return OpenAIEngine(model="fake-model", base_url=base_url, api_key_env=None, concurrency=CONCURRENCY,
                        timeout_s=10, max_retries=2)


def _requests(engine: OpenAIEngine) -> list[Request]:
    """72 requests over 60 prompts: the last 12 repeat earlier prompts (same cache key)."""
    prompts = PROMPTS + PROMPTS[::5][:N_REPEATS]
    requests = []
    for prompt in prompts:
        messages = ({"role": "user", "content": prompt},)
        requests.append(Request(cache_key=cache_key("resume-model", engine.identity(), messages, SAMPLING),
                                messages=messages, max_tokens=SAMPLING["max_tokens"]))
    return requests


def _run(base_url: str, cache_path: str) -> None:
    engine = _engine(base_url)
    with ResponseCache(Path(cache_path)) as cache:
        _, stats = run_with_cache(engine, _requests(engine), cache)
    print(json.dumps({"sent": stats.sent, "cache_hits": stats.cache_hits, "errors": stats.errors}), flush=True)


def _spawn(server: OpenAIServer, cache_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, server.base_url, str(cache_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _cached_keys(cache_path: Path) -> set[str]:
    try:
        db = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True, timeout=5)
        try:
            return {row[0] for row in db.execute("SELECT cache_key FROM responses")}
        finally:
            db.close()
    except sqlite3.OperationalError:  # the child has not created the file or table yet
        return set()


def _wait(condition, what: str, child: subprocess.Popen | None = None, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if child is not None and child.poll() is not None:
            raise AssertionError(f"child exited ({child.returncode}) before {what}: {child.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            if child is not None:
                child.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _kill(child: subprocess.Popen) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    child.stderr.close()


def _finish(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def _prompt_by_key(base_url: str) -> dict[str, str]:
    return {r.cache_key: r.messages[0]["content"] for r in _requests(_engine(base_url))}


def test_killed_run_resumes_and_every_prompt_is_answered_exactly_once(tmp_path):
    """The server answers 25 calls and then holds the rest, so the kill lands at a moment when every
    answer sent has been stored and everything else is still at the server: exactly once, strictly."""
    cache_path, answered_before_kill = tmp_path / "responses.sqlite", 25
    with OpenAIServer(latency_s=0.05, hold_after=answered_before_kill) as server:
        first = _spawn(server, cache_path)
        _wait(lambda: len(_cached_keys(cache_path)) == answered_before_kill and server.in_flight == CONCURRENCY,
              "the first run to store 25 answers and wait on the rest", first)
        _kill(first)
        server.hold_after = None
        server.release()   # the held calls now find their client gone: answered to no one, not counted
        _wait(lambda: server.in_flight == 0, "the held calls to end")
        cached = _cached_keys(cache_path)
        assert len(cached) == answered_before_kill and sum(server.successes.values()) == answered_before_kill
        assert sum(server.abandoned.values()) == CONCURRENCY
        after_first = Counter(server.attempts)

        stats = _finish(_spawn(server, cache_path))
        resent = server.attempts - after_first
        prompt_of = _prompt_by_key(server.base_url)
        missing = {prompt_of[k] for k in prompt_of} - {prompt_of[k] for k in cached}
        assert stats == {"sent": N_PROMPTS - len(cached), "cache_hits": sum(
            1 for r in _requests(_engine(server.base_url)) if r.cache_key in cached), "errors": 0}
        assert resent == Counter({p: 1 for p in missing})   # only the missing prompts, each once
        assert server.successes == Counter({p: 1 for p in PROMPTS})   # every prompt answered once in all
        assert len(_cached_keys(cache_path)) == N_PROMPTS


def test_kill_at_an_arbitrary_moment_loses_at_most_the_calls_in_flight(tmp_path):
    """No hold: the kill lands wherever it lands. Stored prompts are never sent again; a call in
    flight at the kill may have been answered but not stored, and only such calls go out twice."""
    cache_path = tmp_path / "responses.sqlite"
    with OpenAIServer(latency_s=0.05) as server:
        first = _spawn(server, cache_path)
        _wait(lambda: len(_cached_keys(cache_path)) >= 20, "the first run to store 20 answers", first)
        _kill(first)
        cached = _cached_keys(cache_path)
        assert 20 <= len(cached) < N_PROMPTS
        time.sleep(0.2)   # let calls in flight at the kill reach their end at the server
        after_first = Counter(server.attempts)

        stats = _finish(_spawn(server, cache_path))
        resent = server.attempts - after_first
        prompt_of = _prompt_by_key(server.base_url)
        stored = {prompt_of[k] for k in cached}
        assert stats["sent"] == N_PROMPTS - len(cached) == sum(resent.values()) and stats["errors"] == 0
        assert not set(resent) & stored and all(n == 1 for n in resent.values())
        assert all(server.successes[p] == 1 for p in stored)
        twice = [p for p in PROMPTS if server.successes[p] == 2]
        assert len(twice) <= CONCURRENCY and all(server.successes[p] >= 1 for p in PROMPTS)
        assert len(_cached_keys(cache_path)) == N_PROMPTS


if __name__ == "__main__":
    _run(*sys.argv[1:3])
