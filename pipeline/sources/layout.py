"""Where a benchmark's files lie under its configured `path`, and which splits they hold: each card
declares its `Layout` (`BenchmarkCard.layout`); this module checks a source against it, what
`wenheng run` does before any stage (pipeline.config.load_config) and ingestion again once a `url`
source is downloaded (pipeline.ingest.parse_source).

A layout only looks at names (and a side file such as AC-EVAL's small subject_mapping.json):
nothing is parsed, so the check costs a few directory listings however large the files are. A
card without a layout is checked for its path's existence only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.config import SourceSpec


@dataclass(frozen=True)
class Layout:
    expected: str                            # the layout in words, for error lines
    file: bool                               # `path` may be one file
    folder: bool                             # `path` may be a folder
    splits: Callable[[Path], set[str]]       # the splits the files at `path` hold (empty: no file in the layout)
    check: Callable[[Path], None] | None = None  # side files: raises SourceError when one is broken


def _jsonl_splits(path: Path) -> set[str]:
    from pipeline.sources.jsonl import jsonl_files

    return {p.stem for p in jsonl_files(path)}


# The layout of pipeline/sources/jsonl.py's readers (`parse_files`): one file, or a file per split.
JSONL = Layout("a .jsonl file, or a folder of <split>.jsonl files", True, True, _jsonl_splits)


def layout_of(benchmark: str) -> Layout | None:
    """The benchmark's layout, from its registered card (`BenchmarkCard.layout`); None for a card
    without one, or a name no card has."""
    from pipeline import benchmarks

    card = benchmarks.cards().get(benchmark)
    return None if card is None else card.layout


def path_problem(spec: SourceSpec) -> str | None:
    """Why the source's `path` cannot be read as its benchmark's layout (it does not exist, it is
    a file where a folder belongs or the reverse, it holds no file in the layout, a side file is
    broken); None when it can. An empty source (no file in the layout) is allowed with
    `allow_empty`."""
    from pipeline.sources.accounting import SourceError

    layout, path = layout_of(spec.benchmark), spec.path
    expected = f"; expected {layout.expected}" if layout else ""
    if not path.exists():
        return f"{path} does not exist{expected}"
    if layout is None:
        return None
    if path.is_file() and not layout.file:
        return f"{path} is a file{expected}"
    if path.is_dir() and not layout.folder:
        return f"{path} is a folder{expected}"
    if layout.check is not None:
        try:
            layout.check(path)
        except SourceError as exc:
            return str(exc)
    if not spec.allow_empty and not layout.splits(path):
        return f"{path} holds no {spec.benchmark} file{expected} (or set allow_empty: true)"
    return None


def split_problems(spec: SourceSpec, default_evaluated: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(key, problem) for each split `splits` or `evaluate` names that the files do not hold (or
    that `splits` leaves out), and, given the card's `default_evaluated` splits, when `evaluate`
    is not set and none of them is ingested: each of these asks nothing. Empty for a card
    without a layout, or a path `path_problem` refuses."""
    layout = layout_of(spec.benchmark)
    if layout is None or path_problem(spec) is not None:
        return []
    present = layout.splits(spec.path)
    has = f"the source has {', '.join(sorted(present)) or 'no split'}"
    problems = [("splits", f"no split {s!r} in {spec.path} (got {list(spec.splits)}); {has}")
                for s in spec.splits if s not in present]
    ingested = [s for s in sorted(present) if spec.includes_split(s)]
    for split in spec.evaluate:
        if split not in present:
            problems.append(("evaluate", f"no split {split!r} in {spec.path} (got {list(spec.evaluate)}); {has}"))
        elif split not in ingested:
            problems.append(("evaluate", f"split {split!r} is not ingested (splits: {list(spec.splits)}); "
                                         f"expected some of {', '.join(ingested)}"))
    if not spec.evaluate and default_evaluated and ingested and not set(default_evaluated) & set(ingested):
        problems.append(("evaluate", f"not set, so {', '.join(default_evaluated)} would be asked, but "
                                     f"{spec.benchmark}'s ingested splits are {', '.join(ingested)}; expected "
                                     f"evaluate: [{', '.join(ingested)}] (or leave the benchmark out)"))
    return problems
