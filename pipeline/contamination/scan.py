"""The one scan function both engines call, and the readers that turn a corpus file into documents.

`scan_documents` takes a batch of documents and returns, for each item n-gram it finds, one piece
of evidence: the file, the document id, the character offset in the document's text and a short
snippet of the original text there. Which occurrence is kept does not depend on how the corpus was
split into batches, files or workers: of all occurrences, the smallest (file, document id, offset).
So the local engine and Ray give identical rows.

A document's text is its configured fields joined by newlines (lists flattened, in order). Its id
is its `id_field` value, else `<file name>@<first 12 hex digits of the text's sha1>`: content, not
position, so no engine has to know line numbers.
"""

from __future__ import annotations

import hashlib
import json
import json.scanner
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.contamination.index import Lookup
from pipeline.contamination.ngrams import keyed

SNIPPET_CHARS = 48
# documents kept per matched n-gram: enough to find one that holds an item's question and its answer
# together (a famous line is in thousands of documents; an item's own wording in few)
DOCS_PER_HASH = 8
MATCHES = pa.schema([
    ("hash", pa.uint64()),     # the item n-gram found
    ("path", pa.string()),     # the corpus file
    ("doc_id", pa.string()),
    ("offset", pa.int64()),    # characters into the document's text
    ("snippet", pa.string()),  # the original text from there
])


@dataclass
class FileStats:
    """What one corpus file held, summed over its batches."""
    path: str
    documents: int = 0
    characters: int = 0
    bytes: int = 0
    rows: int = 0              # lines (jsonl, txt) or records (json, parquet) that are not blank
    bad_rows: int = 0          # lines or records that could not be read (not JSON, not a document)
    invalid_utf8: int = 0      # byte sequences that are not UTF-8 (read as U+FFFD, which no key holds)
    fields_found: dict[str, int] = field(default_factory=dict)   # field -> documents holding it
    first_error: str | None = None

    def add(self, other: FileStats) -> None:
        self.documents += other.documents
        self.characters += other.characters
        self.bytes += other.bytes
        self.rows += other.rows
        self.bad_rows += other.bad_rows
        self.invalid_utf8 += other.invalid_utf8
        for k, v in other.fields_found.items():
            self.fields_found[k] = self.fields_found.get(k, 0) + v
        self.first_error = self.first_error or other.first_error

    @property
    def empty(self) -> bool:
        """No line or record that is not blank: a 0-byte or whitespace-only file, an empty list or
        table."""
        return self.rows == 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class ShardError(Exception):
    """A corpus file that cannot be read at all: it becomes a quarantine row, the others go on."""


# ---- documents -------------------------------------------------------------------------------

def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def _add_strings(value: Any, out: list[str]) -> None:
    """`out.extend(_strings(value))`, without a generator per list: a document's fields are mostly
    lists of strings."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, str):
                out.append(v)
            else:
                _add_strings(v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(str(value))


def _get(record: Any, path: Sequence[str]) -> Any:
    value = record
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list):   # a.b over a list of objects: each one's b
            value = [v.get(key) for v in value if isinstance(v, dict)]
        else:
            return None
    return value


class Documents:
    """Texts and ids from records (dicts), per the corpus's fields."""

    def __init__(self, fields: Sequence[str], id_field: str | None):
        self.fields = [(f, f.split(".")) for f in fields]
        self.id_path = id_field.split(".") if id_field else None
        # (name, first key, the rest of the path): the first step is a plain dict.get on the record
        self._steps = [(name, path[0], path[1:]) for name, path in self.fields]

    def extract(self, records: Sequence[Any], stats: FileStats) -> tuple[list[str], list[str | None]]:
        texts, keys = [], []
        found = stats.fields_found
        steps, id_path = self._steps, self.id_path
        for record in records:
            if not isinstance(record, dict):
                stats.bad_rows += 1
                stats.first_error = stats.first_error or f"a record is a {type(record).__name__}, not an object"
                continue
            parts: list[str] = []
            for name, first, rest in steps:
                value = record.get(first)
                if rest and value is not None:
                    value = _get(value, rest)
                if value is not None:
                    found[name] = found.get(name, 0) + 1
                    _add_strings(value, parts)
            text = "\n".join(filter(None, parts))
            if not text:
                continue
            texts.append(text)
            keys.append(None if id_path is None else _id_text(
                record.get(id_path[0]) if len(id_path) == 1 else _get(record, id_path)))
        return texts, keys


def _id_text(value: Any) -> str | None:
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def decode(data: bytes, stats: FileStats) -> str:
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text:
        stats.invalid_utf8 += text.count("\ufffd") - data.count("\ufffd".encode())
    return text


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or mostly bytes that are not UTF-8: not a text file."""
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    return text.count("\ufffd") > max(8, len(text) // 20)


def parse_lines(data: bytes, fmt: str, docs: Documents, stats: FileStats) -> tuple[list[str], list[str | None]]:
    """jsonl or txt bytes (whole lines) -> documents: a txt line is a document."""
    stats.bytes += len(data)
    text = decode(data, stats)
    lines = text.split("\n")
    if fmt == "txt":
        texts = [line for line in lines if line.strip()]
        stats.rows += len(texts)
        return texts, [None] * len(texts)
    records = []
    for line in lines:
        if not line.strip():
            continue
        stats.rows += 1
        try:
            records.append(_line_value(line))
        except ValueError as exc:
            stats.bad_rows += 1
            stats.first_error = stats.first_error or f"a line is not JSON ({exc.msg})"
        except RecursionError:   # `[[[[...` past the interpreter's depth: a bad line, not a crash
            stats.bad_rows += 1
            stats.first_error = stats.first_error or "a line is JSON nested too deeply to read"
    return docs.extract(records, stats)


_SCAN = json.scanner.make_scanner(json.JSONDecoder())   # the C scanner json.loads itself calls
_SPACE = re.compile(r"[ \t\n\r]*")                       # JSON's whitespace, as json.loads skips it


def _line_value(line: str) -> Any:
    """json.loads(line), without its two Python calls around the C scanner per line (a fifth of a
    scan's time on a corpus of short documents). Whatever the scanner does not take whole goes
    to json.loads, for its own error."""
    start = _SPACE.match(line).end()
    try:
        value, end = _SCAN(line, start)
    except (StopIteration, ValueError):
        return json.loads(line)
    if _SPACE.match(line, end).end() != len(line):
        return json.loads(line)
    return value


def parse_json(data: bytes, docs: Documents, stats: FileStats) -> tuple[list[str], list[str | None]]:
    """A json file: a list of documents, or one document."""
    stats.bytes += len(data)
    text = decode(data, stats)
    if not text.strip():
        return [], []   # an empty file: said as one, not quarantined as bad JSON
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ShardError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise ShardError("not valid JSON: nested too deeply to read") from None
    records = value if isinstance(value, list) else [value]
    stats.rows += len(records)
    return docs.extract(records, stats)


def parse_parquet_batch(batch: pa.RecordBatch | pa.Table, docs: Documents,
                        stats: FileStats) -> tuple[list[str], list[str | None]]:
    stats.bytes += batch.nbytes
    stats.rows += batch.num_rows
    return docs.extract(batch.to_pylist(), stats)


# ---- the scan --------------------------------------------------------------------------------

def doc_id(path: str, text: str, key: str | None) -> str:
    return key if key is not None else f"{os.path.basename(path)}@{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def scan_documents(texts: Sequence[str], keys: Sequence[str | None], path: str, lookup: Lookup, n: int,
                   stats: FileStats | None = None) -> pa.Table:
    """The item n-grams found in these documents (one file's), with evidence: per hash, the first
    DOCS_PER_HASH documents that hold it (smallest id first), each at its first offset."""
    if stats is not None:
        stats.documents += len(texts)
        stats.characters += sum(map(len, texts))
    if not texts:
        return MATCHES.empty_table()
    key = keyed(texts)
    pos, hashes = key.hashes(n)
    found = lookup(hashes)
    if not found.any():
        return MATCHES.empty_table()
    pos, hashes = pos[found], hashes[found]
    doc = key.text_of[pos]
    offset = key.origin[pos] - key.starts[doc]
    # ids only for the documents that matched; per (hash, document) its smallest offset is kept
    matched_docs = np.unique(doc)
    ids = {int(d): doc_id(path, texts[d], keys[d]) for d in matched_docs.tolist()}
    names = sorted(set(ids.values()))
    rank = {name: r for r, name in enumerate(names)}
    doc_rank = np.fromiter((rank[ids[d]] for d in doc.tolist()), dtype=np.int64, count=len(doc))
    order = np.lexsort((offset, doc_rank, hashes))
    hashes, doc_rank, offset, doc = hashes[order], doc_rank[order], offset[order], doc[order]
    first = _first_k_docs(hashes, doc_rank)
    snippets = [texts[d][o:o + SNIPPET_CHARS] for d, o in zip(doc[first].tolist(), offset[first].tolist())]
    return pa.table({"hash": hashes[first], "path": [path] * len(first),
                     "doc_id": [names[r] for r in doc_rank[first].tolist()], "offset": offset[first],
                     "snippet": snippets}, schema=MATCHES)


def _first_k_docs(hashes: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Positions of rows sorted by (hash, doc, offset) that are the first of their (hash, doc)
    and among the first DOCS_PER_HASH documents of their hash."""
    new_pair = np.ones(len(hashes), dtype=bool)
    new_pair[1:] = (hashes[1:] != hashes[:-1]) | (docs[1:] != docs[:-1])
    pairs = np.flatnonzero(new_pair)
    pair_hash = hashes[pairs]
    new_hash = np.ones(len(pairs), dtype=bool)
    new_hash[1:] = pair_hash[1:] != pair_hash[:-1]
    # rank of each (hash, doc) pair within its hash
    start = np.maximum.accumulate(np.where(new_hash, np.arange(len(pairs)), 0))
    return pairs[np.arange(len(pairs)) - start < DOCS_PER_HASH]


def smallest_per_hash(tables: Sequence[pa.Table]) -> pa.Table:
    """Many scans' rows merged as one scan would give them: per hash, its first DOCS_PER_HASH
    documents by (path, doc_id), each at its smallest offset. Independent of how the corpus was
    split into batches, files or workers, so both engines give identical rows."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return MATCHES.empty_table()
    table = pa.concat_tables(tables).combine_chunks()
    order = pa.compute.sort_indices(table, sort_keys=[("hash", "ascending"), ("path", "ascending"),
                                                      ("doc_id", "ascending"), ("offset", "ascending")])
    table = table.take(order)
    h = table["hash"].to_numpy()
    doc_codes = pa.compute.binary_join_element_wise(table["path"], table["doc_id"], "\x00")
    docs = pa.compute.dictionary_encode(doc_codes).combine_chunks().indices.to_numpy()
    # dictionary codes follow first appearance, and within a hash rows are sorted by (path, doc_id):
    # equal codes are equal documents, which is all _first_k_docs compares
    return table.take(pa.array(_first_k_docs(h, docs)))
