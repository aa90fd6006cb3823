"""A corpus against the benchmarks' items, start to end: check the fields, read the index, scan,
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
from pipeline.contamination.index import FIELDS, ITEM_COLUMNS, ItemIndex, build_index, merged
from pipeline.contamination.overlap import overlap_rows


@dataclass
class Overlap:
    rows: list[dict[str, Any]]
    quarantine: list[dict[str, Any]]
    scan: CorpusScan
    index: ItemIndex


def compute_overlap(spec: CorpusSpec, name: str, index: ItemIndex, cache_root: Path, *,
                    engine: str | None = None, workers: int | None = None,
                    log: Callable[[str], None] | None = None,
                    references: dict[str, CorpusSpec] | None = None) -> Overlap:
    """`index`: the items' n-gram index of the corpus's n-gram size (`item_index`).
    `references`: the reference corpora (public classical texts), scanned with the same index
    (from their own scan cache when unchanged); what they hold of an item is its source. A
    reference corpus's own verdict uses the others."""
    check_fields(spec, name)
    scan = scan_corpus(spec, name, index, cache_root, engine=engine, workers=workers, log=log)
    held = reference_hashes(index, {k: v for k, v in (references or {}).items() if k != name}, cache_root,
                            engine=engine, workers=workers, log=log)
    rows = overlap_rows(index, scan, name, spec, reference=held)
    quarantine = [{"corpus": name, **q} for q in scan.quarantine]
    return Overlap(rows, quarantine, scan, index)


def item_index(index_files: Sequence[Path], items_files: Sequence[Path], n: int,
               log: Callable[[str], None] | None = None) -> ItemIndex:
    """The index of every built benchmark's items for n-grams of `n` characters: the `item_ngrams`
    tables the prepare runs stored, when they hold that size for exactly the items built (files by
    benchmark, in the same order); otherwise built here from the items, with a line saying why (a
    lake from before the index was stored, or a size only a command-line scan uses)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    why = None
    if [Path(f).name for f in index_files] != [Path(f).name for f in items_files]:
        why = "not stored for every built benchmark"
    else:
        tables = [pq.read_table(f) for f in index_files]
        for table, items_file in zip(tables, items_files):
            rows = table.filter(pc.and_(pc.equal(table["ngram"], n), pc.equal(table["field"], FIELDS[0])))
            if rows["item_id"].to_pylist() != pq.read_table(items_file, columns=["item_id"])["item_id"].to_pylist():
                why = f"not stored for {n}-grams of the items built" if rows.num_rows else f"not stored for {n}-grams"
                break
        else:
            return merged(tables, n)
    (log or (lambda line: None))(f"item n-gram index {why}: building it for this scan")
    items = pa.concat_tables([pq.read_table(f, columns=ITEM_COLUMNS) for f in items_files]).to_pylist()
    return build_index(items, n)


def reading_row(name: str, scan: CorpusScan) -> dict[str, Any]:
    """The corpus_reading row: what the corpus's files held."""
    notes = scan.reading_notes()
    return {"corpus": name, "files": notes["files"], "documents": notes["documents"],
            "bad_lines": notes["bad lines"], "empty_files": notes["empty files"],
            "invalid_utf8": notes["invalid utf-8"], "first_error": notes["first error"]}


def reference_hashes(index: ItemIndex, references: dict[str, CorpusSpec], cache_root: Path, **scan_args):
    """The item n-gram hashes that any reference corpus holds."""
    import numpy as np

    held = [np.empty(0, dtype=np.uint64)]
    for ref_name, ref in sorted(references.items()):
        ref = ref.model_copy(update={"ngram": index.n})
        held.append(scan_corpus(ref, ref_name, index, cache_root, **scan_args).matches["hash"].to_numpy())
    return np.unique(np.concatenate(held))


def summary(result: Overlap) -> dict[str, Any]:
    """What the scan did: files, MB, speed, what it read, the index. What its rows say (items per
    level, per benchmark, the share histogram) is counted by the warehouse's own views over them
    (tables.rows_report), not here."""
    scan = result.scan
    scanned_bytes = sum(scan.files[p].bytes for p in scan.files) if scan.files else 0
    return {
        "engine": scan.engine, "files": len(scan.files) + len(scan.quarantine), "files scanned": scan.scanned,
        "files reused": scan.reused, "files quarantined": len(scan.quarantine),
        "MB": round(scanned_bytes / 1e6, 2), "seconds": round(scan.seconds, 2),
        "reading": scan.reading_summary(), "index": result.index.digest, "ngram": result.index.n,
    }
