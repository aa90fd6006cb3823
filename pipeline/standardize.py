"""Raw adapter output -> the one item table: hashes, script, unique ids."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline.corrections import apply_corrections, diff_versions, load_corrections
from pipeline.schema import QUARANTINE, answer_hash, content_hash
from pipeline.script import detect_scripts
from pipeline.sources.text import raw_text


def standardize(raw_items: Iterable[dict[str, Any]], known_scripts: Mapping[str, str] | None = None
                ) -> tuple[list[dict], list[dict]]:
    """Returns (items, quarantine). A repeated item_id keeps the first row and quarantines the rest.
    `known_scripts` (content_hash -> script, e.g. of the items as last built) saves detecting the
    script of a text seen before."""
    items, quarantine, seen = [], [], set()
    for raw in raw_items:
        item = dict(raw)
        if item["item_id"] in seen:
            quarantine.append({
                "benchmark": item["benchmark"], "source_file": item["source_file"],
                "source_locator": item["source_locator"], "reason": f"duplicate item_id {item['item_id']}",
                "raw": raw_text(item),
            })
            continue
        seen.add(item["item_id"])
        item["metadata"] = item.get("metadata") or {}
        items.append(item)
    derive_all(items, known_scripts)
    return items, quarantine


def derive_all(items: list[dict[str, Any]], known_scripts: Mapping[str, str] | None = None) -> None:
    """schema.derive_fields on every item (in place), with the script detection's OpenCC calls
    batched over all items (detect_scripts) instead of two calls per item. The script is a
    function of the texts the content hash covers (context, question, choices), so an item whose
    content hash is in `known_scripts` takes the script found there."""
    known = known_scripts or {}
    unknown = []
    for item in items:
        item["content_hash"] = content_hash(item)
        item["answer_hash"] = answer_hash(item)
        item["script"] = known.get(item["content_hash"])
        if item["script"] is None:
            unknown.append(item)
    texts = ["".join(filter(None, [it.get("context"), it.get("question"), *(it.get("choices") or [])]))
             for it in unknown]
    for item, script in zip(unknown, detect_scripts(texts)):
        item["script"] = script


def build_items(raw_rows: list[dict[str, Any]], corrections_dir: Path,
                previous_items: list[dict[str, Any]] | None = None,
                sources: Mapping[str, Any] | None = None,
                previous_audit: list[dict[str, Any]] | None = None,
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """raw_items rows (of one benchmark partition, or of several) -> (items, quarantine, corrections audit).

    Readable rows are standardized and corrected; rows the adapters rejected and repeated ids go
    to quarantine. `previous_items` (the items as last built: the whole table or one benchmark's
    part) are diffed against the new ones for every benchmark in `raw_rows` that has previous
    items: changed fields, removed and added items (pipeline.corrections.diff_versions); previous
    items of benchmarks not in `raw_rows` are ignored. `previous_audit` (the corrections audit of
    that build) tells a correction since removed from an upstream change (`reverted`). `sources`
    (benchmark -> SourceSpec) is where corrections scoped to a `path` look; None reads the
    configured sources file if needed."""
    readable = [{k: v for k, v in row.items() if k not in ("reason", "raw")} for row in raw_rows
                if row["reason"] is None]
    known_scripts = {it["content_hash"]: it["script"] for it in previous_items or ()
                     if it.get("content_hash") and it.get("script")}
    upstream, quarantine = standardize(readable, known_scripts)
    corrections = load_corrections(corrections_dir)
    if sources is None and any(c.scope.paths for c in corrections):
        from pipeline.config import load_sources
        from pipeline.paths import sources_file

        sources = load_sources(sources_file())
    items, audit = apply_corrections(upstream, corrections, sources)
    for benchmark in sorted({row["benchmark"] for row in raw_rows}):
        before = [it for it in previous_items or () if it["benchmark"] == benchmark]
        if before:   # a benchmark built for the first time has nothing to diff against
            audit += diff_versions(before, [it for it in upstream if it["benchmark"] == benchmark],
                                   [it for it in items if it["benchmark"] == benchmark], previous_audit)
    rejected = [{k: row[k] for k in QUARANTINE.names} for row in raw_rows if row["reason"] is not None]
    return items, rejected + quarantine, audit


def all_quarantined(benchmark: str, items: list[dict[str, Any]], quarantine: list[dict[str, Any]],
                    allow_empty: bool) -> str | None:
    """One line when a benchmark's rows were all quarantined (no item left to ask), unless its
    sources entry says `allow_empty: true`; None otherwise (an empty source is refused earlier,
    in pipeline/ingest.py)."""
    if items or not quarantine or allow_empty:
        return None
    first = quarantine[0]
    where = f"{first.get('source_file')}:{first.get('source_locator')}"
    reason = " ".join(str(first.get("reason") or "").split())[:200]
    return (f"{benchmark}: all {len(quarantine):,} of its rows were quarantined, no item is left "
            f"(first: {where}: {reason}); fix the source (the quarantine table lists every row and why), "
            "or set allow_empty: true on its sources entry to build it empty")
