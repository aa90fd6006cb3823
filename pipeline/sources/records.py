"""The record loop of the adapters whose rows carry ids (WenMind, Fùxì, CP-DUE): each raw record
of a file is read through `guarded_row`, and a record whose id was already seen in the same file
is quarantined as a duplicate, so an id names one item."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import partial
from typing import Any

from pipeline.sources.accounting import ParseResult, Row, guarded_row


def duplicate_id(key: Hashable) -> str:
    return f"duplicate id {key}"


def unique_items(result: ParseResult, benchmark: str, shown: str, records: Iterable[tuple[Any, Any]],
                 build: Callable[[Any, Any], Row], key: Callable[[Any, dict[str, Any]], Hashable],
                 duplicate: Callable[[Any], str] = duplicate_id) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """(locator, record, item) for each of one file's `(locator, record)` pairs that reads as an
    item (`build(locator, record)`, guarded) whose `key(record, item)` was not seen before in the
    file. The others are quarantine rows: the reason `build` gives, or `duplicate(key)`. Whoever
    yields the records counts them in `raw_counts`; the caller adds the items."""
    seen: set[Hashable] = set()
    for locator, record in records:
        item = guarded_row(result, benchmark, shown, locator, record, partial(build, locator, record))
        if item is None:
            continue
        found = key(record, item)
        if found in seen:
            result.reject(benchmark, shown, locator, duplicate(found), record)
            continue
        seen.add(found)
        yield locator, record, item
