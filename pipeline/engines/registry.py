"""models.yaml entry -> engine object, and when loaded engines are stopped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pipeline.engines import engine_class

if TYPE_CHECKING:   # the configuration is read above the engines, which only take its entries
    from pipeline.config import ModelSpec

_kept = 0   # how many keep_engines blocks are open in this process


def build_engine(spec: ModelSpec):
    try:
        cls = engine_class(spec.engine)
    except ValueError as exc:
        raise ValueError(f"model {spec.name}: {exc}") from None
    return cls(**spec.params)


@contextmanager
def keep_engines() -> Iterator[None]:
    """Inside this block a run's end leaves its loaded engines alone: runs executed one after
    another in this process (`wenheng run`'s partitions) load a model once. They stay loaded after
    it too; whoever opened the block stops them (pipeline.engines.vllm_engine.shutdown_engines)."""
    global _kept
    _kept += 1
    try:
        yield
    finally:
        _kept -= 1


def release_engines() -> None:
    """At a run's (or a step's) end: stop the engines loaded in this process, unless kept
    (keep_engines). A local model's engine runs in child processes that never end by themselves,
    so a run process left holding one would never exit either."""
    if _kept:
        return
    vllm_engine = sys.modules.get("pipeline.engines.vllm_engine")
    if vllm_engine is not None:   # never loaded: nothing to stop, and no reason to import it
        vllm_engine.shutdown_engines()
