"""schema.records, schema.to_frame and the JSON helpers give exactly what their plain Arrow /
json.dumps definitions give (values and Python types), on every kind of column the tables hold."""

import io
import json
import math
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import schema
from pipeline.rows import _types_mapper


def reference_records(df: pd.DataFrame) -> list[dict]:
    """The definition: Arrow's conversion of the frame, then json.loads of each JSON cell."""
    rows = pa.Table.from_pandas(df, preserve_index=False).to_pylist()
    for row in rows:
        for name in schema.JSON_COLUMNS & set(row):
            row[name] = json.loads(row[name]) if row[name] is not None else None
    return rows


def reference_frame(rows: list[dict], table_schema: pa.Schema) -> pd.DataFrame:
    names = table_schema.names
    encoded = [{n: (schema.stable_json(r.get(n)) if n in schema.JSON_COLUMNS and r.get(n) is not None else r.get(n))
                for n in names} for r in rows]
    return pa.Table.from_pylist(encoded, schema=table_schema).to_pandas(types_mapper=_types_mapper)


def assert_same(a, b, path="$"):
    """Equal values of the same types, all the way down (NaN equal to NaN)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for key in a:
            assert_same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    elif isinstance(a, datetime):
        assert (a, a.utcoffset(), type(a.tzinfo)) == (b, b.utcoffset(), type(b.tzinfo)), path
    else:
        assert a == b, path


def round_trip(df: pd.DataFrame) -> pd.DataFrame:
    """What the lake's IO manager hands an asset: the frame written to parquet and read back."""
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), buffer)
    return pq.read_table(io.BytesIO(buffer.getvalue())).to_pandas()


def mixed_frame() -> pd.DataFrame:
    stamps = pd.Series([datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), None, datetime(2020, 5, 6, tzinfo=UTC)],
                       dtype="datetime64[us, UTC]")
    return pd.DataFrame({
        "text": ["甲", None, "丙"],
        "text_nan": ["a", np.nan, None],
        "all_none": [None, None, None],
        "count": pd.array([1, None, 3], dtype="Int64"),
        "plain_int": np.array([1, 2, 3], dtype=np.int64),
        "small_int": np.array([1, 2, 3], dtype=np.int32),
        "score": [0.5, np.nan, 1.0],
        "flag": [True, False, True],
        "flag_null": [True, None, False],
        "choices": [np.array(["A", "B"], dtype=object), None, np.array(["C", None], dtype=object)],
        "numbers": [np.array([1, 2]), np.array([], dtype=np.int64), None],
        "created_at": stamps,
        "stamp_ns": stamps.astype("datetime64[ns, UTC]"),
        "stamp_local": stamps.dt.tz_convert("Asia/Shanghai"),
        "naive": stamps.dt.tz_localize(None),
        "metadata": ['{"b": 1, "a": [1, 2.5, null]}', None, '{"s": "中文\\"引号\\""}'],
        "messages": ['[{"role": "user", "content": "問"}]', "[]", None],
        "details": [None, None, None],
        "blob": [b"\x00\x01", None, b""],
    })


def test_records_equals_arrow_on_every_kind_of_column():
    df = mixed_frame()
    assert_same(schema.records(df), reference_records(df))


def test_records_after_parquet_and_on_slices():
    df = round_trip(mixed_frame())
    assert_same(schema.records(df), reference_records(df))
    part = df[df["text"].notna()]   # a filtered frame: gaps in the index
    assert_same(schema.records(part), reference_records(part))
    assert schema.records(df.iloc[:0]) == []


def test_records_types_are_plain_python():
    row = schema.records(round_trip(mixed_frame()))[0]
    assert type(row["count"]) is int and type(row["plain_int"]) is int
    assert row["choices"] == ["A", "B"] and type(row["choices"]) is list
    assert schema.records(round_trip(mixed_frame()))[1]["count"] is None
    assert schema.records(mixed_frame())[1]["text_nan"] is None
    assert row["metadata"] == {"b": 1, "a": [1, 2.5, None]}


def test_records_json_columns_are_parsed_one_document_each():
    # cells that only make sense joined together are not accepted as documents
    df = pd.DataFrame({"metadata": ['{"a": [1', '2]}']})
    with pytest.raises(json.JSONDecodeError):
        schema.records(df)


@pytest.mark.parametrize("table_schema", [schema.ITEMS, schema.RESPONSES, schema.SCORES, schema.JUDGEMENTS,
                                          schema.PROMPTS, schema.DEDUP_CLUSTERS])
def test_to_frame_equals_arrow_from_pylist(table_schema):
    rows = []
    for i in range(4):
        row = {}
        for field in table_schema:
            t = field.type
            if i == 3:
                value = None
            elif field.name in schema.JSON_COLUMNS:
                value = [{"role": "user", "content": f"問{i}"}] if field.name == "messages" else {"k": i, "中": [i, None]}
            elif pa.types.is_string(t):
                value = f"{field.name}-{i}" if i != 1 else None
            elif pa.types.is_integer(t):
                value = i
            elif pa.types.is_floating(t):
                value = i / 3 if i != 2 else None
            elif pa.types.is_boolean(t):
                value = bool(i % 2)
            elif pa.types.is_list(t) and pa.types.is_floating(t.value_type):
                value = [-0.5, i / 3] if i != 2 else []
            elif pa.types.is_list(t):
                value = ["A", f"B{i}"] if i != 2 else []
            elif pa.types.is_timestamp(t):
                value = datetime(2026, 1, 1, i, tzinfo=UTC)
            else:
                raise AssertionError(t)
            row[field.name] = value
        rows.append(row)
    got, want = schema.to_frame(rows, table_schema), reference_frame(rows, table_schema)
    assert list(got.dtypes) == list(want.dtypes)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert_same(schema.records(got), reference_records(want))
    empty = schema.to_frame([], table_schema)
    assert list(empty.columns) == table_schema.names and list(empty.dtypes) == list(reference_frame([], table_schema).dtypes)


def test_to_frame_rejects_unknown_columns_and_encoded_json():
    with pytest.raises(ValueError, match="not in schema"):
        schema.to_frame([{"item_id": "a", "nope": 1}], schema.SCORES)
    with pytest.raises(TypeError, match="encoded string"):
        schema.to_frame([{"details": "{}"}], schema.SCORES)


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [1.5, float("nan"), float("inf"), -float("inf"), True, None, '中文"\\\n']},
    ("x", 1), "plain", 3, 2.0, None, {1: "a", 2: (3, 4)}, {"k": {"z": {}, "a": []}}, [1e300, -0.0, 10**30],
])
def test_json_helpers_match_json_dumps(value):
    assert schema.stable_json(value) == json.dumps(value, ensure_ascii=False, sort_keys=True)
    assert schema.canonical_json(value) == json.dumps(value, ensure_ascii=False, sort_keys=True,
                                                      separators=(",", ":"), default=list)
    assert schema.stable_hash({"v": value, "s": {3}}) == schema.stable_hash({"s": [3], "v": value})


def test_gc_is_paused_only_inside_and_restored_as_it_was():
    import gc

    assert gc.isenabled()
    with schema.gc_paused():
        assert not gc.isenabled()
        with schema.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()    # the inner block does not turn it back on early
    assert gc.isenabled()
    gc.disable()
    try:
        schema.records(mixed_frame())
        assert not gc.isenabled()    # a caller that had it off keeps it off
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), schema.gc_paused():
        raise RuntimeError("inside")
    assert gc.isenabled()


def test_the_warehouse_tables_are_declared_once_here():
    from pipeline import aggregate, history
    from pipeline.warehouse import CLEAN_COLUMNS, PAPER_TABLE_TYPES

    assert aggregate.PAPER_TABLE_COLUMNS == schema.PAPER_TABLES.names
    assert aggregate.PAPER_TABLE_COLUMNS[:len(aggregate.RUN_KEYS)] == aggregate.RUN_KEYS
    assert CLEAN_COLUMNS == ["corpus", *schema.PAPER_TABLES.names]
    assert PAPER_TABLE_TYPES.startswith('CAST("model" AS VARCHAR) AS "model", ')
    assert history.TABLES is schema.HISTORY_TABLES
    for table, table_schema in schema.HISTORY_TABLES.items():
        assert table_schema.names[-len(schema.HISTORY_COLUMNS):] == schema.HISTORY_COLUMNS.names, table
    notes = schema.column_notes(schema.PAPER_TABLES)
    assert set(notes) < set(schema.PAPER_TABLES.names)
    assert notes["coverage"] == "n_scored / n_items" and "model" not in notes
    assert schema.column_notes(schema.PAPER_TABLES_CLEAN) == notes
    assert set(schema.LOAD_DEFAULTS) <= {"scores", *schema.HISTORY_TABLES}
