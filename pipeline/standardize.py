"""Raw adapter output -> the one item table: hashes, script, JSON metadata, unique ids."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pipeline.schema import answer_hash, content_hash, stable_json
from pipeline.script import detect_script


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
        if not isinstance(item.get("metadata"), str):
            item["metadata"] = stable_json(item.get("metadata") or {})
        items.append(item)
    return items, quarantine


def versions_changed(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The previous items of benchmarks whose source_version differs now: only a new upstream
    version is diffed, so an unchanged source never reports its own corrections as changes."""
    now = {it["benchmark"]: it["source_version"] for it in current}
    return [it for it in previous if it["benchmark"] in now and it["source_version"] != now[it["benchmark"]]]


def derive_fields(item: dict[str, Any]) -> dict[str, Any]:
    """What is derived from an item's text: its script and both hashes (in place)."""
    text = "".join(filter(None, [item.get("context"), item.get("question"), *(item.get("choices") or [])]))
    item["script"] = detect_script(text)
    item["content_hash"] = content_hash(item)
    item["answer_hash"] = answer_hash(item)
    return item
