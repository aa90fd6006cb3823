"""Shared reading of wenheng's own JSONL formats (Fùxì, CP-DUE): `<dir>/<split>.jsonl` or one
`.jsonl` file, one JSON object per line with an `id` unique in its file.

Each line is one raw row: a line that is blank, not JSON (NaN, nesting too deep to read) or not
an object is quarantined here; adapters read each object through the shared record loop
(`pipeline.sources.records.unique_items`, one `guarded_row` per line), so an unexpected error in
one line quarantines that line only."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pipeline.sources.accounting import ParseResult, guarded_file
from pipeline.sources.json_array import json_row
from pipeline.sources.text import display_path, read_lines

if TYPE_CHECKING:  # annotations only: pipeline.config reaches this module (the source layout check)
    from pipeline.config import SourceSpec


T = TypeVar("T")

def jsonl_files(path: Path) -> list[Path]:
    """The files of the layout: `path` itself, or the `<split>.jsonl` files of a folder."""
    return [path] if path.is_file() else sorted(path.glob("*.jsonl"))


def files(spec: SourceSpec) -> tuple[Path, list[Path]]:
    """(root for display paths, the JSONL files to read), honouring `splits`."""
    root = spec.path.parent if spec.path.is_file() else spec.path
    return root, [p for p in jsonl_files(spec.path) if spec.includes_split(p.stem)]


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
        record, reason = json_row(line)
        if reason is not None:
            result.reject(benchmark, shown, locator, reason, line)
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


def record_task(record: dict, tasks: Mapping[str, T], expected: str) -> tuple[T | None, str | None]:
    """(the record's task among `tasks`, None), or (None, why not): its id is checked first, then its
    `task` name (`expected` says which names are, in the line)."""
    if record_id(record) is None:
        return None, "missing or invalid id (a non-empty string or integer without '/')"
    name = record.get("task")
    task = tasks.get(name) if isinstance(name, str) else None
    if task is None:
        return None, f"task {name!r} is not one of {expected}"
    return task, None


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
