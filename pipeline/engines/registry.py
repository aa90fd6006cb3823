"""models.yaml entry -> engine object."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import ModelSpec


def build_engine(spec: ModelSpec, cache_dir: Path):
    if spec.engine == "baseline":
        from pipeline.engines.baseline import BaselineEngine

        return BaselineEngine(**spec.params)
    if spec.engine == "vllm":
        from pipeline.engines.vllm_engine import VLLMEngine

        return VLLMEngine(cache_dir=cache_dir, **spec.params)
    raise ValueError(f"model {spec.name}: unknown engine {spec.engine!r}")
