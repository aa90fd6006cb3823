"""A corpus against the benchmarks' items, start to end: check the fields, build the index, scan,
and turn the matches into one row per item. What the `corpus_overlap` asset (and its Ray job
through Dagster Pipes) calls."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import ConfigError
from pipeline.contamination.corpora import CorpusSpec, shard_paths
from pipeline.contamination.engines import CorpusScan, Reading, scan_corpus
from pipeline.contamination.index import ItemIndex, build_index
from pipeline.contamination.overlap import overlap_rows, share_histogram
from pipeline.contamination.scan import ShardError, _get

PROBE_FILES = 3          # files sampled for the field check ...
PROBE_DOCUMENTS = 1000   # ... and documents per file


def check_fields(spec: CorpusSpec, name: str) -> None:
    """Before any work: every configured field appears in at least one of the first documents of
    the first files; else one line naming the field and the keys the documents do have."""
    if not spec.fields:
        return
    files = shard_paths(spec)
    if not files:
        raise ConfigError(f"corpora.{name}: no file found under {', '.join(spec.paths)}")
    records: list[dict] = []
    for path in files[:PROBE_FILES]:
        try:
            records += [r for r in _first_records(path, spec) if isinstance(r, dict)]
        except (ShardError, OSError, ValueError, pa.ArrowException):
            continue   # a broken file is the scan's to quarantine and report, not the check's
    if not records:
        return
    missing = [f for f in spec.fields if not any(_get(r, f.split(".")) is not None for r in records)]
    if missing:
        keys = Counter(k for r in records for k in r)
        have = ", ".join(k for k, _ in keys.most_common(12)) or "none"
        raise ConfigError(f"corpora.{name}: field {', '.join(missing)} appears in none of the first documents "
                          f"of {', '.join(files[:PROBE_FILES])} (their keys: {have})")


def _first_records(path: str, spec: CorpusSpec) -> list:
    fmt = Reading.of(spec).format_for(path)
    if fmt == "txt":
        return []
    if fmt == "parquet":
        batches = pq.ParquetFile(path).iter_batches(batch_size=PROBE_DOCUMENTS)
        return next(batches, pa.table({})).to_pylist()
    with open(path, "rb") as f:
        if fmt == "json":
            value = json.loads(f.read().decode("utf-8", errors="replace"))
            return (value if isinstance(value, list) else [value])[:PROBE_DOCUMENTS]
        out = []
        for i, line in enumerate(f):
            if i >= PROBE_DOCUMENTS:
                break
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


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
