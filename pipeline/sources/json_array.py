"""Strict JSON, and a JSON array read element by element: `read_json_array` parses a file holding
one array, and when the whole array cannot be parsed (one element with NaN, a syntax error inside
it, nesting too deep to read) `split_json_array` cuts the array into its elements' texts by
bracket depth, so one bad element is one bad row and the others still load."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pipeline.sources.accounting import FileUnreadable
from pipeline.sources.text import json_type, read_text


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def parse_json(text: str) -> Any:
    """json.loads that refuses NaN / Infinity (Python's json accepts them; JSON does not) and
    numbers beyond float range. Raises ValueError (JSONDecodeError included) or RecursionError."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def json_row(text: str) -> tuple[Any, str | None]:
    """One row's JSON text -> (value, None), or (None, the reason it is not a readable value)."""
    try:
        return parse_json(text), None
    except RecursionError:
        return None, "not valid JSON: nested too deeply to read"
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"


# A JSON string (escapes included), an unterminated string, or a structural character.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|"|[\[\]{},]')


def read_json_array(path: Path) -> list[tuple[Any, str | None, str | None]]:
    """The elements of a file holding one JSON array: (value, None, None) per element, or
    (None, reason, element text) for an element that is not valid JSON on its own (NaN, nesting
    too deep to read, a syntax error inside it), so one bad element is one bad row. Raises
    FileUnreadable when the file is not a JSON array at all (or its brackets do not close), and
    UnicodeDecodeError when it is not UTF-8."""
    text = read_text(path)
    try:
        value = parse_json(text)
    except (ValueError, RecursionError) as exc:
        pieces = split_json_array(text)
        if pieces is None:
            detail = "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc)
            raise FileUnreadable(f"not valid JSON: {detail}") from None
        rows = []
        for piece in pieces:
            value, reason = json_row(piece)
            rows.append((value, None, None) if reason is None else (None, reason, piece))
        return rows
    if not isinstance(value, list):
        raise FileUnreadable(f"expected a JSON array of objects, not {json_type(value)}")
    return [(element, None, None) for element in value]


def split_json_array(text: str) -> list[str] | None:
    """The texts of a JSON array's elements, found by bracket depth outside strings (no
    recursion, so any depth works); None when the text is not one array whose brackets close."""
    start = len(text) - len(text.lstrip())
    if text[start:start + 1] != "[":
        return None
    depth, element_start, pieces, end = 0, start + 1, [], None
    for match in _JSON_TOKEN.finditer(text, start):
        token = match.group()
        if token == '"':
            return None           # a string that never ends
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                if token != "]":
                    return None
                pieces.append(text[element_start:match.start()])
                end = match.end()
                break
            if depth < 0:
                return None
        elif depth == 1:          # a comma between elements
            pieces.append(text[element_start:match.start()])
            element_start = match.end()
    if end is None or text[end:].strip():
        return None
    if len(pieces) == 1 and not pieces[0].strip():
        return []                 # []
    return pieces
