"""The benchmark registry: every card folder in this package (see pipeline/benchmark_card.py),
the five papers' first in REGISTRY's order, any other after them by name: a new benchmark is its
folder alone.

Cards are imported when first asked for (not when this module is), so the configuration can
import the registry without an import circle. `WENHENG_CARDS` adds card folders kept outside
this package (paths separated by `os.pathsep`), each a folder with an `__init__.py` that
defines `CARD`.

Beside `CARD`, a card's `__init__.py` may declare hooks: module-level names that generic code
asks the registry for (`hooks`), so it never names a benchmark. `OFFICIAL_JUDGE_PROMPTS`: the
official judge prompt file a benchmark's paper judged with, pinned, and its reader
(`pipeline.judge.prompts.OfficialSource`; WenMind's in pipeline/benchmarks/wenmind/official_prompts.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.benchmark_card import BenchmarkCard

# The order the papers' cards are listed and shown in (leaderboard, reports).
REGISTRY = (
    "pipeline.benchmarks.wenmind",
    "pipeline.benchmarks.aceval",
    "pipeline.benchmarks.wyweb",
    "pipeline.benchmarks.fuxi",
    "pipeline.benchmarks.cpdue",
)
EXTRA_CARDS_ENV = "WENHENG_CARDS"   # pipeline.settings.Settings.cards


class UnknownBenchmark(KeyError):
    def __str__(self) -> str:
        return self.args[0]


class _Cards(dict):
    """Card name -> card, in registry order; `modules`: card name -> the module that defines it
    (where its hooks are)."""

    def __init__(self) -> None:
        super().__init__()
        self.modules: dict[str, ModuleType] = {}


@cache
def _load(extra: str) -> dict[str, BenchmarkCard]:
    """Keyed on $WENHENG_CARDS as written: the variable is parsed (and checked) only when it changes."""
    from pipeline.settings import settings

    modules = [importlib.import_module(name) for name in (*REGISTRY, *_other_folders())]
    for folder in settings({EXTRA_CARDS_ENV: extra}).cards if extra.strip() else ():
        modules.append(_import_folder(Path(folder)))
    loaded = _Cards()
    for module in modules:
        card = getattr(module, "CARD", None)
        if card is None:
            raise ImportError(f"{module.__name__} defines no CARD")
        if card.folder is None:   # the card's files sit beside the CARD that names them
            card = dataclasses.replace(card, folder=Path(module.__file__).parent)
        if card.name in loaded:
            raise ImportError(f"two benchmark cards are named {card.name!r}")
        loaded[card.name] = card
        loaded.modules[card.name] = module
    return loaded


def _other_folders() -> list[str]:
    """The card folders of this package that REGISTRY does not list, by name."""
    import pkgutil

    return sorted(f"{__name__}.{found.name}" for found in pkgutil.iter_modules(__path__)
                  if found.ispkg and f"{__name__}.{found.name}" not in REGISTRY)


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
    """Every registered card, by name, in registry order (called per scored row: one lookup)."""
    from pipeline.settings import Settings, written

    return _load(written(Settings.cards))


def names() -> tuple[str, ...]:
    return tuple(cards())


def card(name: str) -> BenchmarkCard:
    found = cards().get(name)
    if found is None:
        raise UnknownBenchmark(f"unknown benchmark {name!r}; known: {', '.join(cards())}")
    return found


def hooks(hook: str) -> dict[str, Any]:
    """Card name -> what the card's module declares under `hook` (e.g. `OFFICIAL_JUDGE_PROMPTS`),
    for the cards that declare it, in registry order."""
    modules = cards().modules
    return {name: getattr(module, hook) for name, module in modules.items() if hasattr(module, hook)}
