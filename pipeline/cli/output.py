"""What the commands print: one-line errors, wenheng's own lines, plain tables."""

from __future__ import annotations

import os
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
    _line(f"wenheng: {message}", "stderr")


def say(message: str) -> None:
    _line(f"[wenheng] {message}", "stdout")


def lenient_streams() -> None:
    """What the terminal cannot encode (PYTHONIOENCODING=ascii, a C locale) is replaced, not fatal."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def _line(text: str, name: str) -> None:
    """One line to the terminal. A terminal that has gone (`wenheng run | head -2`, a closed
    window) does not stop the work: the stream is pointed at /dev/null, so every later print
    succeeds, and this line and the later ones go to the run's log."""
    stream = getattr(sys, name)
    if not getattr(stream, "_wenheng_gone", False):
        try:
            print(text, file=stream, flush=True)
            return
        except (BrokenPipeError, OSError, ValueError):   # EPIPE, EIO, or a stream closed under us
            _reader_gone(stream)
    from pipeline.terminal import run_log_file

    log = run_log_file()
    if log is not None:
        try:
            with log.open("a", encoding="utf-8", errors="replace") as out:
                out.write(text + "\n")
        except OSError:
            pass


def _reader_gone(stream) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())   # what is still buffered, and every later write, goes nowhere
        os.close(devnull)
    except (OSError, ValueError):
        pass
    try:
        stream._wenheng_gone = True
    except AttributeError:
        pass
