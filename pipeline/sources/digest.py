"""Content digests of tables, which the stages' data versions are made of: equal for equal
content, different whenever a value of a chosen column differs, and computed column by column
(pandas' hash_pandas_object over whole columns), never by encoding each row."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_MARK = "\x1f"   # starts every element of a list in its text form; escaped inside the elements


def frame_digest(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """sha256 (hex) over the column names, the number of rows and each row's 64-bit hash of the
    chosen columns (all by default). A list column (lists, or arrays as read from parquet) counts
    by its elements, so a frame built in memory and the same frame read back digest alike."""
    values = frame[list(columns)] if columns is not None else frame
    digest = hashlib.sha256(repr((list(map(str, values.columns)), len(values))).encode())
    if len(values.columns) and len(values):
        hashable = pd.DataFrame({i: _hashable(values.iloc[:, i]) for i in range(values.shape[1])})
        digest.update(pd.util.hash_pandas_object(hashable, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _hashable(column: pd.Series) -> pd.Series:
    """A column hash_pandas_object takes: as it is, except a column of lists, which becomes one
    text per row that differs whenever the list differs: each element escaped (a backslash
    doubled, _MARK as backslash m, null as backslash 0) and prefixed by _MARK, so [] -> "",
    [""] -> _MARK, and a null list stays null."""
    first = column.first_valid_index() if column.dtype == object else None
    if first is None or not isinstance(column[first], (list, tuple, np.ndarray)):
        return column.reset_index(drop=True)
    lists = pa.array(column, type=pa.list_(pa.large_string()), from_pandas=True)
    offsets = lists.offsets.to_numpy()
    escaped = pc.replace_substring(pc.replace_substring(lists.flatten(), "\\", "\\\\"), _MARK, "\\m")
    marked = pc.binary_join_element_wise(pa.scalar(_MARK, pa.large_string()), escaped.fill_null("\\0"),
                                         pa.scalar("", pa.large_string()))
    rows = pa.LargeListArray.from_arrays(pa.array(offsets - offsets[0], pa.int64()), marked, mask=lists.is_null())
    joined = pc.binary_join(rows, pa.scalar("", pa.large_string()))
    return pd.Series(joined.to_numpy(zero_copy_only=False), dtype=object)
