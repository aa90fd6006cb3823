"""models.yaml entry -> engine object."""

from __future__ import annotations

from pipeline.config import ModelSpec


def build_engine(spec: ModelSpec):
    if spec.engine == "baseline":
        from pipeline.engines.baseline import BaselineEngine

        return BaselineEngine(**spec.params)
    if spec.engine == "vllm":
        from pipeline.engines.vllm_engine import VLLMEngine

        return VLLMEngine(**spec.params)
    if spec.engine == "openai":
        from pipeline.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(**spec.params)
    raise ValueError(f"model {spec.name}: unknown engine {spec.engine!r}")
