"""Raw adapter output -> the one item table: hashes, script, unique ids."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pipeline.corrections import correct, diff_versions
from pipeline.schema import QUARANTINE, derive_fields


def standardize(raw_items: Iterable[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """Returns (items, quarantine). A repeated item_id keeps the first row and quarantines the rest."""
    items, quarantine, seen = [], [], set()
    for raw in raw_items:
        item = dict(raw)
        if item["item_id"] in seen:
            quarantine.append({
                "benchmark": item["benchmark"], "source_file": item["source_file"],
                "source_locator": item["source_locator"], "reason": f"duplicate item_id {item['item_id']}",
                "raw": json.dumps(item, ensure_ascii=False, default=str),
            })
            continue
        seen.add(item["item_id"])
        derive_fields(item)
        item["metadata"] = item.get("metadata") or {}
        items.append(item)
    return items, quarantine


def versions_changed(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The previous items of benchmarks whose source_version differs now: only a new upstream
    version is diffed, so an unchanged source never reports its own corrections as changes."""
    now = {it["benchmark"]: it["source_version"] for it in current}
    return [it for it in previous if it["benchmark"] in now and it["source_version"] != now[it["benchmark"]]]


def build_items(raw_rows: list[dict[str, Any]], corrections_dir: Path,
                previous_items: list[dict[str, Any]] | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """All raw_<benchmark> rows -> (items, quarantine, corrections audit).

    Readable rows are standardized and corrected; rows the adapters rejected and repeated ids go
    to quarantine. `previous_items` (the items table as last built) is diffed per field for every
    benchmark whose source version changed since."""
    readable = [{k: v for k, v in row.items() if k not in ("reason", "raw")} for row in raw_rows
                if row["reason"] is None]
    items, quarantine = standardize(readable)
    items, audit = correct(items, corrections_dir)
    if previous_items:
        audit += diff_versions(versions_changed(previous_items, items), items)
    rejected = [{k: row[k] for k in QUARANTINE.names} for row in raw_rows if row["reason"] is not None]
    return items, rejected + quarantine, audit
