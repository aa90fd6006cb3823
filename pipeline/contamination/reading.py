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
    fmt = reading.format_for(path)
    if fmt in ("jsonl", "txt"):
        return _scanned(path, lambda docs, stats: _line_tables(
            _line_blocks(path, start, end), path, fmt, start == 0, reading, docs, stats, lookup), reading)
    if fmt == "json":
        return _scanned(path, lambda docs, stats: _json_tables(_read_all(path), path, reading, docs, stats, lookup),
                        reading)
    return _scanned(path, lambda docs, stats: _read_parquet(path, reading, docs, stats, lookup), reading)


def scan_bytes(path: str, data: bytes, reading: Reading, lookup: Lookup) -> tuple[pa.Table, FileStats]:
    """A whole file already in memory (the Ray engine reads files so), scanned as scan_range scans
    it from disk."""
    fmt = reading.format_for(path)
    if fmt == "json":
        return _scanned(path, lambda docs, stats: _json_tables(data, path, reading, docs, stats, lookup), reading)
    if fmt == "parquet":
        return _scanned(path, lambda docs, stats: list(
            _parquet_tables(pa.BufferReader(data), path, reading, docs, stats, lookup)), reading)
    return _scanned(path, lambda docs, stats: _line_tables(
        _split_lines(data), path, fmt, True, reading, docs, stats, lookup), reading)


def _scanned(path: str, tables_of, reading: Reading) -> tuple[pa.Table, FileStats]:
    """`tables_of(docs, stats)` -> match tables; a file that cannot be read is one ShardError."""
    stats = FileStats(path)
    docs = Documents(reading.fields, reading.id_field)
    try:
        tables = tables_of(docs, stats)
    except ShardError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ShardError(f"{type(exc).__name__}: {exc}") from None
    return smallest_per_hash(tables), stats


def _line_tables(blocks: Iterator[bytes], path: str, fmt: str, from_start: bool, reading: Reading,
                 docs: Documents, stats: FileStats, lookup: Lookup) -> list[pa.Table]:
    tables = []
    for i, block in enumerate(blocks):
        if i == 0 and from_start and looks_binary(block[:65536]):
            raise ShardError("not text (NUL bytes, or mostly bytes that are not UTF-8)")
        texts, keys = parse_lines(block, fmt, docs, stats)
        tables.append(scan_documents(texts, keys, path, lookup, reading.n, stats))
    return tables


def _json_tables(data: bytes, path: str, reading: Reading, docs: Documents, stats: FileStats,
                 lookup: Lookup) -> list[pa.Table]:
    texts, keys = parse_json(data, docs, stats)
    return [scan_documents(part_texts, part_keys, path, lookup, reading.n, stats)
            for part_texts, part_keys in _doc_batches(texts, keys)]


def _read_all(path: str) -> bytes:
    with _open(path) as f:
        return f.read()


def _read_parquet(path: str, reading: Reading, docs: Documents, stats: FileStats, lookup: Lookup) -> list[pa.Table]:
    with _open(path) as f:
        return list(_parquet_tables(f, path, reading, docs, stats, lookup))


def _split_lines(data: bytes) -> Iterator[bytes]:
    """Whole lines of `data`, BATCH_BYTES at a time (as _line_blocks reads them from a file)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", min(start + BATCH_BYTES, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


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
