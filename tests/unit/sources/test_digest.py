"""Content digests (the stages' data versions): equal for equal content, different for any change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from pipeline.schema import ITEMS, records, to_frame
from pipeline.sources.digest import frame_digest


def _frame(values, dtype=object) -> pd.DataFrame:
    return pd.DataFrame({"c": pd.Series(values, dtype=dtype)})


def test_every_list_value_digests_apart():
    lists = [["a", "b"], ["ab"], ["a\x1fb"], ["a", "\x1fb"], [], [""], ["", ""], [None], ["\\0"], ["\\"],
             ["\\\\"], ["\\m"], ["\x1f"], ["a\\", "b"], ["a", "\\b"], None]
    digests = [frame_digest(_frame([value])) for value in lists]
    assert len(set(digests)) == len(lists)
    # arrays (as parquet gives lists back) and tuples digest as the lists they hold
    assert frame_digest(_frame([np.array(["a", "b"], dtype=object)])) == digests[0]
    assert frame_digest(_frame([("a", "b")])) == digests[0]


def test_text_nulls_numbers_and_shape():
    texts = ["", None, "None", "<null>", "nan", "a", "a "]
    assert len({frame_digest(_frame([t])) for t in texts}) == len(texts)
    numbers = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "x": [0.5, np.nan], "b": [True, False]})
    assert frame_digest(numbers) != frame_digest(numbers.assign(n=pd.array([1, 2], dtype="Int64")))
    assert frame_digest(numbers) != frame_digest(numbers.assign(x=[0.5, 0.0]))
    # rows in another order, a column renamed or moved, an empty frame of other columns: all differ
    two = pd.DataFrame({"a": ["x", "y"], "b": ["y", "x"]})
    assert len({frame_digest(two), frame_digest(two.iloc[::-1]), frame_digest(two[["b", "a"]]),
                frame_digest(two.rename(columns={"a": "z"}))}) == 4
    assert frame_digest(two.iloc[:0]) != frame_digest(two[["a"]].iloc[:0])
    # the index is not content
    assert frame_digest(two.set_axis([5, 7])) == frame_digest(two)


def test_columns_choose_what_counts():
    frame = pd.DataFrame({"id": ["a", "b"], "hash": ["1", "2"], "note": ["x", "y"]})
    assert frame_digest(frame, ["id", "hash"]) == frame_digest(frame.assign(note=["z", "w"]), ["id", "hash"])
    assert frame_digest(frame, ["id", "hash"]) != frame_digest(frame.assign(hash=["1", "3"]), ["id", "hash"])
    assert frame_digest(frame) != frame_digest(frame.assign(note=["z", "w"]))


def test_a_table_in_memory_and_read_back_digest_alike():
    item = {name: None for name in ITEMS.names} | {
        "item_id": "b/s/t/1", "question": "問", "choices": ["甲", "乙"], "references": [], "metadata": {"k": 1}}
    frame = to_frame([item, item | {"item_id": "b/s/t/2", "choices": None}], ITEMS)
    back = pa.Table.from_pandas(frame, schema=ITEMS, preserve_index=False).to_pandas()
    assert isinstance(back["choices"][0], np.ndarray)
    assert frame_digest(back) == frame_digest(frame)
    changed = to_frame([dict(r, choices=["甲", "丙"]) if r["item_id"].endswith("1") else r
                        for r in records(frame)], ITEMS)
    assert frame_digest(changed) != frame_digest(frame)
