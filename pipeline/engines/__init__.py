"""Engines behind one interface: given requests, return completions in the same order.

The response cache in front of them (key, store, location, `run_with_cache`) is
`pipeline/engines/cache.py`. A request never carries a gold answer: real engines cannot see one,
and the baselines that answer from the gold are handed the golds apart
(`pipeline.inference.give_golds`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Every engine models.yaml can name, and its class: the one table both the config check
# (pipeline/config/models.py: which keys an entry may have) and construction (registry.build_engine)
# read. Imported only when asked for: vLLM's module loads torch.
ENGINE_CLASSES: dict[str, tuple[str, str]] = {
    "vllm": ("pipeline.engines.vllm_engine", "VLLMEngine"),
    "openai": ("pipeline.engines.openai_engine", "OpenAIEngine"),
    "baseline": ("pipeline.engines.baseline", "BaselineEngine"),
}


def engine_class(engine: str) -> type:
    """The class of engine `engine`; a name not in ENGINE_CLASSES is a ValueError."""
    import importlib

    if engine not in ENGINE_CLASSES:
        raise ValueError(f"unknown engine {engine!r} (known: {', '.join(ENGINE_CLASSES)})")
    module, name = ENGINE_CLASSES[engine]
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Request:
    cache_key: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int | None   # None: up to the model's context
    temperature: float = 0.0
    # Constrained decoding: the answer must be one of these strings (MCQ letters), if set.
    constrain_to: tuple[str, ...] = ()
    # The answer space, for baselines (never shown to a real model): the item's option letters
    # (pipeline.schema.OPTION_LETTERS, one per option) and, for label-text classification, its labels.
    choices: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    # How many answers the prompt asks for, one letter each, in order (CP-DUE AU: 3, e.g. "CAB");
    # 1 for every other item. For baselines only, like `choices`.
    picks: int = 1
    # Structured output: the answer must be JSON valid under this JSON schema, if set (the LLM
    # judge's verdicts). Engines that cannot constrain decoding send the prompt as it is.
    json_schema: Mapping[str, Any] | None = None
    # A sampling seed for this request instead of the engine's own (the judge's repeats at a
    # temperature above 0 must differ from each other).
    seed: int | None = None
    # Generation ends at the first of these strings (a base model's answer: a blank line, the
    # prompt's next-question marker); the stop string itself is not part of the answer.
    stop: tuple[str, ...] = ()
    # Log-likelihood instead of generation (lm-eval's `multiple_choice`): the engine scores each of
    # these strings as a continuation of the prompt, the summed log-probability of its tokens, and
    # writes no text. With `picks` above 1 (several questions answered one letter each, in order),
    # question k is scored after the prompt followed by the continuations the model ranked first
    # for questions 1..k-1 (its own answers, greedy): `picks` x len(continuations) numbers.
    continuations: tuple[str, ...] = ()


@dataclass
class Completion:
    text: str | None
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_s: float | None = None
    error: str | None = None
    # A log-likelihood request's answer: each continuation's summed log-probability (nats), in the
    # request's order (`picks` rounds one after another); None for a generated answer.
    logprobs: tuple[float, ...] | None = None
    # When the answer was first given (the response cache's stamp, UTC ISO): an answer served from
    # the cache keeps it. Not part of the answer's equality.
    created_at: str | None = field(default=None, compare=False)


class Engine(Protocol):
    def identity(self) -> dict[str, Any]:
        """Everything that changes outputs (engine kind, weights, dtype, template use); never
        transport settings (concurrency, timeouts, retries, keys), which change only how outputs
        arrive. Part of every cache key."""

    def load(self) -> None:
        """Get ready to generate (load weights); called only when something must be sent."""

    def generate(self, requests: Sequence[Request],
                 on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        """One completion per request, same order. Errors are returned, not raised.

        `on_result(index, completion)` is called as each request finishes, so the caller can
        persist it at once: a crash or kill then loses at most the requests still in flight."""


def best_option(logprobs: Sequence[float], lengths: Sequence[int] | None = None) -> int:
    """The continuation a log-likelihood answer picks: the highest log-probability (divided by
    `lengths`, characters, for acc_norm), ties to the first, deterministically."""
    scaled = [v / max(n, 1) for v, n in zip(logprobs, lengths)] if lengths else list(logprobs)
    return max(range(len(scaled)), key=lambda k: (scaled[k], -k))
