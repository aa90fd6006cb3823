"""The check of a corpus's `fields` before any work: each file's first documents are sampled, so a
field that only some files have (chinese-poetry's songci files have `rhythmic`, its Tang files do
not) is accepted with one warning line, and a field that no file has is refused in one line that
names the keys the documents do have.

The cost is bounded: at most PROBE_DOCUMENTS documents of a file (PROBE_FILE_BYTES of a jsonl
file; a json file is read whole, up to PROBE_JSON_BYTES), at most PROBE_MAX_FILES files and
PROBE_TOTAL_BYTES in all, taken spread over the corpus (its first file, its middle, its quarters,
...). The probing stops once every field is found and PROBE_MIN_FILES files are read. A field
found in no file probed is refused only when every file of the corpus was probed; else it is a
warning (the files not probed may hold it).
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import ConfigError
from pipeline.contamination.corpora import CorpusSpec, is_url, not_regular, shard_paths
from pipeline.contamination.reading import Reading
from pipeline.contamination.scan import ShardError, _get

PROBE_DOCUMENTS = 200            # documents sampled per file ...
PROBE_FILE_BYTES = 4 << 20       # ... from at most this much of a jsonl file
PROBE_JSON_BYTES = 64 << 20      # a bigger json file is not probed (it would be read whole)
PROBE_MIN_FILES = 32             # files probed even once every field is found (for the warning)
PROBE_MAX_FILES = 200
PROBE_TOTAL_BYTES = 256 << 20
SHOWN = 3                        # files named in a line


def check_fields(spec: CorpusSpec, name: str, warn: Callable[[str], None] | None = None) -> None:
    """Before any work: every configured field appears in the first documents of at least one
    file; else one ConfigError line naming the field and the keys the documents do have. A field
    that some of the files probed lack is one line to `warn` (default: stderr)."""
    if not spec.fields:
        return
    files = shard_paths(spec)
    if not files:
        raise ConfigError(f"corpora.{name}: no file found under {', '.join(spec.paths)}")
    warn = warn or (lambda line: print(f"wenheng: {line}", file=sys.stderr, flush=True))
    sampled, probed = _probe(files, spec)
    if not sampled:
        return   # nothing readable: the scan quarantines the files and says why
    where = {f: [p for p, records in sampled.items() if _holds(records, f)] for f in spec.fields}
    missing = [f for f in spec.fields if not where[f]]
    if missing:
        keys = Counter(k for records in sampled.values() for r in records for k in r)
        have = ", ".join(k for k, _ in keys.most_common(12)) or "none"
        line = (f"corpora.{name}: field {', '.join(missing)} appears in none of the first documents of "
                f"{_some(list(sampled))} (their keys: {have})")
        if probed == len(files):
            raise ConfigError(line)
        warn(f"{line}; {len(files) - probed:,} files were not probed: scanning anyway")
    for f in spec.fields:
        lacking = [p for p in sampled if p not in where[f]]
        if where[f] and lacking:
            warn(f"corpora.{name}: field {f} is in {len(where[f]):,} of the {len(sampled):,} files probed, not in "
                 f"{_some(lacking)}: their documents are read from the other fields")
    _check_id_field(spec, name, sampled, warn)


def _check_id_field(spec: CorpusSpec, name: str, sampled: dict[str, list[dict]], warn: Callable[[str], None]) -> None:
    """`id_field` absent from documents probed: one warning line (their ids are then made from
    their text, `<file>@<sha1>`: the evidence still names them, by content)."""
    if not spec.id_field:
        return
    path = spec.id_field.split(".")
    lacking = {p: sum(_get(r, path) is None for r in records) for p, records in sampled.items()}
    lacking = {p: n for p, n in lacking.items() if n}
    if not lacking:
        return
    documents = sum(len(records) for records in sampled.values())
    keys = Counter(k for records in sampled.values() for r in records for k in r)
    warn(f"corpora.{name}: id_field {spec.id_field} is missing from {sum(lacking.values()):,} of the {documents:,} "
         f"first documents probed, in {_some(list(lacking))} (their keys: "
         f"{', '.join(k for k, _ in keys.most_common(12)) or 'none'}): those documents are identified by "
         "<file>@<sha1 of their text>")


def _holds(records: Sequence[dict], field: str) -> bool:
    path = field.split(".")
    return any(_get(r, path) is not None for r in records)


def _some(paths: Sequence[str]) -> str:
    shown = ", ".join(os.path.basename(p) for p in paths[:SHOWN])
    return shown + (f" and {len(paths) - SHOWN:,} more" if len(paths) > SHOWN else "")


def _probe(files: list[str], spec: CorpusSpec) -> tuple[dict[str, list[dict]], int]:
    """{file: its first documents (objects)} for the files probed, and how many files were probed
    (one that cannot be read counts: the scan reports it)."""
    sampled: dict[str, list[dict]] = {}
    spent = probed = 0
    for path in _spread(files, PROBE_MAX_FILES):
        if spent >= PROBE_TOTAL_BYTES:
            break
        probed += 1
        if is_url(path) or not_regular(path) is not None:
            continue
        try:
            records, size = _first_records(path, spec)
        except (ShardError, OSError, ValueError, pa.ArrowException):
            continue   # a broken file is the scan's to quarantine and report, not the check's
        spent += size
        records = [r for r in records if isinstance(r, dict)]
        if records:
            sampled[path] = records
        if probed >= PROBE_MIN_FILES and all(any(_holds(r, f) for r in sampled.values()) for f in spec.fields):
            break
    return sampled, probed


def _spread(files: list[str], limit: int) -> list[str]:
    """At most `limit` files in an order that covers the corpus early: all of them when there
    are few; else the first, the middle, the quarters, the eighths, ... (van der Corput)."""
    if len(files) <= limit:
        return files
    order: dict[int, None] = {}
    k = 0
    while len(order) < limit:
        x, denominator, i = 0.0, 1.0, k
        while i:
            denominator *= 2
            x += (i % 2) / denominator
            i //= 2
        order.setdefault(int(x * len(files)), None)
        k += 1
    return [files[i] for i in order]


def _first_records(path: str, spec: CorpusSpec) -> tuple[list, int]:
    """The first documents of a file (none for txt, or for a json file too big to read for a
    check) and the bytes read for them."""
    fmt = Reading.of(spec).format_for(path)
    if fmt == "txt":
        return [], 0
    if fmt == "parquet":
        parquet = pq.ParquetFile(path)
        batch = next(parquet.iter_batches(batch_size=PROBE_DOCUMENTS), None)
        return ([] if batch is None else batch.to_pylist()), 0 if batch is None else batch.nbytes
    if fmt == "json":
        size = os.path.getsize(path)
        if size > PROBE_JSON_BYTES:
            return [], 0
        with open(path, "rb") as f:
            value = json.loads(f.read().decode("utf-8", errors="replace").strip() or "null")
        return (value if isinstance(value, list) else [value])[:PROBE_DOCUMENTS], size
    with open(path, "rb") as f:
        data = f.read(PROBE_FILE_BYTES)
    lines = data.split(b"\n")
    if len(data) == PROBE_FILE_BYTES:
        lines = lines[:-1]   # cut short: its last line is not whole
    out = []
    for line in lines[:PROBE_DOCUMENTS * 2]:
        if len(out) >= PROBE_DOCUMENTS:
            break
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out, len(data)
