"""No input crashes a reader: every benchmark card's `parse` (reached through parse_source, over
the generic source readers of pipeline/sources: text decoding, JSON arrays, JSONL lines) and the
corpus readers of the contamination scan (pipeline/contamination/scan.py and reading.py) are fed
arbitrary bytes, text, JSON shapes and CSV/TSV shapes, and the bundled samples with a field
replaced by any JSON value or bytes cut out.

Benchmark readers. One file of a benchmark's sample layout (a copy) is replaced, and the source is
parsed. The property: every raw row ends as an item or as a quarantine row with a file, a locator
and a reason; the rows of every file are accounted for (no parser stopped part-way, which
`guarded_file` would report as `incomplete`); everything can be stored (schema.RAW_ROWS). The
only exception allowed is the source's own one-line SourceError (a broken side file, no rows).

The JSON-array reader (pipeline/sources/json_array.py) on its own: any bytes give rows (a value,
or a bad row with its reason), or the file's one FileUnreadable / UnicodeDecodeError.

Corpus readers. Any bytes as a jsonl, txt, json or parquet corpus file: the scan gives matches and
counts that add up (rows, bad rows, documents), or the file's one ShardError, nothing else.

Budget and the example database: tests/fuzz/fuzz_budget.py.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from fuzz_budget import budget, seeded  # noqa: F401 - seeded: the autouse fixture
from hypothesis import assume, example, given
from hypothesis import strategies as st

from pipeline import benchmarks, schema
from pipeline.config import SourceSpec
from pipeline.contamination.index import Lookup
from pipeline.contamination.ngrams import keyed
from pipeline.contamination.reading import Reading, scan_bytes
from pipeline.contamination.scan import MATCHES, Documents, FileStats, ShardError, parse_parquet_batch
from pipeline.ingest import parse_source
from pipeline.sources.accounting import FileUnreadable, SourceError, rows_accounted
from pipeline.sources.json_array import read_json_array

SAMPLES = ROOT / "data" / "samples"

# --- shapes -------------------------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=30))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)
CELLS = st.text(st.characters(exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    ["", '"', '""', ",", "\t", "\n", "\r\n", "A", "E", "0", "-1", "1e400", "NaN", "\x00", "\ufeff"])


def _dumps(value: Any, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)   # NaN and Infinity as the bare words, as files hold them


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")   # a lone surrogate: bytes that are not UTF-8


TEXT_BYTES = st.text(max_size=400).map(_utf8)
BOMS = st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])


@st.composite
def json_file(draw) -> bytes:
    """A whole JSON document: a list of values, or one value."""
    value = draw(st.one_of(st.lists(JSON, max_size=6), JSON))
    return draw(BOMS) + _dumps(value, draw(st.booleans())).encode("utf-8")


@st.composite
def jsonl_file(draw) -> bytes:
    lines = draw(st.lists(st.one_of(JSON.map(lambda v: _dumps(v, False)), CELLS), max_size=8))
    return _utf8(draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines))


@st.composite
def table_file(draw, delimiter: str) -> bytes:
    rows = draw(st.lists(st.lists(CELLS, max_size=9), max_size=8))
    out = io.StringIO()
    if draw(st.booleans()):
        csv.writer(out, delimiter=delimiter).writerows(rows)
    else:   # no quoting at all, as hand-written files are
        out.write("\n".join(delimiter.join(row) for row in rows))
    return _utf8(out.getvalue())


@cache
def sample_records(path: Path) -> tuple[list[Any], str]:
    """The sample file's records, and how they are written (json, jsonl or a delimiter)."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".json":
        value = json.loads(text)
        return (value if isinstance(value, list) else [value]), "json"
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()], "jsonl"
    delimiter = "," if path.suffix == ".csv" else "\t"
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)), delimiter


@st.composite
def mutated_sample(draw, path: Path) -> bytes:
    """The sample with one record's field set to any JSON value (or a cell to any text), records
    dropped or repeated."""
    records, how = sample_records(path)
    records = [json.loads(json.dumps(r)) if how in ("json", "jsonl") else list(r) for r in records]
    if records:
        at = draw(st.integers(0, len(records) - 1))
        record = records[at]
        if isinstance(record, dict):
            key = draw(st.one_of(st.sampled_from(sorted(record) or ["id"]), st.text(max_size=6)))
            if draw(st.booleans()):
                record[key] = draw(JSON)
            else:
                record.pop(key, None)
        elif isinstance(record, list) and how not in ("json", "jsonl"):
            if record and draw(st.booleans()):
                record[draw(st.integers(0, len(record) - 1))] = draw(CELLS)
            else:
                records[at] = record[:draw(st.integers(0, len(record)))]
        else:
            records[at] = draw(JSON)
        records = draw(st.sampled_from([records, records + [records[at]], records[:at], records[at:]]))
    if how == "json":
        return _dumps(records, False).encode("utf-8")
    if how == "jsonl":
        return "\n".join(_dumps(r, False) for r in records).encode("utf-8")
    out = io.StringIO()
    csv.writer(out, delimiter=how).writerows(records)
    return _utf8(out.getvalue())


@st.composite
def spliced(draw, path: Path) -> bytes:
    """The sample's bytes with a piece cut out or replaced (a truncated download, a bad copy)."""
    data = path.read_bytes()
    start = draw(st.integers(0, len(data)))
    end = draw(st.integers(start, min(len(data), start + 200)))
    return data[:start] + draw(st.binary(max_size=20)) + data[end:]


def content_for(path: Path) -> st.SearchStrategy[bytes]:
    shapes = {".json": json_file(), ".jsonl": jsonl_file(), ".csv": table_file(","), ".tsv": table_file("\t")}
    return st.one_of(st.binary(max_size=600), TEXT_BYTES, shapes[path.suffix], mutated_sample(path), spliced(path))


# --- benchmark readers --------------------------------------------------------------------------


def sample_files(name: str) -> list[Path]:
    return sorted(p.relative_to(SAMPLES / name) for p in (SAMPLES / name).rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, Path]:
    """A copy of each benchmark's sample layout; a test rewrites one file and puts it back."""
    root = tmp_path_factory.mktemp("layouts")
    return {name: Path(shutil.copytree(SAMPLES / name, root / name)) for name in benchmarks.names()}


def check_parse(spec: SourceSpec) -> None:
    try:
        result = parse_source(spec)
    except SourceError as exc:   # the source as a whole: one line
        assert "\n" not in str(exc) and str(exc).startswith(f"{spec.benchmark}: "), str(exc)
        return
    assert not result.incomplete, result.incomplete   # a parser that stopped part-way (a bug)
    for row in result.quarantine:
        assert row["source_file"] and row["source_locator"] and row["reason"], row
    assert rows_accounted(result.rows()) == result.raw_counts
    frame = schema.to_frame(result.rows(), schema.RAW_ROWS)
    assert len(frame) == len(result.items) + len(result.quarantine)


def test_every_benchmark_has_sample_files_to_fuzz():
    assert set(benchmarks.names()) <= {p.name for p in SAMPLES.iterdir()}
    assert all(sample_files(name) for name in benchmarks.names())


@budget(30)
@given(data=st.data())
@example(data=None)   # the sample itself
@pytest.mark.parametrize("name", sorted(benchmarks.names()))
def test_a_benchmark_file_of_any_content_gives_items_or_quarantine_rows(layouts, name, data):
    files = sample_files(name)
    rel = files[0] if data is None else data.draw(st.sampled_from(files), label="file")
    target = layouts[name] / rel
    original = target.read_bytes()
    content = original if data is None else data.draw(content_for(SAMPLES / name / rel), label="content")
    try:
        target.write_bytes(content)
        check_parse(SourceSpec(name, layouts[name], "fuzz"))
    finally:
        target.write_bytes(original)


@example(b"[" + b"[" * 5000 + b"]" * 5000 + b", 1]")   # an element nested past the recursion limit: one bad row
@budget(60)
@given(data=st.one_of(json_file(), st.binary(max_size=300), TEXT_BYTES))
def test_a_json_array_file_is_rows_or_one_file_error(tmp_path_factory, data):
    """pipeline/sources/json_array.py: each element a value or a bad row with its reason; a file
    that is no array at all is FileUnreadable, one that is not UTF-8 UnicodeDecodeError (both one
    quarantine row of the file, guarded_file)."""
    path = tmp_path_factory.getbasetemp() / "array.json"   # rewritten by each example
    path.write_bytes(data)
    try:
        rows = read_json_array(path)
    except FileUnreadable as exc:
        assert str(exc) and "\n" not in str(exc), str(exc)
        return
    except UnicodeDecodeError:
        return
    for value, reason, text in rows:
        assert (reason is None and text is None) or (value is None and reason and isinstance(text, str))


# --- corpus readers -----------------------------------------------------------------------------

N = 5
PASSAGE = "北冥有鱼其名为鲲鲲之大不知其几千里也"


@cache
def lookup() -> Lookup:
    return Lookup(np.unique(keyed([PASSAGE]).hashes(N)[1]))


def _corpus_json(draw) -> bytes:
    records = draw(st.lists(st.one_of(JSON, st.fixed_dictionaries({"text": JSON, "id": JSON})), max_size=6))
    return _dumps(draw(st.sampled_from([records, records[0] if records else None])), False).encode("utf-8")


@st.composite
def corpus_bytes(draw, fmt: str) -> bytes:
    shaped = {"jsonl": jsonl_file(), "txt": TEXT_BYTES, "json": st.just(b""), "parquet": st.binary(max_size=200)}
    data = draw(st.one_of(st.binary(max_size=600), TEXT_BYTES, shaped[fmt]))
    if fmt == "json" and draw(st.booleans()):
        data = _corpus_json(draw)
    if draw(st.booleans()):
        data += PASSAGE.encode("utf-8")
    return data


def _lines(data: bytes) -> list[str]:
    return [line for line in data.decode("utf-8", errors="replace").split("\n") if line.strip()]


@budget(40)
@given(data=st.data())
@example(data=None)
@pytest.mark.parametrize("fmt", ["jsonl", "txt", "json", "parquet"])
@pytest.mark.parametrize("id_field", [None, "id"])
def test_a_corpus_file_of_any_bytes_is_scanned_or_one_shard_error(fmt, id_field, data):
    content = b"[" * 100_000 + b"]" * 100_000 if data is None else data.draw(corpus_bytes(fmt), label="bytes")
    reading = Reading(fmt, ("text", "title.main"), id_field, N)
    try:
        table, stats = scan_bytes(f"/corpus/file.{fmt}", content, reading, lookup())
    except ShardError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    assert table.schema == MATCHES
    assert 0 <= stats.bad_rows <= stats.rows and stats.documents <= stats.rows
    if fmt in ("jsonl", "txt", "json"):
        assert stats.bytes == len(content)
    if fmt in ("jsonl", "txt"):
        assert stats.rows == len(_lines(content))
    if fmt == "txt":
        assert stats.bad_rows == 0 and stats.documents == stats.rows
    assert all(0 <= found <= stats.rows - stats.bad_rows for found in stats.fields_found.values())


@example(b'{"a": ' * 5000 + b"1" + b"}" * 5000)   # nested past the recursion limit: a bad line, not a crash
@example(b'[[[[' * 2000 + b"\n" + b'{"text": "' + PASSAGE.encode() + b'"}')
@budget(40)
@given(content=st.one_of(jsonl_file(), st.binary(max_size=400)))
def test_jsonl_lines_are_counted_one_way(content):
    """Every line that is not blank is a row: a document, a bad row, or an object without text."""
    try:
        _, stats = scan_bytes("/corpus/file.jsonl", content, Reading("jsonl", ("text",), "id", N), lookup())
    except ShardError:   # not text at all (test_a_corpus_file_of_any_bytes_... checks its message)
        assume(False)
    records = []
    for line in _lines(content):
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):
            continue
    objects = [r for r in records if isinstance(r, dict)]
    assert stats.rows == len(_lines(content))
    assert stats.bad_rows == stats.rows - len(objects)
    assert stats.documents <= len(objects)


@budget(20)
@given(records=st.lists(st.fixed_dictionaries({}, optional={"text": JSON, "id": JSON, "title": JSON}), max_size=5))
def test_a_parquet_batch_of_any_values_gives_documents(records):
    buffer = io.BytesIO()
    try:
        table = pa.Table.from_pylist(records)
        pq.write_table(table, buffer)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        assume(False)   # a shape Arrow or parquet cannot hold is no parquet file
    assume(table.num_columns)   # no column: parquet keeps no row count
    stats = FileStats("x.parquet")
    texts, keys = parse_parquet_batch(pq.read_table(io.BytesIO(buffer.getvalue())), Documents(["text", "title.main"],
                                                                                             "id"), stats)
    assert len(texts) == len(keys) <= stats.rows == len(records)
    assert all(isinstance(t, str) and t for t in texts) and all(k is None or isinstance(k, str) for k in keys)
