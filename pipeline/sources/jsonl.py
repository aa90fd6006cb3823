"""Shared reading of wenheng's own JSONL formats (Fùxì, CP-DUE): `<dir>/<split>.jsonl` or one
`.jsonl` file, one JSON object per line with an `id` unique in its file."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.reading import ParseResult, display_path, guarded_file, read_lines


def files(spec: SourceSpec) -> tuple[Path, list[Path]]:
    """(root for display paths, the JSONL files to read), honouring `splits`."""
    if spec.path.is_file():
        return spec.path.parent, [spec.path] if spec.includes_split(spec.path.stem) else []
    return spec.path, sorted(p for p in spec.path.glob("*.jsonl") if spec.includes_split(p.stem))


def parse_files(spec: SourceSpec, parse_rows: Callable[[str, str, Iterator[tuple[str, Any]], ParseResult], None]
                ) -> ParseResult:
    """Calls `parse_rows(split, shown, rows, result)` per file with (locator, object) pairs; lines
    that are not JSON objects are quarantined here, so adapters only see objects."""
    result = ParseResult()
    root, paths = files(spec)
    for path in paths:
        shown = display_path(path, root)

        def one_file(own: ParseResult, path: Path = path, shown: str = shown) -> None:
            parse_rows(path.stem, shown, _objects(spec.benchmark, path, shown, own), own)

        guarded_file(result, spec.benchmark, shown, one_file)
    return result


def _objects(benchmark: str, path: Path, shown: str, result: ParseResult) -> Iterator[tuple[str, Any]]:
    for number, line in enumerate(read_lines(path), start=1):
        locator = f"line {number}"
        result.raw_counts[shown] += 1
        if not line.strip():
            result.reject(benchmark, shown, locator, "blank line", line)
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            result.reject(benchmark, shown, locator, f"not valid JSON: {exc}", line)
            continue
        if not isinstance(record, dict):
            result.reject(benchmark, shown, locator, "not a JSON object", line)
            continue
        yield locator, record


def record_id(record: dict) -> str | None:
    """The row's `id` as text; None when it is missing, empty or not a string/integer."""
    value = record.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        return None
    text = str(value).strip()
    return text if "/" not in text else None  # the id becomes one segment of item_id


def text_field(record: dict, key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) and value.strip() else None


def string_list(value: Any, n: int | None = None) -> list[str] | None:
    """A list of non-empty strings (of length n when given), else None."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        return None
    if n is not None and len(value) != n:
        return None
    return list(value)
