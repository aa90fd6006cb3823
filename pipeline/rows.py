"""Rows as plain dicts, to and from frames, and their canonical JSON and hashes.

Every stage builds plain dicts, then `to_frame(rows, schema.SOME_TABLE)` turns them into a pandas
frame with exactly that table's columns and Arrow types (pipeline/schema.py declares them), so
parquet files and DuckDB tables always agree; `records` turns a frame read back into dicts.
`stable_hash` / `canonical_json` / `stable_json` give the same text (and hash) for the same
content in any process; `derive_fields` fills what an item's text determines (script, hashes).
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii
from typing import TYPE_CHECKING, Any

# numpy, pandas and pyarrow are imported in the functions that use them: the row helpers (hashes,
# JSON) are imported by modules the definitions load, and pandas alone costs 0.35 s at start-up
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

# Option labels, in order: choices[i] is labelled OPTION_LETTERS[i] everywhere (prompts, golds,
# baselines, constrained decoding, extraction).
OPTION_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# Metrics a paper-table row names beside its label, where they are not the table's plain mean
# (corpus BLEU beside chrF, micro-F1): the same label in the text, HTML, Markdown and charts.
SHOWN_METRICS = {"corpus_bleu": "BLEU", "corpus_chrf": "chrF", "micro_f1": "micro-F1"}


def judge_hides_score(share: Any) -> bool:
    """Whether a paper-table row was judged wholly where its judge cannot tell right from wrong
    (`uninformative_share` 1): every view then shows the judge's J, not the score."""
    return not missing(share) and float(share) >= 1


def judge_j_text(share: Any, j: Any) -> str | None:
    """What every view shows for a paper-table row some of whose items were judged where the judge
    cannot tell right from wrong (`uninformative_share`, `judge_j`): the measured J, and the share
    of the row it weighs when that is not all of it; None for the others."""
    if missing(share):
        return None
    measured = "J –" if missing(j) else f"J {float(j):.2f}"
    return f"judge {measured}" if judge_hides_score(share) else f"judge {measured} on {100 * float(share):.0f}%"


def row_label(label: str, metric: str | None) -> str:
    return f"{label} ({SHOWN_METRICS[metric]})" if metric in SHOWN_METRICS else label


def missing(x: Any) -> bool:
    """None or NaN: a cell with no value."""
    return x is None or (isinstance(x, float) and math.isnan(x))


# Columns that hold a JSON document in a table and a dict (or list) in memory: encoded by
# `to_frame` and decoded by `records`, so no stage in between ever parses or writes JSON.
JSON_COLUMNS = frozenset({"metadata", "details", "messages"})


def to_frame(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pd.DataFrame:
    """Rows (dicts) -> a frame with exactly `schema`'s columns; unknown keys are an error."""
    import pyarrow as pa

    rows = list(rows)
    names = schema.names
    for row in rows[:1]:
        extra = set(row) - set(names)
        if extra:
            raise ValueError(f"columns not in schema: {sorted(extra)}")
    # Column by column (what Arrow's from_pylist does too, after a copy of every row).
    columns = {}
    for name in names:
        values = [r.get(name) for r in rows]
        columns[name] = [_encode(v) for v in values] if name in JSON_COLUMNS else values
    table = pa.Table.from_pydict(columns, schema=schema)
    return table.to_pandas(types_mapper=_types_mapper)


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame read back from parquet -> plain dicts: lists instead of arrays, None instead of NA,
    JSON columns as dicts (or lists).

    The values are those Arrow's `Table.from_pandas(df).to_pylist()` gives, built a column at a
    time: plain columns (strings, numbers, booleans, nullable integers, UTC timestamps) straight
    from their arrays, anything else (lists, ...) through Arrow; each JSON column is decoded in
    one parse."""
    names = [str(name) for name in df.columns]
    if not len(df):
        return []
    with gc_paused():
        columns = []
        for name, (_, series) in zip(names, df.items()):
            values = _python_values(series)
            columns.append(_decode_all(values) if name in JSON_COLUMNS else values)
        return [dict(zip(names, row)) for row in zip(*columns)]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block: for building many small containers (rows,
    decoded JSON) that hold no cycles. Each allocation burst otherwise sets off collections, and
    a full one walks every object the process holds (the definitions, Dagster's state: 0.1-0.2 s
    in a pipeline run) without finding any of these to free."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _python_values(series: pd.Series) -> list[Any]:
    """One column as Python values, equal (value and type) to those Arrow's to_pylist gives."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        if dtype.kind == "O":
            values = series.tolist()
            kinds = set(map(type, values))
            if kinds <= {str, type(None)}:
                return values
            if kinds <= {str, type(None), float} and all(v != v for v in values if type(v) is float):
                return [None if type(v) is float else v for v in values]   # NaN is null
            if kinds <= {np.ndarray, type(None)}:   # a list-of-strings column
                lists = [None if v is None else v.tolist() for v in values]
                if set(map(type, chain.from_iterable(v for v in lists if v is not None))) <= {str, type(None)}:
                    return lists
        elif dtype.kind in "biu":
            return series.tolist()
        elif dtype == np.float64:
            data = series.to_numpy()
            return _nulls_where(data.tolist(), np.isnan(data))
    elif isinstance(dtype, pd.Int64Dtype):
        return _nulls_where(series.to_numpy(dtype=np.int64, na_value=0).tolist(), series.isna().to_numpy())
    elif isinstance(dtype, pd.DatetimeTZDtype) and dtype.unit in ("s", "ms", "us"):
        # Arrow gives datetimes in the column's zone; for UTC those are its UTC wall times, with
        # Arrow's own tzinfo object
        arrow_type = pa.array(series.iloc[:0], from_pandas=True).type
        if arrow_type.tz in ("UTC", "+00:00"):
            tzinfo = pa.array([0], type=arrow_type).to_pylist()[0].tzinfo
            wall = series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy().tolist()   # NaT -> None
            return [None if v is None else v.replace(tzinfo=tzinfo) for v in wall]
    return pa.array(series, from_pandas=True).to_pylist()


def _nulls_where(values: list[Any], missing: np.ndarray) -> list[Any]:
    if not missing.any():
        return values
    return [None if m else v for v, m in zip(values, missing.tolist())]


def _decode_all(values: list[str | None]) -> list[Any]:
    """json.loads of every non-null value, in one parse of them all (they are documents
    `to_frame` wrote, so joining them with commas inside brackets makes one JSON array)."""
    present = [v for v in values if v is not None]
    if not present:
        return values
    decoded = json.loads("[" + ",".join(present) + "]") if all(type(v) is str for v in present) else []
    if len(decoded) != len(present):   # not one document each: parse them one at a time (and fail there)
        decoded = [json.loads(v) for v in present]
    found = iter(decoded)
    return [None if v is None else next(found) for v in values]


def _encode(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"JSON columns take dicts or lists, not an encoded string: {value[:80]!r}")
    return stable_json(value)


def _types_mapper(arrow_type: pa.DataType):
    # Keep strings as object columns (None for null) and integers nullable.
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    return None


def _json_encoder(**options: Any) -> Callable[[Any], str]:
    """`json.dumps(value, **options)` as a function, without the per-call set-up: json.dumps
    builds a new encoder (and a C encoder inside it) on every call, which costs as much as the
    encoding of a small document. Same text: it is the C encoder json.dumps itself uses (with no
    circular-reference check: these values come from JSON or plain dicts)."""
    encoder = json.JSONEncoder(**options)
    if c_make_encoder is None:   # a Python without the C accelerator
        return encoder.encode
    make = c_make_encoder(None, encoder.default, encode_basestring_ascii if encoder.ensure_ascii else encode_basestring,
                          None, encoder.key_separator, encoder.item_separator, encoder.sort_keys, encoder.skipkeys,
                          encoder.allow_nan)
    return lambda value: "".join(make(value, 0))


_hash_json = _json_encoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=list)
_stable_json = _json_encoder(ensure_ascii=False, sort_keys=True)


def stable_hash(value: Any) -> str:
    """sha256 of a canonical JSON form: the same content always gives the same hash."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def canonical_json(value: Any) -> str:
    """The JSON form `stable_hash` hashes: sorted keys, no spaces, tuples (and other iterables) as lists."""
    return _hash_json(value)


def stable_json(value: Any) -> str:
    """json.dumps(value, ensure_ascii=False, sort_keys=True)."""
    return _stable_json(value)


def derive_fields(item: dict[str, Any]) -> dict[str, Any]:
    """What is derived from an item's text: its script and both hashes (in place)."""
    from pipeline.script import detect_script  # OpenCC, loaded only when items are built

    text = "".join(filter(None, [item.get("context"), item.get("question"), *(item.get("choices") or [])]))
    item["script"] = detect_script(text)
    item["content_hash"] = content_hash(item)
    item["answer_hash"] = answer_hash(item)
    return item


def content_hash(item: dict[str, Any]) -> str:
    return stable_hash([item.get("context"), item.get("question"), list(item.get("choices") or [])])


def answer_hash(item: dict[str, Any]) -> str:
    return stable_hash([item.get("answer"), list(item.get("references") or [])])
