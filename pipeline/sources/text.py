"""Text that can always be stored: how source files are decoded, and the checks every raw row's
text passes before an adapter reads it (pipeline/sources/README.md, "Rules").

`text_problem` names the first thing in a raw row that cannot be stored or would silently change
meaning (lone surrogates, NUL characters, fields over `MAX_FIELD_CHARS`, nesting over
`MAX_NESTING`, NaN / infinite numbers); `item_problem` checks an item's column types;
`safe_text` / `raw_text` turn anything into text a quarantine row can hold, `raw_text` bounded
to `RAW_EXCERPT_BYTES` (a row of 50 MB is quarantined as its first 4 KB, its length and its
sha256, so one bad row never weighs on the lake or the warehouse)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from pipeline.rows import JSON_COLUMNS
from pipeline.sources.errors import SourceError

# Limits on a row's text, checked for every raw row (pipeline/sources/README.md, "Rules").
MAX_FIELD_CHARS = 100_000   # characters per text field: the longest real field is ~3,100
MAX_NESTING = 32            # levels of JSON objects / arrays in one row: real rows use at most 3
RAW_EXCERPT_BYTES = 4_096   # of a quarantined row's text (UTF-8) kept in `raw`; a longer row is cut

_SURROGATE = re.compile(r"[\ud800-\udfff]")


@cache
def _item_columns() -> tuple[frozenset[str], frozenset[str]]:
    """schema.ITEMS' text columns (JSON ones aside) and list columns. Read from the schema when
    first asked: the benchmark cards import this module, and pyarrow costs 0.15 s at start-up."""
    import pyarrow as pa

    from pipeline.schema import ITEMS

    return (frozenset(f.name for f in ITEMS if pa.types.is_string(f.type)) - JSON_COLUMNS,
            frozenset(f.name for f in ITEMS if pa.types.is_list(f.type)))


# --- reading files as text ---------------------------------------------------------------------------

def read_text(path: Path) -> str:
    """UTF-8 with or without BOM (UTF-16 when a UTF-16 BOM says so); CRLF and CR normalised to LF.
    Anything else raises UnicodeDecodeError, which callers turn into a quarantine row. A file
    rewritten while it is read (a torn read) raises SourceError: its rows are not the file's."""
    data = read_whole(path)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = data.decode("utf-16")
    else:
        text = data.decode("utf-8-sig")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_whole(path: Path) -> bytes:
    """The file's bytes, checked against its size and modification time before and after the
    read: a file changed meanwhile (being rewritten, copied in, truncated) raises SourceError,
    one line, so the step fails instead of going on with part of it (or nothing)."""
    with open(path, "rb") as f:
        before = os.fstat(f.fileno())
        data = _read(f)
        after = os.fstat(f.fileno())
    seen = (before.st_size, before.st_mtime_ns), (after.st_size, after.st_mtime_ns)
    if stat.S_ISREG(before.st_mode) and (seen[0] != seen[1] or len(data) != before.st_size):
        raise SourceError(f"{path} changed while it was read ({before.st_size:,} bytes when opened, "
                          f"{len(data):,} read, {after.st_size:,} now); run again once it is written")
    return data


def _read(f) -> bytes:
    return f.read()


def read_lines(path: Path) -> list[str]:
    """The file's lines; a final newline does not make an extra (empty) row."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def display_path(path: Path, root: Path) -> str:
    """Paths are recorded relative to the source root so item provenance does not depend on
    where a user keeps the files."""
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.as_posix()
    return safe_text(shown)  # a file name that is not UTF-8 still gives a storable path


# --- text that can always be stored -------------------------------------------------------------------

def safe_text(text: str) -> str:
    """`text` with lone surrogates written as `\\udXXX` escapes, so it can be encoded as UTF-8
    (Arrow, parquet, DuckDB); any other text is returned unchanged."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def raw_text(raw: Any) -> str:
    """A quarantined row as text, whatever it holds (nested too deeply to serialise, non-JSON
    values, lone surrogates), bounded to RAW_EXCERPT_BYTES: a longer object or array keeps its
    keys and short values as JSON, its long texts cut (`_json_excerpt`: the layout of a card's
    `quarantine:` still reads its task), else the first RAW_EXCERPT_BYTES (`excerpt`)."""
    if isinstance(raw, str):
        return excerpt(safe_text(raw))
    try:
        text = safe_text(json.dumps(raw, ensure_ascii=False, default=str))
    except (RecursionError, ValueError, TypeError) as exc:
        return f"<row not serialisable: {type(exc).__name__}>"
    if len(text) <= RAW_EXCERPT_BYTES // 4 or len(text.encode("utf-8")) <= RAW_EXCERPT_BYTES:
        return text
    return _json_excerpt(raw, text) or excerpt(text)


def excerpt(text: str) -> str:
    """`text` when it is at most RAW_EXCERPT_BYTES in UTF-8; else its first RAW_EXCERPT_BYTES (cut
    on a character boundary) and a last line with its whole length and its sha256 (of the UTF-8
    text), so the row can still be found in its file and told apart from others."""
    if len(text) <= RAW_EXCERPT_BYTES // 4:   # 4 bytes at most per character: short enough
        return text
    data = text.encode("utf-8")
    if len(data) <= RAW_EXCERPT_BYTES:
        return text
    head = data[:RAW_EXCERPT_BYTES].decode("utf-8", "ignore")
    return f"{head}\n… [cut at {RAW_EXCERPT_BYTES:,} bytes: {_whole(text)}]"


def _whole(text: str) -> str:
    data = text.encode("utf-8")
    return (f"the row is {len(text):,} characters ({len(data):,} bytes UTF-8), "
            f"sha256 {hashlib.sha256(data).hexdigest()}")


def _json_excerpt(raw: Any, text: str) -> str | None:
    """The row as JSON with every text longer than a limit cut to it (1,000, 200, then 40
    characters and `…`) when that fits in RAW_EXCERPT_BYTES, and a last line with the whole row's
    length and sha256 (`json.JSONDecoder().raw_decode` reads the JSON before it); None when even
    the shortest does not fit (thousands of keys, a huge key)."""
    for limit in (1_000, 200, 40):
        try:
            short = safe_text(json.dumps(_cut_texts(raw, limit), ensure_ascii=False, default=str))
        except (RecursionError, ValueError, TypeError):
            return None
        if len(short.encode("utf-8")) <= RAW_EXCERPT_BYTES:
            return f"{short}\n… [texts cut at {limit:,} characters: {_whole(text)}]"
    return None


def _cut_texts(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, dict):
        return {key: _cut_texts(item, limit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut_texts(item, limit) for item in value]
    return value


def json_type(value: Any) -> str:
    """How a value reads in JSON terms, for reasons ("question is an object, not text")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def non_text(record: dict, keys: Iterable[str]) -> str | None:
    """The reason the first of `keys` that is present, not null and not a string makes the row
    unreadable ("question is an object, not text"); None when they are all text or absent. Text
    fields are never `str()`-ed: a number or object where text belongs is a broken row."""
    for key in keys:
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key} is {json_type(value)}, not text"
    return None


# --- the checks of a raw row and of an item ------------------------------------------------------------

def text_problem(value: Any, name: str = "") -> str | None:
    """The first thing in a raw row (a record, a list of fields, a line) that cannot be stored or
    would silently change meaning, named by its field path; None when the row is sound:
    a lone surrogate (`"\\ud800"`), a NUL character, a string over MAX_FIELD_CHARS characters,
    a NaN or infinite number, or nesting deeper than MAX_NESTING."""
    if _plainly_sound(value):
        return None
    return _walk(value, name)


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _plainly_sound(value: Any) -> bool:
    """A fast check (the row as JSON text, at C speed) that says True only when `_walk` would find
    nothing: no NaN, no surrogate, no NUL, the whole row within MAX_FIELD_CHARS, shallow enough.
    Anything it cannot vouch for goes to `_walk`, which names the field."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return False
    if len(text) > MAX_FIELD_CHARS or "\\u0000" in text or _SURROGATE.search(text):
        return False
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return True
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest <= MAX_NESTING


def _walk(value: Any, name: str) -> str | None:
    stack: list[tuple[str, Any, int]] = [(name, value, 0)]
    while stack:
        path, value, depth = stack.pop()
        where = f" in {path}" if path else ""
        if isinstance(value, str):
            surrogate = _SURROGATE.search(value)
            if surrogate:
                return f"lone surrogate U+{ord(surrogate.group()):04X}{where} (not valid Unicode text)"
            if "\x00" in value:
                return f"NUL character{where}"
            if len(value) > MAX_FIELD_CHARS:
                return (f"{path or 'field'} is {len(value):,} characters, "
                        f"over the limit of {MAX_FIELD_CHARS:,} per field")
        elif isinstance(value, float):
            if not math.isfinite(value):
                return f"{value} is not a number{where}"
        elif isinstance(value, (dict, list, tuple)):
            if depth >= MAX_NESTING:
                return f"nested more than {MAX_NESTING} levels deep{where}"
            if isinstance(value, dict):
                children = []
                for key, child in value.items():
                    key = str(key)
                    children.append((f"{path}.{key}" if path else key, child, depth + 1))
                    children.append((f"a key{where}", key, depth + 1))
            else:
                children = [(f"{path}[{i}]", child, depth + 1) for i, child in enumerate(value)]
            stack.extend(reversed(children))
    return None


def item_problem(item: dict[str, Any], text: bool = True) -> str | None:
    """Why an item (as an adapter built it) cannot be stored as it stands: a column of the wrong
    type, or (with `text`) text that `text_problem` refuses. None when it can."""
    text_columns, list_columns = _item_columns()
    for key, value in item.items():
        if value is None:
            continue
        if key in text_columns and not isinstance(value, str):
            return f"item field {key} is {json_type(value)}, not text"
        if key in list_columns and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            return f"item field {key} must be a list of texts"
        if key in JSON_COLUMNS and not isinstance(value, dict):
            return f"item field {key} must be an object"
    return text_problem(item) if text else None
