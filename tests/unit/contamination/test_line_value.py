"""The scan's per-line JSON reader is json.loads, faster: same value, same error, for any line."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.contamination.scan import _line_value

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=8)
# valid lines, valid lines with something around them, and any text
LINES = (JSON_VALUES.map(json.dumps)
         | st.tuples(st.sampled_from(["", " ", "\t", "\u3000", ",", "x", "}"]), JSON_VALUES.map(json.dumps),
                     st.sampled_from(["", " ", "\r", ",{}", " 1", "]"])).map("".join)
         | st.text(max_size=40))


def _outcome(read, line: str):
    try:
        return "value", read(line)
    except ValueError as exc:
        return "error", str(exc)


@settings(max_examples=400, deadline=None)
@given(LINES)
def test_a_line_reads_as_json_loads_reads_it(line):
    assert _outcome(_line_value, line) == _outcome(json.loads, line)
