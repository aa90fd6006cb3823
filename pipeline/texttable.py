"""Plain text tables for the terminal, one helper for every command: columns measured in terminal
columns (a Chinese character takes two), so that Chinese text keeps them aligned."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any


def width(text: str) -> int:
    """Terminal columns: wide (CJK) characters take two, combining marks none."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def table(headers: Sequence[str], body: Sequence[Sequence[Any]], align: str = "l", indent: str = "") -> str:
    """Plain columns, two spaces apart, aligned per column by `align` (l or r, one letter a
    column; the columns past its end right-aligned: numbers), each line after `indent`."""
    rows = [[str(c) for c in row] for row in [headers, *body]]
    widths = [max(width(row[i]) for row in rows) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        cells = [c + " " * (w - width(c)) if align[i:i + 1] == "l" else " " * (w - width(c)) + c
                 for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return (indent + "  ".join(cells)).rstrip()

    return "\n".join(fmt(row) for row in rows)
