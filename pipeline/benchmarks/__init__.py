"""The benchmark registry: one line per benchmark card (see pipeline/benchmarks/benchmark_card.py).

Cards are imported when first asked for (not when this module is), so the configuration can
import the registry without an import circle. `WENHENG_CARDS` adds card folders kept outside
this package (paths separated by `os.pathsep`), each a folder with an `__init__.py` that
defines `CARD`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.benchmarks.benchmark_card import BenchmarkCard

REGISTRY = (
    "pipeline.benchmarks.wenmind",
    "pipeline.benchmarks.aceval",
    "pipeline.benchmarks.wyweb",
    "pipeline.benchmarks.fuxi",
    "pipeline.benchmarks.cpdue",
)
EXTRA_CARDS_ENV = "WENHENG_CARDS"


class UnknownBenchmark(KeyError):
    def __str__(self) -> str:
        return self.args[0]


@cache
def _load(extra: str) -> dict[str, BenchmarkCard]:
    modules = [importlib.import_module(name) for name in REGISTRY]
    for folder in filter(None, extra.split(os.pathsep)):
        modules.append(_import_folder(Path(folder)))
    loaded: dict[str, BenchmarkCard] = {}
    for module in modules:
        card = getattr(module, "CARD", None)
        if card is None:
            raise ImportError(f"{module.__name__} defines no CARD")
        if card.name in loaded:
            raise ImportError(f"two benchmark cards are named {card.name!r}")
        loaded[card.name] = card
    return loaded


def _import_folder(folder: Path):
    init = folder / "__init__.py"
    if not init.is_file():
        raise ImportError(f"{EXTRA_CARDS_ENV}: {folder} is not a card folder (no __init__.py)")
    name = f"wenheng_cards.{folder.name}"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cards() -> dict[str, BenchmarkCard]:
    """Every registered card, by name, in registry order."""
    return _load(os.environ.get(EXTRA_CARDS_ENV, ""))


def names() -> tuple[str, ...]:
    return tuple(cards())


def card(name: str) -> BenchmarkCard:
    found = cards().get(name)
    if found is None:
        raise UnknownBenchmark(f"unknown benchmark {name!r}; known: {', '.join(cards())}")
    return found
