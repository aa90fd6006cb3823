"""Reading one corpus file (or a byte range of a jsonl/txt file) into bounded batches of
documents and scanning them: what both engines share (`Reading`, `scan_range`, the batching)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.contamination.corpora import CorpusSpec, format_of, is_url
from pipeline.contamination.index import Lookup
from pipeline.contamination.scan import (
    Documents,
    FileStats,
    ShardError,
    looks_binary,
    parse_json,
    parse_lines,
    parse_parquet_batch,
    scan_documents,
    smallest_per_hash,
)

BATCH_BYTES = 8 << 20            # read and scanned at a time (the arrays of a batch are ~30x its size)


@dataclass(frozen=True)
class Reading:
    """How a corpus's files are read and compared: what a worker needs besides the index."""
    format: str | None
    fields: tuple[str, ...]
    id_field: str | None
    n: int

    @classmethod
    def of(cls, spec: CorpusSpec) -> Reading:
        return cls(spec.format, tuple(spec.fields), spec.id_field, spec.ngram)

    def format_for(self, path: str) -> str:
        fmt = self.format or format_of(path.split("?")[0])
        if fmt is None:
            raise ShardError("its format cannot be told from its name; set `format` for the corpus")
        return fmt


def _open(path: str):
    if is_url(path):
        import fsspec
        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def _line_blocks(path: str, start: int, end: int | None) -> Iterator[bytes]:
    """Whole lines whose first byte lies in [start, end), BATCH_BYTES at a time."""
    with _open(path) as f:
        if start:
            f.seek(start - 1)
            f.readline()   # the line holding byte start-1 belongs to the range before
        pos = f.tell()
        while end is None or pos < end:
            want = BATCH_BYTES if end is None else min(BATCH_BYTES, end - pos)
            block = f.read(want)
            if not block:
                return
            if not block.endswith(b"\n"):
                block += f.readline()
            pos += len(block)
            yield block


def _doc_batches(texts: list[str], keys: list) -> Iterator[tuple[list[str], list]]:
    """Documents in batches of about BATCH_BYTES/3 characters."""
    budget, start, size = BATCH_BYTES // 3, 0, 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= budget:
            yield texts[start:i + 1], keys[start:i + 1]
            start, size = i + 1, 0
    if start < len(texts):
        yield texts[start:], keys[start:]


def scan_range(path: str, start: int, end: int | None, reading: Reading, lookup: Lookup) -> tuple[pa.Table, FileStats]:
    """One file, or a byte range of a jsonl/txt file: its matches and what it held."""
    stats = FileStats(path)
    fmt = reading.format_for(path)
    docs = Documents(reading.fields, reading.id_field)
    tables = []
    try:
        if fmt in ("jsonl", "txt"):
            for i, block in enumerate(_line_blocks(path, start, end)):
                if i == 0 and start == 0 and looks_binary(block[:65536]):
                    raise ShardError("not text (NUL bytes, or mostly bytes that are not UTF-8)")
                texts, keys = parse_lines(block, fmt, docs, stats)
                tables.append(scan_documents(texts, keys, path, lookup, reading.n, stats))
        elif fmt == "json":
            with _open(path) as f:
                texts, keys = parse_json(f.read(), docs, stats)
            for part_texts, part_keys in _doc_batches(texts, keys):
                tables.append(scan_documents(part_texts, part_keys, path, lookup, reading.n, stats))
        else:
            with _open(path) as f:
                tables += _parquet_tables(f, path, reading, docs, stats, lookup)
    except ShardError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ShardError(f"{type(exc).__name__}: {exc}") from None
    return smallest_per_hash(tables), stats


def _parquet_tables(source, path: str, reading: Reading, docs: Documents, stats: FileStats,
                    lookup: Lookup) -> Iterator[pa.Table]:
    """The matches of a parquet file (an open file or a buffer), a batch of rows at a time, reading
    only the columns the fields name."""
    parquet = pq.ParquetFile(source)
    wanted = sorted({name.split(".")[0] for name in (*reading.fields, reading.id_field or "") if name})
    columns = [c for c in wanted if c in parquet.schema_arrow.names]
    for batch in parquet.iter_batches(batch_size=65536, columns=columns):
        texts, keys = parse_parquet_batch(batch, docs, stats)
        yield scan_documents(texts, keys, path, lookup, reading.n, stats)
