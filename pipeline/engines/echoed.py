"""A completions endpoint's echoed prompt log-probabilities (`echo` + `logprobs`, `max_tokens: 0`)
read as the log-likelihood of each continuation: the OpenAI engine's scoring, kept apart from its
transport."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def continuation_logprobs(answer: Mapping[str, Any], boundary: int, n: int) -> list[float]:
    """Each echoed prompt's log-probability after character `boundary` (the context's length): the
    sum over the tokens that reach past it. The server tokenises the joined text, so a token that
    spans the boundary is counted with the continuation; `choices` come back by `index`."""
    choices = sorted(answer["choices"], key=lambda c: c.get("index", 0))
    if len(choices) != n:
        raise ValueError(f"{len(choices)} choices for {n} prompts")
    sums = []
    for choice in choices:
        logprobs = choice["logprobs"]
        values, offsets = logprobs["token_logprobs"], logprobs["text_offset"]
        ends = [*offsets[1:], len(choice.get("text") or "") or math.inf]
        picked = [v for v, end in zip(values, ends) if end > boundary]
        if not picked or any(v is None for v in picked):
            raise ValueError("no log-probability for the continuation's tokens")
        sums.append(float(sum(picked)))
    return sums
