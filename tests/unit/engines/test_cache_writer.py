"""Answers written off the engine's thread: batched commits, each answer committed within 50 ms or
at once when the batch is full, and everything answered committed however the run ends."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from datetime import UTC, datetime

import pytest

from pipeline import stopping
from pipeline.engines import Completion, Request
from pipeline.engines import cache as cache_module
from pipeline.engines.cache import AnswerWriter, ResponseCache, cache_key, run_with_cache


def _requests(n: int) -> list[Request]:
    return [Request(cache_key=cache_key("m", {"engine": "test"}, [{"role": "user", "content": f"问{i}"}], {}),
                    messages=({"role": "user", "content": f"问{i}"},), max_tokens=8) for i in range(n)]


def _stored(path) -> dict[str, str]:
    """What another process sees: committed rows only."""
    db = sqlite3.connect(path, timeout=5)
    try:
        return dict(db.execute("SELECT cache_key, text FROM responses"))
    finally:
        db.close()


def _until(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


class _Scripted:
    """Answers the first `answered` requests, then runs `then(requests)` inside generate."""

    def __init__(self, answered: int, then=None, concurrency: int | None = None):
        self.answered, self.then = answered, then
        if concurrency is not None:
            self.concurrency = concurrency

    def identity(self):
        return {"engine": "scripted"}

    def load(self):
        pass

    def generate(self, requests, on_result=None):
        results = []
        for index in range(self.answered):
            results.append(Completion(text=f"答{index}", finish_reason="stop", tokens_in=3, tokens_out=2,
                                      latency_s=0.01))
            on_result(index, results[-1])
        if self.then is not None:
            self.then(requests)
        for index in range(self.answered, len(requests)):
            results.append(Completion(text=None, error="Stopped: not sent"))
            on_result(index, results[-1])
        return results


def test_answers_are_committed_within_the_batch_interval_while_the_engine_still_works(tmp_path):
    path = tmp_path / "c.sqlite"
    seen: dict[str, str] = {}

    def wait_for_commit(requests):
        assert _until(lambda: len(_stored(path)) == 3), "3 answers not committed while the engine worked"
        seen.update(_stored(path))

    requests = _requests(5)
    with ResponseCache(path) as cache:
        found, stats = run_with_cache(_Scripted(3, wait_for_commit), requests, cache)
    assert seen == {r.cache_key: f"答{i}" for i, r in enumerate(requests[:3])}
    assert stats.errors == 2 and found[requests[4].cache_key].error
    assert _stored(path) == seen            # errors never stored


def test_rows_are_the_completions_fields(tmp_path):
    completion = Completion(text="答", finish_reason="length", tokens_in=7, tokens_out=2, latency_s=0.25)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with cache.writer() as writer:
            writer.put("k", completion)
        assert cache.get_many(["k"]) == {"k": completion}


def test_the_writer_stamps_created_at_as_the_column_default_does(tmp_path):
    """The writer binds one created_at per batch instead of the column's per-row default: the
    same format (UTC, milliseconds), so rows from `put` and from the writer read alike."""
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("by-put", Completion(text="答"))
        with cache.writer() as writer:
            writer.put("by-writer", Completion(text="答"))
    db = sqlite3.connect(path)
    try:
        stamps = dict(db.execute("SELECT cache_key, created_at FROM responses"))
    finally:
        db.close()
    pattern = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert all(re.fullmatch(pattern, stamp) for stamp in stamps.values()), stamps
    assert abs(_seconds(stamps["by-writer"]) - _seconds(stamps["by-put"])) < 5


def _seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def test_a_full_batch_is_committed_at_once_and_the_rest_on_close(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "COMMIT_EVERY_S", 60.0)   # only a full batch, or close(), commits
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        writer = cache.writer(max_pending=4)
        for i in range(4):
            writer.put(f"k{i}", Completion(text=str(i)))
        assert _until(lambda: len(_stored(path)) == 4)
        writer.put("k4", Completion(text="4"))
        time.sleep(0.2)
        assert len(_stored(path)) == 4      # one row waiting for its batch
        writer.close()
        assert len(_stored(path)) == 5 and writer.committed == 5
        writer.close()                      # idempotent
        with pytest.raises(RuntimeError, match="closed"):
            writer.put("k5", Completion(text="5"))


def test_closing_the_cache_commits_what_its_writers_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "COMMIT_EVERY_S", 60.0)
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.writer(max_pending=100).put("k", Completion(text="答"))
    assert _stored(path) == {"k": "答"}


def test_run_with_cache_bounds_the_batch_by_the_engines_concurrency(tmp_path, monkeypatch):
    """A batch is committed once it holds the engine's concurrency in answers (what a kill can
    lose on top of the calls in flight)."""
    monkeypatch.setattr(cache_module, "COMMIT_EVERY_S", 60.0)   # only a full batch commits
    path = tmp_path / "c.sqlite"
    waiting: list[int] = []

    class Engine(_Scripted):
        def generate(self, requests, on_result=None):
            for index in range(len(requests)):
                on_result(index, Completion(text=f"答{index}"))
                if index == 2:              # the third answer fills the batch
                    assert _until(lambda: len(_stored(path)) == 3)
            time.sleep(0.2)
            waiting.append(len(requests) - len(_stored(path)))
            return [Completion(text=f"答{index}") for index in range(len(requests))]

    with ResponseCache(path) as cache:
        run_with_cache(Engine(0, concurrency=3), _requests(5), cache)
    assert waiting == [2] and len(_stored(path)) == 5


def test_an_interrupt_mid_run_still_commits_every_answer(tmp_path, monkeypatch):
    """Ctrl-C outside `wenheng run` (a KeyboardInterrupt through the engine): what was answered is kept."""
    monkeypatch.setattr(cache_module, "COMMIT_EVERY_S", 60.0)

    def interrupt(_):
        raise KeyboardInterrupt

    path = tmp_path / "c.sqlite"
    requests = _requests(6)
    with ResponseCache(path) as cache, pytest.raises(KeyboardInterrupt):
        run_with_cache(_Scripted(4, interrupt), requests, cache)
    assert set(_stored(path)) == {r.cache_key for r in requests[:4]}


def test_a_stop_request_commits_what_was_answered_before_stopping(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "COMMIT_EVERY_S", 60.0)
    path = tmp_path / "c.sqlite"
    requests = _requests(5)
    try:
        with ResponseCache(path) as cache, pytest.raises(stopping.Stopped, match="2 answers stored"):
            run_with_cache(_Scripted(2, lambda _: stopping.request_stop()), requests, cache)
    finally:
        stopping.reset()
    assert set(_stored(path)) == {r.cache_key for r in requests[:2]}


def test_a_failing_writer_fails_the_run(tmp_path):
    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).close()           # a database with no responses table
    writer = AnswerWriter(path, max_pending=1)
    writer.put("k", Completion(text="答"))
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        writer.close()
    with pytest.raises(sqlite3.OperationalError):
        writer.put("k2", Completion(text="答"))


def test_a_held_up_writer_holds_up_put_once_max_pending_rows_wait(tmp_path):
    """Another process holds the write lock: the writer waits for it with its batch, and puts wait
    once `max_pending` more rows are waiting, so no more than twice that are ever uncommitted."""
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")    # the write lock, held
        writer = cache.writer(max_pending=2)
        for i in range(4):                  # a batch of 2 taken by the writer, 2 more waiting
            writer.put(f"k{i}", Completion(text=str(i)))
        done = threading.Event()
        late = threading.Thread(target=lambda: (writer.put("k4", Completion(text="4")), done.set()))
        late.start()
        assert not done.wait(0.3)           # the fifth waits for room
        other.execute("ROLLBACK")
        other.close()
        assert done.wait(5)
        late.join()
        writer.close()
        assert len(_stored(path)) == 5
