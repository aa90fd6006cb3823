"""The response cache, all of it: the key, the store, where it lives, and the policy in front of
an engine (`run_with_cache`).

Key: the model's name, the engine's identity, the messages and the sampling parameters, plus an
optional scope of whatever else an answer depends on (the oracle's gold). Transport settings
(concurrency, timeouts, retries, API keys) stay out: engines leave them out of their identity and
plans leave them out of the sampling, so changing them never invalidates an answer.

Store: one SQLite file (`responses.sqlite` in `paths.cache_dir()`), WAL journal, one row per key.
SQLite (stdlib) rather than DuckDB because inference partitions may run in several processes at
once and must never fight over the warehouse's single writer. While an engine works, answers are
written off its thread (`AnswerWriter`): a writer thread commits them in batches, each answer
within `COMMIT_EVERY_S` (50 ms) of landing, and at once when `max_pending` are waiting. One
autocommit INSERT per answer on the event loop's thread cost as much CPU as a third of the
engine's own work per call (perf/cache_write.py).

Policy: only keys the store lacks are sent, identical prompts are sent once, every answer is
stored as it arrives, errors are returned but never stored (the next run retries them), and
nothing expires. A killed run (`kill -9`) loses, and the next run sends again, the answers to
the calls in flight (at most the engine's concurrency) and the answers not yet committed: in
practice those of the last 50 ms, and never more than 2 x `max_pending` (`AnswerWriter`), which
`run_with_cache` sets to the engine's concurrency (64 for an engine without one). So a kill
re-sends about the concurrency plus 50 ms of answers, and at most three times the concurrency.
A stop request (Ctrl-C, SIGTERM; `pipeline.stopping`) or an exception ends the engine's work
first and then commits everything answered."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import paths, stopping
from pipeline.engines import Completion, Engine, Request
from pipeline.progress import Progress
from pipeline.schema import canonical_json, stable_hash

FILE_NAME = "responses.sqlite"
_COLUMNS = ("text", "finish_reason", "tokens_in", "tokens_out", "latency_s", "error", "logprobs")
_INSERT = (f"INSERT OR REPLACE INTO responses (cache_key, {', '.join(_COLUMNS)})"
           f" VALUES (?{', ?' * len(_COLUMNS)})")
# The writer's rows carry created_at, one stamp per batch: the column's default formats one per
# row (strftime), about 7% of SQLite's work per row.
_INSERT_STAMPED = (f"INSERT OR REPLACE INTO responses (cache_key, {', '.join(_COLUMNS)}, created_at, model)"
                   f" VALUES (?{', ?' * (len(_COLUMNS) + 2)})")
COMMIT_EVERY_S = 0.05     # an answer waits at most this long (plus the commit) to be committed
DEFAULT_MAX_PENDING = 64  # answers waiting to be committed, for engines with no `concurrency`


def cache_key(model: str, identity: dict[str, Any], messages: Iterable[dict[str, str]],
              sampling: dict[str, Any], scope: dict[str, Any] | None = None) -> str:
    """The key of one prompt to one model. `scope` holds what else the answer depends on beyond
    the prompt (the oracle's gold); an empty scope leaves the key as if there were none."""
    parts = {"model": model, "engine": identity, "messages": list(messages), "sampling": sampling}
    if scope:
        parts["scope"] = scope
    return stable_hash(parts)


def key_maker(model: str, identity: dict[str, Any]) -> Callable[..., str]:
    """`cache_key` bound to one model and engine, for the many prompts of a partition: the same
    keys, with the parts they share encoded once. The canonical form sorts the top-level keys, so
    the hashed text is `{"engine":…,"messages":…,"model":…,"sampling":…[,"scope":…]}`."""
    head = '{"engine":' + canonical_json(identity) + ',"messages":'
    middle = ',"model":' + canonical_json(model) + ',"sampling":'

    def key(messages: Iterable[dict[str, str]], sampling: dict[str, Any], scope: dict[str, Any] | None = None) -> str:
        tail = ',"scope":' + canonical_json(scope) + "}" if scope else "}"
        blob = head + canonical_json(list(messages)) + middle + canonical_json(sampling) + tail
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    return key


def cache_file(directory: str | Path | None = None) -> Path:
    """The cache's file in `directory`; by default in `paths.cache_dir()` (WENHENG_CACHE)."""
    return Path(directory or paths.cache_dir()) / FILE_NAME


class CacheUnreadable(OSError):
    """The cache's file is not an SQLite database wenheng can use (truncated, overwritten, another
    program's file): one line naming the file and what to do."""

    def __init__(self, path: Path, exc: BaseException):
        super().__init__(f"the response cache {path} cannot be read ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}); move it aside or delete it, and the next run "
                         "asks the models again")


def cache_problem(path: Path) -> str | None:
    """Why the cache file at `path` cannot be used, or None (also when it does not exist yet): read
    before any stage by `wenheng run`, so a corrupt file is one line naming it."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return str(CacheUnreadable(path, exc))
    return None


class ResponseCache:
    """The store. A context manager: `with ResponseCache(path) as cache:` closes it on the way out
    (committing first whatever its open writers still hold)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:   # "file is not a database": the file is named
            self._db.close()
            raise CacheUnreadable(path, exc) from None
        # Rows still survive a killed process; only an OS crash could drop the last few
        # transactions: a full fsync per commit would stall the writer for nothing a kill can lose.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (cache_key TEXT PRIMARY KEY, text TEXT,"
            " finish_reason TEXT, tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT,"
            " created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), model TEXT)"
        )
        # which model answered (`wenheng cache info / prune`): a file from before the column has it added,
        # its older rows without one
        # and a log-likelihood answer's numbers (JSON list): a file from before the column gets it
        present = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        for column in ("model", "logprobs"):
            if column not in present:
                self._db.execute(f"ALTER TABLE responses ADD COLUMN {column} TEXT")
        self._writers: set[AnswerWriter] = set()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """SQL on the cache's own connection (pipeline/engines/cache_admin.py sizes and prunes it)."""
        return self._db.execute(sql, params)

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT cache_key, {', '.join(_COLUMNS)}, created_at FROM responses WHERE cache_key IN ({marks})",
                chunk
            ):
                found[row[0]] = Completion(*row[1:7], logprobs=_logprobs(row[7]), created_at=row[8])
        return found

    def put(self, key: str, completion: Completion) -> None:
        """Store one answer, committed before this returns (for the many of a run: `writer`)."""
        self._db.execute(_INSERT, _row(key, completion))

    def writer(self, max_pending: int = DEFAULT_MAX_PENDING, model: str | None = None) -> AnswerWriter:
        """A writer thread for the answers of one engine run (of `model`, recorded on each row);
        `close()` it (or use it in a `with` block) to commit the rest. Closing the cache closes
        its writers first."""
        writer = AnswerWriter(self.path, max_pending, on_close=self._writers.discard, model=model)
        self._writers.add(writer)
        return writer

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        try:
            for writer in list(self._writers):
                writer.close()
        finally:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _row(key: str, c: Completion) -> tuple:
    """One answer's row in `_INSERT`'s order, field by field (`dataclasses.asdict` deep-copies)."""
    numbers = None if c.logprobs is None else json.dumps(list(c.logprobs))
    return key, c.text, c.finish_reason, c.tokens_in, c.tokens_out, c.latency_s, c.error, numbers


def _logprobs(stored: str | None) -> tuple[float, ...] | None:
    """The logprobs column back as numbers (JSON keeps a float's every digit)."""
    return None if stored is None else tuple(float(x) for x in json.loads(stored))


def _utc_stamp() -> str:
    """Now as the created_at column's default writes it: 2025-01-31T12:34:56.789Z."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


class AnswerWriter:
    """Stores answers off the caller's thread. `put` only appends the row to a list; a writer
    thread, with a connection of its own, commits the list as one transaction `COMMIT_EVERY_S`
    after its first row came, or as soon as it holds `max_pending` rows, whichever is first. A
    `put` that finds `max_pending` rows still waiting (the writer held up by a slow disk or
    another process's lock) waits for the writer to take them. So at most 2 x `max_pending`
    answers are ever received but not committed (those waiting, and the batch being committed),
    in practice those of the last 50 ms. `close()` commits the rest and ends the thread; an error
    of the writer (a full disk, a lock held past SQLite's 60 s timeout) is raised by the next
    `put` or by `close()`."""

    def __init__(self, path: Path, max_pending: int = DEFAULT_MAX_PENDING,
                 on_close: Callable[[AnswerWriter], None] | None = None, model: str | None = None):
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self.path, self.max_pending, self.model = path, max_pending, model
        self.committed = 0                   # rows committed so far
        self._rows: list[tuple] = []         # received, not yet taken by the writer thread
        self._lock = threading.Lock()
        self._taken = threading.Condition(self._lock)   # notified as the writer takes the rows
        self._arrived = threading.Event()    # set by the first row of a batch
        self._full = threading.Event()       # set at max_pending rows, and by close()
        self._closing = False
        self._error: BaseException | None = None
        self._on_close = on_close
        self._thread = threading.Thread(target=self._run, name="wenheng-cache-writer", daemon=True)
        self._thread.start()

    def put(self, key: str, completion: Completion) -> None:
        if self._error is not None:
            raise self._error
        if self._closing:
            raise RuntimeError("the cache writer is closed")
        row = _row(key, completion)
        with self._lock:
            while len(self._rows) >= self.max_pending and self._error is None:
                self._taken.wait(0.5)
            if self._error is not None:
                raise self._error
            self._rows.append(row)
            pending = len(self._rows)
        if pending == 1:
            self._arrived.set()
        if pending >= self.max_pending:
            self._full.set()

    def close(self) -> None:
        """Commit every row put so far, then end the writer thread. Idempotent."""
        if not self._closing:
            self._closing = True
            self._full.set()
            self._arrived.set()
            self._thread.join()
            if self._on_close is not None:
                self._on_close(self)
        if self._error is not None:
            raise self._error

    def __enter__(self) -> AnswerWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            try:
                db.execute("PRAGMA synchronous=NORMAL")
                while True:
                    self._arrived.wait()
                    self._full.wait(COMMIT_EVERY_S)
                    closing = self._closing   # read before taking the rows: none can follow them
                    with self._lock:
                        rows, self._rows = self._rows, []
                        self._arrived.clear()
                        self._full.clear()
                        self._taken.notify_all()
                    if rows:
                        stamp = (_utc_stamp(), self.model)
                        db.execute("BEGIN")
                        db.executemany(_INSERT_STAMPED, [row + stamp for row in rows])
                        db.execute("COMMIT")
                        self.committed += len(rows)
                    if closing:
                        return
            finally:
                db.close()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread, by put or close
            with self._lock:
                self._error = exc
                self._taken.notify_all()


def open_cache(directory: str | Path | None = None) -> ResponseCache:
    """The response cache in `directory` (default: `paths.cache_dir()`), to use in a `with` block."""
    return ResponseCache(cache_file(directory))


@dataclass
class InferenceStats:
    requested: int = 0
    cache_hits: int = 0
    collapsed: int = 0   # prompts identical to another one of the run (the same key): asked once
    sent: int = 0
    errors: int = 0
    seconds: float = 0.0
    tokens_out: int = 0


def run_with_cache(engine: Engine, requests: Sequence[Request], cache: ResponseCache,
                   log: Callable[[str], None] = lambda _: None, label: str | None = None,
                   model: str | None = None) -> tuple[dict[str, Completion], InferenceStats]:
    """A completion for every request's key: from the cache where it has one, else from the engine
    (each distinct key sent once, each answer stored as it arrives, errors returned unstored).
    Every answer is committed by the time this returns or raises.

    While the engine works, a `pipeline.progress.Progress` line (named `label`, by default the
    engine's model) counts the answers as they arrive; its lines also go to `log`."""
    stats = InferenceStats(requested=len(requests))
    keys = list(dict.fromkeys(r.cache_key for r in requests))
    found = cache.get_many(keys)
    stats.cache_hits = sum(1 for r in requests if r.cache_key in found)
    unique_missing = {r.cache_key: r for r in requests if r.cache_key not in found}
    todo = list(unique_missing.values())
    stats.collapsed = len(requests) - stats.cache_hits - len(todo)
    log(f"{len(requests)} prompts: {stats.cache_hits} from cache, {len(todo)} to send"
        + (f", {stats.collapsed} identical to another (asked once)" if stats.collapsed else ""))
    if todo and stopping.stop_requested():
        raise stopping.Stopped(f"stop requested: {len(todo)} prompts left unsent")
    if todo:
        engine.load()  # outside the timing: throughput is about generation, not weight loading
        progress = Progress(len(todo), label or engine_label(engine), log=log)
        # Batches bounded by the concurrency: what a kill can lose (the module's docstring).
        writer = cache.writer(getattr(engine, "concurrency", None) or DEFAULT_MAX_PENDING, model=model)

        def persist(index: int, comp: Completion) -> None:
            if not comp.error:  # failures are not cached: the next run retries them
                writer.put(todo[index].cache_key, comp)
            progress.update(comp)

        started = time.perf_counter()
        try:
            try:
                with stopping.stop_on_signals():  # a signal now stops sending; answers in flight are still stored
                    completions = engine.generate(todo, on_result=persist)
                stats.seconds = time.perf_counter() - started
            finally:
                writer.close()  # whatever ended the work (a stop, an exception), every answer is committed
        finally:
            progress.close()  # outside the timing: its last line may go to Dagster's event log
        if stopping.stop_requested():
            stored = sum(1 for comp in completions if not comp.error)
            raise stopping.Stopped(f"stop requested: {stored} answers stored, "
                                   f"{len(todo) - stored} prompts left for the next run")
        stats.sent = len(todo)
        for req, comp in zip(todo, completions, strict=True):
            found[req.cache_key] = comp
            stats.tokens_out += comp.tokens_out or 0
            stats.errors += bool(comp.error)
    return found, stats


def engine_label(engine: Engine) -> str:
    """A short name for progress lines: the engine kind and its model (or baseline strategy)."""
    identity = engine.identity()
    name = identity.get("model") or identity.get("strategy")
    return f"{identity.get('engine', 'engine')} {name}" if name else str(identity.get("engine", "engine"))
