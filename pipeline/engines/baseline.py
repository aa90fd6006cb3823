"""Baselines that need no model: `oracle` answers the gold (a scorer that does not give it 1.0
is broken), `random` picks an option uniformly (chance level; one independent letter per
question when a prompt asks several, `Request.picks`) and, for open items, writes as many
characters as the gold has, each drawn from the characters of its task's golds (their
frequencies): a chance level for generation. Not the gold's own characters shuffled: those
pass length, rhyme-set and tone-count rules far above chance (couplet rules 2 times in 3).

A request carries no gold: the planning code hands the golds over through `use_golds`
(`pipeline.inference.give_golds`), the one hook a real engine does not have. What an answer reads
of the golds is in its cache key (`gold_use`): the oracle's item's gold; for a random open answer,
the gold's length and a digest of its task's pool, so a new gold anywhere in the task is a new key."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.engines import Completion, Request
from pipeline.engines.identity import cache_identity

STRATEGIES = ("oracle", "random")
Pool = tuple[list[str], list[int]]


def gold_use(identity: Mapping[str, Any]) -> str | None:
    """What an engine's answers read of the golds, by its identity: "item" (the oracle: its item's
    gold), "pool" (the random baseline: an open answer's length and its task's golds), or None."""
    if identity.get("reads_gold"):
        return "item"
    if identity.get("engine") == "baseline" and "open_answers" in identity:
        return "pool"
    return None


def gold_pool(golds: Iterable[str | None]) -> Pool:
    """The characters of `golds` with their counts, in a fixed order ("?" when there are none)."""
    ordered = sorted(Counter(ch for gold in golds if gold for ch in gold).items())
    return ([c for c, _ in ordered], [n for _, n in ordered]) if ordered else (["?"], [1])


class BaselineEngine:
    def __init__(self, strategy: str, seed: int = 0):
        if strategy not in STRATEGIES:
            raise ValueError(f"baseline strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.strategy, self.seed = strategy, seed
        self.golds: Mapping[str, str | None] | None = None
        self.tasks: Mapping[str, str] = {}
        self._pools: dict[str, Pool] = {}
        self.prompts_received = 0  # lets tests prove the cache stops prompts from arriving

    KIND = "baseline"
    TRANSPORT = ()

    def identity(self) -> dict[str, Any]:
        """The constructor's parameters, and what the answers depend on besides
        (pipeline/engines/identity.py)."""
        return cache_identity(self)

    def derived_identity(self) -> dict[str, Any]:
        # `reads_gold` puts the gold into the oracle's cache keys (pipeline.inference.plan): its
        # answer depends on the gold, not only on the prompt, and identical prompts with different
        # golds (real duplicates in WenMind and WYWEB) must not share a cached answer.
        identity: dict[str, Any] = {"reads_gold": self.strategy == "oracle"}
        if self.strategy == "random":   # open answers: characters of the task's golds (2: not the gold shuffled)
            identity["open_answers"] = 2   # so their keys hold the gold's length and the task's pool (gold_use)
        return identity

    def use_golds(self, golds: Mapping[str, str | None], tasks: Mapping[str, str] | None = None,
                  pools: Mapping[str, Pool] | None = None) -> None:
        """The gold answer behind each cache key this engine may be asked, its item's task and, per
        task, the pool open answers are drawn from (by default: from the golds handed over)."""
        self.golds = golds
        self.tasks = tasks or {}
        self._pools = dict(pools or {})

    def load(self) -> None:
        pass

    def generate(self, requests: Sequence[Request], on_result=None) -> list[Completion]:
        self.prompts_received += len(requests)
        results = []
        for index, req in enumerate(requests):
            results.append(Completion(text=self._answer(req), finish_reason="stop", tokens_in=0, tokens_out=0,
                                      latency_s=0.0))
            if on_result:
                on_result(index, results[-1])
        return results

    def _gold(self, req: Request) -> str:
        if self.golds is None:
            raise RuntimeError(f"the {self.strategy} baseline answers from the golds: call use_golds() first")
        return self.golds.get(req.cache_key) or ""

    def _answer(self, req: Request) -> str:
        if self.strategy == "oracle":
            return self._gold(req)
        rng = random.Random(f"{self.seed}:{req.cache_key}")
        if req.choices:
            # one independent uniform letter per question asked (CP-DUE AU: three, e.g. "CAB"); for
            # the usual single answer this is exactly one rng.choice, so those draws never move
            return "".join(rng.choice(req.choices) for _ in range(req.picks))
        if req.labels:
            return rng.choice(list(req.labels))
        length = len(self._gold(req))
        if not length:
            return ""
        population, weights = self._pool(self.tasks.get(req.cache_key, ""))
        return "".join(rng.choices(population, weights, k=length))

    def _pool(self, task: str) -> Pool:
        """The characters of the task's golds (of every gold handed over, for a request whose task is
        not known) with their counts, unless the planning code handed the pools over."""
        if task not in self._pools:
            self._pools[task] = gold_pool(gold for key, gold in (self.golds or {}).items()
                                          if not task or self.tasks.get(key, "") == task)
        return self._pools[task]
