"""Reading one corpus file (or a byte range of a jsonl/txt file) into bounded batches of
documents and scanning them: what both engines share (`Reading`, `scan_range`, the batching).

Memory stays bounded whatever a line's length. jsonl and txt files are read BATCH_BYTES of whole
lines at a time; a line longer than its cap is never held whole (`LongLine`, read LINE_CHUNK at a
time):
- txt (cap LONG_TXT_LINE): the document is scanned in windows of WINDOW_CHARS characters. Each
  window ends where the next begins plus at least n-1 key characters (the n-gram) and
  SNIPPET_CHARS characters (the evidence's snippet), and keeps only the matches that start before
  the next window: no n-gram is lost or found twice, and the rows (document id, offset in the
  document, snippet) are those of one scan of the whole line. (A window that holds fewer than n
  key characters grows, up to WINDOW_GROWTH times: only an n-gram whose characters lie further
  apart than that, across millions of spaces or punctuation marks, is not looked up.)
- jsonl (cap JSONL_LINE_CAP): one bad line, with a reason naming its length, read through but
  not parsed (a JSON value has no bounded-memory parse; split the document, or read it as txt).
A line shorter than its cap is at most BATCH_BYTES plus the cap; a json file is read whole (use
jsonl for big ones); parquet is read a batch of rows at a time.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.contamination.corpora import CorpusSpec, format_of, is_url
from pipeline.contamination.index import Lookup
from pipeline.contamination.ngrams import keyed
from pipeline.contamination.scan import (
    SNIPPET_CHARS,
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
LONG_TXT_LINE = 8 << 20          # a txt line longer than this (bytes) is scanned in windows ...
WINDOW_CHARS = 3 << 20           # ... of this many characters (up to WINDOW_GROWTH times more)
WINDOW_GROWTH = 8
JSONL_LINE_CAP = 64 << 20        # a jsonl line longer than this (bytes) is a bad line, not parsed
LINE_CHUNK = 1 << 20             # a long line is read this much at a time


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


class LongLine:
    """A line longer than its cap, from its first bytes (`head`) on: read LINE_CHUNK at a time,
    never whole. The reader that yields it goes on once it is read through."""

    def __init__(self, head: bytes, file):
        self.head, self._file = head, file
        self.size = 0            # bytes read so far, its newline included
        self._left = True

    def _next(self) -> bytes | None:
        if not self._left:
            return None
        chunk = self.head or self._file.readline(LINE_CHUNK)
        self.head = b""
        self.size += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            self._left = False
            return chunk[:-1]
        return chunk

    def chunks(self) -> Iterator[bytes]:
        """The line's bytes, a chunk at a time, without its newline."""
        while (chunk := self._next()) is not None:
            if chunk:
                yield chunk

    def drain(self) -> None:
        while self._next() is not None:
            pass


def _skip_line(f) -> None:
    """Past the end of the line at the file's position, LINE_CHUNK at a time."""
    while True:
        chunk = f.readline(LINE_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return


def _line_blocks(f, start: int, end: int | None, cap: int) -> Iterator[bytes | LongLine]:
    """Whole lines whose first byte lies in [start, end), BATCH_BYTES at a time; a line longer
    than `cap` bytes is a LongLine of its own."""
    if start:
        f.seek(start - 1)
        _skip_line(f)   # the line holding byte start-1 belongs to the range before
    pos = f.tell()
    while end is None or pos < end:
        block = f.read(BATCH_BYTES if end is None else min(BATCH_BYTES, end - pos))
        if not block:
            return
        if not block.endswith(b"\n"):
            cut = block.rfind(b"\n") + 1
            want = cap - (len(block) - cut) + 1   # enough to see the newline of a line of `cap` bytes
            rest = f.readline(want) if want > 0 else b""
            if not rest.endswith(b"\n") and (want <= 0 or len(rest) == want):
                if cut:
                    yield block[:cut]
                line = LongLine(block[cut:] + rest, f)
                del block, rest
                yield line
                line.drain()   # in case the reader stopped half way
                pos = f.tell()
                continue
            block += rest
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
        def tables(docs: Documents, stats: FileStats) -> list[pa.Table]:
            with _open(path) as f:
                return _line_tables(_line_blocks(f, start, end, _cap(fmt)), path, fmt, start == 0, reading,
                                    docs, stats, lookup)
        return _scanned(path, tables, reading)
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
        _line_blocks(io.BytesIO(data), 0, None, _cap(fmt)), path, fmt, True, reading, docs, stats, lookup), reading)


def _cap(fmt: str) -> int:
    return LONG_TXT_LINE if fmt == "txt" else JSONL_LINE_CAP


def _scanned(path: str, tables_of, reading: Reading) -> tuple[pa.Table, FileStats]:
    """`tables_of(docs, stats)` -> match tables; a file that cannot be read is one ShardError."""
    stats = FileStats(path)
    docs = Documents(reading.fields, reading.id_field)
    try:
        tables = tables_of(docs, stats)
    except ShardError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ShardError(f"{type(exc).__name__}: {_one_line(exc)}") from None
    except RecursionError:   # a record nested deeper than the interpreter walks
        raise ShardError("a record is nested too deeply to read") from None
    return smallest_per_hash(tables), stats


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _line_tables(blocks: Iterator[bytes | LongLine], path: str, fmt: str, from_start: bool, reading: Reading,
                 docs: Documents, stats: FileStats, lookup: Lookup) -> list[pa.Table]:
    tables = []
    for i, block in enumerate(blocks):
        head = block.head if isinstance(block, LongLine) else block
        if i == 0 and from_start and looks_binary(head[:65536]):
            raise ShardError("not text (NUL bytes, or mostly bytes that are not UTF-8)")
        if isinstance(block, LongLine):
            tables += _long_text(block, path, reading, stats, lookup) if fmt == "txt" else _long_jsonl(block, stats)
            continue
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


def _long_jsonl(line: LongLine, stats: FileStats) -> list[pa.Table]:
    """A jsonl line over JSONL_LINE_CAP: read through (bounded), counted as one bad line."""
    line.drain()
    stats.bytes += line.size
    stats.rows += 1
    stats.bad_rows += 1
    stats.first_error = stats.first_error or (
        f"a line of {line.size:,} bytes is longer than the {JSONL_LINE_CAP:,} a jsonl line may hold: skipped, not "
        "parsed (split the document into several lines, or read the file as txt)")
    return []


def _decoded(line: LongLine, stats: FileStats) -> Iterator[str]:
    """The line's text, a chunk at a time (a character split between chunks is kept whole)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in line.chunks():
        text = decoder.decode(chunk)
        if "\ufffd" in text:
            stats.invalid_utf8 += max(text.count("\ufffd") - chunk.count("\ufffd".encode()), 0)
        yield text
    text = decoder.decode(b"", final=True)
    stats.invalid_utf8 += text.count("\ufffd")
    yield text


def _long_text(line: LongLine, path: str, reading: Reading, stats: FileStats, lookup: Lookup) -> list[pa.Table]:
    """A txt line over LONG_TXT_LINE, as one document scanned in windows: the rows one scan of
    the whole line gives (its id is the hash of the whole text, offsets are in the document)."""
    sha, tables, buffer, base, limit, blank = hashlib.sha1(), [], "", 0, WINDOW_CHARS, True
    for text in _decoded(line, stats):
        buffer += text
        while len(buffer) >= limit:
            cut = _next_window(buffer[:limit], reading.n)
            if cut <= 0 and limit < WINDOW_GROWTH * WINDOW_CHARS:
                limit *= 2   # too few key characters to cut anywhere: a wider window
                continue
            cut = cut if cut > 0 else limit - SNIPPET_CHARS   # a run of punctuation or space that long breaks n-grams
            tables.append(_window(buffer[:limit], cut, base, path, reading, lookup))
            sha.update(buffer[:cut].encode("utf-8", "surrogatepass"))
            blank = blank and not buffer[:cut].strip()
            buffer, base, limit = buffer[cut:], base + cut, WINDOW_CHARS
    tables.append(_window(buffer, len(buffer), base, path, reading, lookup))
    sha.update(buffer.encode("utf-8", "surrogatepass"))
    stats.bytes += line.size
    if blank and not buffer.strip():
        return []   # a blank line, as parse_lines skips it
    stats.rows += 1
    stats.documents += 1
    stats.characters += base + len(buffer)
    name = f"{os.path.basename(path)}@{sha.hexdigest()[:12]}"   # scan.doc_id of the whole text
    return [t.set_column(t.schema.get_field_index("doc_id"), "doc_id", pa.array([name] * t.num_rows, pa.string()))
            for t in tables if t.num_rows]


def _next_window(window: str, n: int) -> int:
    """Where the window after `window` starts: every n-gram of key characters (and its snippet)
    that starts before it lies whole in `window`; 0 when there is no such place."""
    size = 4 * (n + SNIPPET_CHARS)
    while True:
        start = max(len(window) - size, 0)
        origin = keyed([window[start:]]).origin   # each character is keyed on its own: a slice's key is a slice
        if len(origin) >= n - 1 or start == 0:
            break
        size *= 4
    if len(origin) >= n - 1:
        cut = start + int(origin[len(origin) - (n - 1)])   # the first n-gram that would run past the end
    else:
        cut = int(origin[0]) if len(origin) else len(window)   # no whole n-gram in the window
    return min(cut, len(window) - SNIPPET_CHARS)


def _window(text: str, cut: int, base: int, path: str, reading: Reading, lookup: Lookup) -> pa.Table:
    """The matches of one window that start before `cut`, offsets moved to the document's."""
    table = scan_documents([text], [""], path, lookup, reading.n)
    if cut < len(text):
        table = table.filter(pc.less(table["offset"], cut))
    return table.set_column(table.schema.get_field_index("offset"), "offset", pc.add(table["offset"], base))


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
