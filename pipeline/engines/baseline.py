"""Baselines that need no model: `oracle` answers the gold (a scorer that does not give it 1.0
is broken), `random` picks an option uniformly (chance level) and, for open items, shuffles
the gold's characters (bag-of-characters floor)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pipeline.engines import Completion, Request

STRATEGIES = ("oracle", "random")


class BaselineEngine:
    def __init__(self, strategy: str, seed: int = 0):
        if strategy not in STRATEGIES:
            raise ValueError(f"baseline strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.strategy, self.seed = strategy, seed
        self.prompts_received = 0  # lets tests prove the cache stops prompts from arriving

    def identity(self) -> dict[str, Any]:
        # The oracle's answer depends on the gold, not only on the prompt: identical prompts with
        # different golds (real duplicates in WenMind and WYWEB) must not share a cached answer.
        return {"engine": "baseline", "strategy": self.strategy, "seed": self.seed,
                "reads_gold": self.strategy == "oracle"}

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

    def _answer(self, req: Request) -> str:
        if self.strategy == "oracle":
            return req.answer or ""
        rng = random.Random(f"{self.seed}:{req.cache_key}")
        if req.choices:
            return "ABCDEFGH"[rng.randrange(len(req.choices))]
        if req.labels:
            return rng.choice(list(req.labels))
        chars = list(req.answer or "")
        rng.shuffle(chars)
        return "".join(chars)
