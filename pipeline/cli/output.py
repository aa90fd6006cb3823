"""What the commands print: one-line errors, wenheng's own lines, plain tables."""

from __future__ import annotations

import sys
from collections.abc import Sequence


class UserError(Exception):
    """A mistake the user can fix: printed as one line, exit code `code`."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def text_table(headers: Sequence[str], body: Sequence[Sequence[str]], left: int = 1) -> str:
    """Plain columns: the first `left` left-aligned, the rest right-aligned (numbers)."""
    widths = [max(len(str(row[i])) for row in [headers, *body]) for i in range(len(headers))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    return "\n".join([fmt(headers), *(fmt(row) for row in body)])


def seconds(value: float) -> str:
    return f"{value:,.1f} s"


def print_frame(frame) -> None:
    import pandas as pd

    with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200,
                           "display.unicode.east_asian_width", True):
        print(frame.to_string(index=False))


def error(message: str) -> None:
    print(f"wenheng: {message}", file=sys.stderr)


def say(message: str) -> None:
    print(f"[wenheng] {message}", flush=True)
