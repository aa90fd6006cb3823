"""Engines behind one interface: given requests, return completions in the same order.

`run_with_cache` puts the response cache in front of any engine: only prompts whose cache key
is missing are sent, identical prompts are sent once, and each result is stored as it arrives."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pipeline.schema import stable_hash


@dataclass(frozen=True)
class Request:
    cache_key: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float = 0.0
    # Constrained decoding: the answer must be one of these strings (MCQ letters), if set.
    constrain_to: tuple[str, ...] = ()
    # What baselines need to answer; never shown to a real model.
    choices: tuple[str, ...] = ()
    answer: str | None = None
    labels: tuple[str, ...] = ()


@dataclass
class Completion:
    text: str | None
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_s: float | None = None
    error: str | None = None


class Engine(Protocol):
    def identity(self) -> dict[str, Any]:
        """Everything that changes outputs (engine kind, weights, dtype, template use)."""

    def load(self) -> None:
        """Get ready to generate (load weights); called only when something must be sent."""

    def generate(self, requests: Sequence[Request],
                 on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        """One completion per request, same order. Errors are returned, not raised.

        `on_result(index, completion)` is called as each request finishes, so the caller can
        persist it at once: a crash or kill then loses at most the requests still in flight."""


def cache_key(model: str, identity: dict[str, Any], messages: Iterable[dict[str, str]],
              sampling: dict[str, Any]) -> str:
    return stable_hash({"model": model, "engine": identity, "messages": list(messages), "sampling": sampling})


@dataclass
class InferenceStats:
    requested: int = 0
    cache_hits: int = 0
    sent: int = 0
    errors: int = 0
    seconds: float = 0.0
    tokens_out: int = 0


def run_with_cache(engine: Engine, requests: Sequence[Request], cache,
                   log: Callable[[str], None] = lambda _: None) -> tuple[dict[str, Completion], InferenceStats]:
    stats = InferenceStats(requested=len(requests))
    keys = list(dict.fromkeys(r.cache_key for r in requests))
    found = cache.get_many(keys)
    stats.cache_hits = sum(1 for r in requests if r.cache_key in found)
    unique_missing = {r.cache_key: r for r in requests if r.cache_key not in found}
    todo = list(unique_missing.values())
    log(f"{len(requests)} prompts: {stats.cache_hits} from cache, {len(todo)} to send")
    if todo:
        engine.load()  # outside the timing: throughput is about generation, not weight loading

        def persist(index: int, comp: Completion) -> None:
            if not comp.error:  # failures are not cached: the next run retries them
                cache.put(todo[index].cache_key, comp)

        started = time.perf_counter()
        completions = engine.generate(todo, on_result=persist)
        stats.seconds = time.perf_counter() - started
        stats.sent = len(todo)
        for req, comp in zip(todo, completions, strict=True):
            found[req.cache_key] = comp
            stats.tokens_out += comp.tokens_out or 0
            stats.errors += bool(comp.error)
    return found, stats
