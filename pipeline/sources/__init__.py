"""Source adapters: one module per benchmark, each turning the benchmark's own files into
item rows (pipeline.schema.ITEMS, before hashing) plus quarantine rows for what it could not read.

Every raw row ends up in exactly one of the two lists; `raw_counts` says how many rows each file
had, so a reconciliation check can prove that nothing was lost.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipeline.config import SourceSpec


@dataclass
class ParseResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    raw_counts: Counter = field(default_factory=Counter)  # source_file -> raw rows seen

    def reject(self, benchmark: str, source_file: str, locator: Any, reason: str, raw: Any) -> None:
        if not isinstance(raw, str):
            raw = json.dumps(raw, ensure_ascii=False, default=str)
        self.quarantine.append({
            "benchmark": benchmark, "source_file": source_file,
            "source_locator": str(locator), "reason": reason, "raw": raw,
        })

    def extend(self, other: "ParseResult") -> None:
        self.items.extend(other.items)
        self.quarantine.extend(other.quarantine)
        self.raw_counts.update(other.raw_counts)


def display_path(path: Path, root: Path) -> str:
    """Paths are recorded relative to the source root so item provenance does not depend on
    where a user keeps the files."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def read_text(path: Path) -> str:
    """UTF-8 with or without BOM; CRLF and CR normalised to LF."""
    text = path.read_bytes().decode("utf-8-sig")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_source(spec: SourceSpec) -> ParseResult:
    from pipeline.sources import aceval, wenmind, wyweb

    adapters: dict[str, Callable[[SourceSpec], ParseResult]] = {
        "wenmind": wenmind.parse,
        "aceval": aceval.parse,
        "wyweb": wyweb.parse,
    }
    if spec.benchmark not in adapters:
        raise NotImplementedError(f"no adapter for benchmark {spec.benchmark!r} yet")
    if not spec.path.exists():
        raise FileNotFoundError(f"{spec.benchmark}: source path {spec.path} does not exist")
    return adapters[spec.benchmark](spec)
