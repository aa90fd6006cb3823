"""What the commands print: one-line errors, wenheng's own lines, plain tables."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pipeline.texttable import table


class UserError(Exception):
    """A mistake the user can fix: printed as one line, exit code `code`."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def text_table(headers: Sequence[str], body: Sequence[Sequence[str]], left: int = 1) -> str:
    """Plain columns: the first `left` left-aligned, the rest right-aligned (numbers)."""
    return table(headers, body, align="l" * left)


def seconds(value: float) -> str:
    return f"{value:,.1f} s"


MAX_PRINTED_ROWS = 200
MAX_CELL = 60   # characters of one printed value; the warehouse keeps the rest


def print_frame(frame) -> None:
    """A query's rows as a plain table (texts left, numbers right, a long value cut with …);
    past MAX_PRINTED_ROWS, a line says how many more there are."""
    import pandas as pd

    shown = frame.head(MAX_PRINTED_ROWS)
    align = "".join("r" if pd.api.types.is_numeric_dtype(dtype) else "l" for dtype in shown.dtypes)
    body = [[_cell(v) for v in row] for row in shown.itertuples(index=False)]
    print(table([str(c) for c in shown.columns], body, align=align))
    if len(frame) > MAX_PRINTED_ROWS:
        print(f"... {len(frame) - MAX_PRINTED_ROWS:,} more rows (narrow the query with WHERE or LIMIT)")


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    text = " ".join(str(value).split()) if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def error(message: str) -> None:
    print(f"wenheng: {message}", file=sys.stderr)


def say(message: str) -> None:
    print(f"[wenheng] {message}", flush=True)
