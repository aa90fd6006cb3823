"""A corpus against the benchmarks' items, start to end: check the fields, build the index, scan,
and turn the matches into one row per item. What the `corpus_overlap` asset (and its Ray job
through Dagster Pipes) calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.engines import CorpusScan, scan_corpus
from pipeline.contamination.fields import check_fields as check_fields
from pipeline.contamination.index import ItemIndex, build_index
from pipeline.contamination.overlap import overlap_rows, share_histogram


@dataclass
class Overlap:
    rows: list[dict[str, Any]]
    quarantine: list[dict[str, Any]]
    scan: CorpusScan
    index: ItemIndex


def compute_overlap(spec: CorpusSpec, name: str, items: Sequence[dict[str, Any]], cache_root: Path, *,
                    engine: str | None = None, workers: int | None = None,
                    log: Callable[[str], None] | None = None) -> Overlap:
    check_fields(spec, name)
    index = build_index(items, spec.ngram)
    scan = scan_corpus(spec, name, index, cache_root, engine=engine, workers=workers, log=log)
    rows = overlap_rows(index, scan, name, spec)
    quarantine = [{"corpus": name, **q} for q in scan.quarantine]
    return Overlap(rows, quarantine, scan, index)


def summary(result: Overlap) -> dict[str, Any]:
    """What the asset shows: files, MB, speed, and per benchmark the items checked, too short and
    contaminated, with the distribution of input shares."""
    rows, scan = result.rows, result.scan
    per_benchmark: dict[str, dict[str, Any]] = {}
    for row in rows:
        b = per_benchmark.setdefault(row["benchmark"], {"items": 0, "checked": 0, "too short": 0,
                                                        "contaminated": 0, "input": 0, "label": 0})
        b["items"] += 1
        b["checked"] += row["status"] == "checked"
        b["too short"] += row["status"] == "too_short"
        b["contaminated"] += bool(row["contaminated"])
        b["input"] += row["kind"] in ("input", "input_and_label")
        b["label"] += row["kind"] in ("label", "input_and_label")
    for b in per_benchmark.values():
        b["rate"] = round(b["contaminated"] / b["checked"], 4) if b["checked"] else None
    scanned_bytes = sum(scan.files[p].bytes for p in scan.files) if scan.files else 0
    return {
        "engine": scan.engine, "files": len(scan.files) + len(scan.quarantine), "files scanned": scan.scanned,
        "files reused": scan.reused, "files quarantined": len(scan.quarantine),
        "MB": round(scanned_bytes / 1e6, 2), "seconds": round(scan.seconds, 2),
        "items": len(rows), "contaminated": sum(bool(r["contaminated"]) for r in rows),
        "too short": sum(r["status"] == "too_short" for r in rows),
        "per benchmark": per_benchmark,
        "input share histogram": share_histogram([r["input_share"] for r in rows]),
        "label share histogram": share_histogram([r["label_share"] for r in rows]),
        "index": result.index.digest, "ngram": result.index.n,
    }
