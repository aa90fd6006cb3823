"""The response cache, all of it: the key, the store, where it lives, and the policy in front of
an engine (`run_with_cache`).

Key: the model's name, the engine's identity, the messages and the sampling parameters, plus an
optional scope of whatever else an answer depends on (the oracle's gold). Transport settings
(concurrency, timeouts, retries, API keys) stay out: engines leave them out of their identity and
plans leave them out of the sampling, so changing them never invalidates an answer.

Store: one SQLite file (`responses.sqlite` in `paths.cache_dir()`), one row per key, committed as
each answer lands. SQLite (stdlib) rather than DuckDB because inference partitions may run in
several processes at once and must never fight over the warehouse's single writer.

Policy: only keys the store lacks are sent, identical prompts are sent once, every answer is
stored the moment it arrives (a killed run loses at most the calls in flight), errors are
returned but never stored (the next run retries them), and nothing expires."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipeline import paths, stopping
from pipeline.engines import Completion, Engine, Request
from pipeline.progress import Progress
from pipeline.schema import canonical_json, stable_hash

FILE_NAME = "responses.sqlite"
_COLUMNS = ("text", "finish_reason", "tokens_in", "tokens_out", "latency_s", "error")


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


class ResponseCache:
    """The store. A context manager: `with ResponseCache(path) as cache:` closes it on the way out."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # Rows still survive a killed process; only an OS crash could drop the last few. Each
        # answer is stored as it arrives, so a full fsync per row would stall the whole batch.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (cache_key TEXT PRIMARY KEY, text TEXT,"
            " finish_reason TEXT, tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT,"
            " created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))"
        )

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT cache_key, {', '.join(_COLUMNS)} FROM responses WHERE cache_key IN ({marks})", chunk
            ):
                found[row[0]] = Completion(*row[1:])
        return found

    def put(self, key: str, completion: Completion) -> None:
        values = asdict(completion)
        self._db.execute(
            f"INSERT OR REPLACE INTO responses (cache_key, {', '.join(_COLUMNS)}) VALUES (?{', ?' * len(_COLUMNS)})",
            [key, *(values[c] for c in _COLUMNS)],
        )

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_cache(directory: str | Path | None = None) -> ResponseCache:
    """The response cache in `directory` (default: `paths.cache_dir()`), to use in a `with` block."""
    return ResponseCache(cache_file(directory))


@dataclass
class InferenceStats:
    requested: int = 0
    cache_hits: int = 0
    sent: int = 0
    errors: int = 0
    seconds: float = 0.0
    tokens_out: int = 0


def run_with_cache(engine: Engine, requests: Sequence[Request], cache: ResponseCache,
                   log: Callable[[str], None] = lambda _: None,
                   label: str | None = None) -> tuple[dict[str, Completion], InferenceStats]:
    """A completion for every request's key: from the cache where it has one, else from the engine
    (each distinct key sent once, each answer stored as it arrives, errors returned unstored).

    While the engine works, a `pipeline.progress.Progress` line (named `label`, by default the
    engine's model) counts the answers as they arrive; its lines also go to `log`."""
    stats = InferenceStats(requested=len(requests))
    keys = list(dict.fromkeys(r.cache_key for r in requests))
    found = cache.get_many(keys)
    stats.cache_hits = sum(1 for r in requests if r.cache_key in found)
    unique_missing = {r.cache_key: r for r in requests if r.cache_key not in found}
    todo = list(unique_missing.values())
    log(f"{len(requests)} prompts: {stats.cache_hits} from cache, {len(todo)} to send")
    if todo and stopping.stop_requested():
        raise stopping.Stopped(f"stop requested: {len(todo)} prompts left unsent")
    if todo:
        engine.load()  # outside the timing: throughput is about generation, not weight loading
        progress = Progress(len(todo), label or engine_label(engine), log=log)

        def persist(index: int, comp: Completion) -> None:
            if not comp.error:  # failures are not cached: the next run retries them
                cache.put(todo[index].cache_key, comp)
            progress.update(comp)

        started = time.perf_counter()
        try:
            with stopping.stop_on_signals():  # a signal now stops sending; answers in flight are still stored
                completions = engine.generate(todo, on_result=persist)
            stats.seconds = time.perf_counter() - started
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
