"""Baselines that need no model: `oracle` answers the gold (a scorer that does not give it 1.0
is broken), `random` picks an option uniformly (chance level; one independent letter per
question when a prompt asks several, `Request.picks`) and, for open items, shuffles the gold's
characters (bag-of-characters floor).

A request carries no gold: the planning code hands the golds over through `use_golds`
(`pipeline.inference.give_golds`), the one hook a real engine does not have."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.engines import Completion, Request

STRATEGIES = ("oracle", "random")


class BaselineEngine:
    def __init__(self, strategy: str, seed: int = 0):
        if strategy not in STRATEGIES:
            raise ValueError(f"baseline strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.strategy, self.seed = strategy, seed
        self.golds: Mapping[str, str | None] | None = None
        self.prompts_received = 0  # lets tests prove the cache stops prompts from arriving

    def identity(self) -> dict[str, Any]:
        # `reads_gold` puts the gold into the oracle's cache keys (pipeline.inference.plan): its
        # answer depends on the gold, not only on the prompt, and identical prompts with different
        # golds (real duplicates in WenMind and WYWEB) must not share a cached answer.
        return {"engine": "baseline", "strategy": self.strategy, "seed": self.seed,
                "reads_gold": self.strategy == "oracle"}

    def use_golds(self, golds: Mapping[str, str | None]) -> None:
        """The gold answer behind each cache key this engine may be asked."""
        self.golds = golds

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
        chars = list(self._gold(req))
        rng.shuffle(chars)
        return "".join(chars)
