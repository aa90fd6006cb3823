"""What every benchmark adapter (pipeline/benchmarks/<name>/adapter.py) reads files with: each
adapter turns its benchmark's own files into item rows (pipeline.schema.ITEMS, before hashing)
plus quarantine rows for what it could not read.

Every raw row ends up in exactly one of the two lists; `raw_counts` says how many rows each file
had, so a reconciliation check can prove that nothing was lost (`rows_accounted`). An item made
from several raw rows (WYWEB's one source sentence with several translations) lists the rows
merged into it in `metadata.merged_rows` and counts for each of them.

Bad rows stay rows. Adapters read each record through `guarded_row`: the record's text is
checked (`text_problem`: lone surrogates, NUL characters, fields over `MAX_FIELD_CHARS`,
nesting over `MAX_NESTING`, NaN / infinite numbers), the adapter's reader runs, and whatever goes
wrong (a reason it returns, a `BadRow` it raises, or any unexpected exception) makes that one row
a quarantine row with file, locator and reason; the file's other rows still load. Only a file
that cannot be read at all (not UTF-8, not JSON, not a JSON array: `FileUnreadable`) is one
file-level quarantine row (`guarded_file`). A parser failure outside any row is also caught, but
the file's rows are then not accounted for: the file is listed in `ParseResult.incomplete` and
the reconciliation fails. A source that cannot be used as a whole (`SourceError`: a broken side
file, no rows at all) fails its benchmark's ingestion with one line instead. The file formats are
described in pipeline/sources/README.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pipeline.schema import ITEMS, JSON_COLUMNS, OPTION_LETTERS

if TYPE_CHECKING:  # annotations only: pipeline.config reaches this module (the source layout check)
    from pipeline.config import SourceSpec

MERGED_ROWS = "merged_rows"  # in an item's metadata: the other raw rows this item was made from

# Limits on a row's text, checked for every raw row (pipeline/sources/README.md, "Rules").
MAX_FIELD_CHARS = 100_000   # characters per text field: the longest real field is ~3,100
MAX_NESTING = 32            # levels of JSON objects / arrays in one row: real rows use at most 3
MAX_REASON_CHARS = 1_000    # a quarantine reason is cut here (the row itself is kept whole in `raw`)

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_TEXT_COLUMNS = {f.name for f in ITEMS if pa.types.is_string(f.type)} - set(JSON_COLUMNS)
_LIST_COLUMNS = {f.name for f in ITEMS if pa.types.is_list(f.type)}


class BadRow(ValueError):
    """Raised by a row reader: the row is quarantined with this message as its reason."""


class SourceError(ValueError):
    """The configured source as a whole cannot be used (its path is not the benchmark's layout, a
    side file such as AC-EVAL's subject_mapping.json is broken, it yields no rows): never a
    quarantine row, the benchmark's ingestion fails with this one line."""


class FileUnreadable(ValueError):
    """Raised while opening a file that cannot be read as the format at all (not JSON, not an
    array): the file becomes one quarantine row with this message as its reason."""


@dataclass
class ParseResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    raw_counts: Counter = field(default_factory=Counter)  # source_file -> raw rows seen
    # source_file -> why its parser stopped part-way: its rows are not all accounted for
    incomplete: dict[str, str] = field(default_factory=dict)
    # ids of the items already checked (guarded_row, guarded_file): the final check skips them
    checked: set[int] = field(default_factory=set, repr=False)

    def reject(self, benchmark: str, source_file: str, locator: Any, reason: str, raw: Any) -> None:
        reason = str(reason)
        if len(reason) > MAX_REASON_CHARS:   # a reason quoting an over-long value
            reason = reason[:MAX_REASON_CHARS] + "…"
        self.quarantine.append({
            "benchmark": benchmark, "source_file": safe_text(source_file),
            "source_locator": safe_text(str(locator)), "reason": safe_text(reason), "raw": raw_text(raw),
        })

    def rows(self) -> list[dict[str, Any]]:
        """Items and quarantine rows together, shaped for schema.RAW_ROWS."""
        rows = [{**item, "reason": None, "raw": None} for item in self.items]
        return rows + [dict(q) for q in self.quarantine]

    def extend(self, other: ParseResult) -> None:
        self.items.extend(other.items)
        self.quarantine.extend(other.quarantine)
        self.raw_counts.update(other.raw_counts)
        self.incomplete.update(other.incomplete)
        self.checked |= other.checked


def rows_accounted(rows: Iterable[dict[str, Any]]) -> Counter:
    """source_file -> the raw rows that these item and quarantine rows stand for: one each, plus
    the rows merged into an item. Equal to `raw_counts` when nothing was lost."""
    counts: Counter = Counter()
    for row in rows:
        counts[row["source_file"]] += 1 + len((row.get("metadata") or {}).get(MERGED_ROWS) or ())
    return counts


# --- text that can always be stored -------------------------------------------------------------------

def safe_text(text: str) -> str:
    """`text` with lone surrogates written as `\\udXXX` escapes, so it can be encoded as UTF-8
    (Arrow, parquet, DuckDB); any other text is returned unchanged."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def raw_text(raw: Any) -> str:
    """A quarantined row as text, whatever it holds (nested too deeply to serialise, non-JSON
    values, lone surrogates)."""
    if not isinstance(raw, str):
        try:
            raw = json.dumps(raw, ensure_ascii=False, default=str)
        except (RecursionError, ValueError, TypeError) as exc:
            raw = f"<row not serialisable: {type(exc).__name__}>"
    return safe_text(raw)


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
    for key, value in item.items():
        if value is None:
            continue
        if key in _TEXT_COLUMNS and not isinstance(value, str):
            return f"item field {key} is {json_type(value)}, not text"
        if key in _LIST_COLUMNS and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            return f"item field {key} must be a list of texts"
        if key in JSON_COLUMNS and not isinstance(value, dict):
            return f"item field {key} must be an object"
    return text_problem(item) if text else None


# --- rows and files ---------------------------------------------------------------------------------

Row = tuple[dict[str, Any] | None, str]
_RAW = object()


def guarded_row(result: ParseResult, benchmark: str, shown: str, locator: Any, raw: Any,
                build: Callable[[], Row], *, fields: Any = _RAW) -> dict[str, Any] | None:
    """One raw row -> its item, or None once it is quarantined (file, locator, reason, raw).

    `fields` (default: `raw`) is checked first with `text_problem`; then `build()` returns
    `(item, "")` or `(None, reason)`, or raises `BadRow(reason)`; the item it returns is checked
    for column types (`item_problem`; its text came from the checked row). Any other exception is
    this row's problem too, with its type and message: it never stops the file. The caller counts
    the row in `raw_counts` and adds the item."""
    reason = text_problem(raw if fields is _RAW else fields)
    item = None
    if reason is None:
        try:
            item, reason = build()
            if item is not None:
                reason = item_problem(item, text=False)
                if reason is not None:
                    item = None
                else:
                    result.checked.add(id(item))
        except BadRow as exc:
            item, reason = None, str(exc)
        except Exception as exc:  # noqa: BLE001 - a row's failure is reported with the row, never raised
            item, reason = None, f"could not read row: {type(exc).__name__}: {exc}"
    if item is None:
        result.reject(benchmark, shown, locator, reason or "row rejected", raw)
    return item


def guarded_file(result: ParseResult, benchmark: str, shown: str,
                 parse_file: Callable[[ParseResult], None]) -> None:
    """Run one file's parser on its own result.

    A file that cannot be read at all (not UTF-8, `FileUnreadable`) is one quarantine row with
    locator `file`, counted as one raw row. A parser that fails part-way (a bug: row errors are
    caught by `guarded_row`) also leaves one `file` row, but the rows it had counted stay counted
    and the file is listed in `incomplete`, so the reconciliation fails instead of passing on a
    count of 1. Items that cannot be stored (`item_problem`) are moved to quarantine here, with
    the rows merged into them, so every row stays accounted for. A `SourceError` is not a file's
    problem but the source's: it is raised on."""
    own = ParseResult()
    try:
        parse_file(own)
    except SourceError:
        raise
    except UnicodeDecodeError as exc:
        result.raw_counts[shown] += 1
        result.reject(benchmark, shown, "file", f"not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                                "convert the file to UTF-8", "")
        return
    except FileUnreadable as exc:
        result.raw_counts[shown] += 1
        result.reject(benchmark, shown, "file", str(exc), "")
        return
    except Exception as exc:  # noqa: BLE001 - any failure is reported, never raised
        reason = f"could not parse file: {type(exc).__name__}: {exc}"
        result.raw_counts[shown] += max(own.raw_counts.get(shown, 0), 1)
        result.reject(benchmark, shown, "file", reason, "")
        result.incomplete[shown] = reason
        return
    _quarantine_unstorable(own)
    result.extend(own)


def _quarantine_unstorable(result: ParseResult) -> None:
    kept = []
    for item in result.items:
        reason = None if id(item) in result.checked else item_problem(item)
        if reason is None:
            kept.append(item)
            result.checked.add(id(item))
            continue
        benchmark, shown = item.get("benchmark") or "", item.get("source_file") or ""
        result.reject(benchmark, shown, item.get("source_locator"), reason, item)
        metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        for merged in metadata.get(MERGED_ROWS) or ():
            locator = merged.get("source_locator") if isinstance(merged, dict) else None
            result.reject(benchmark, shown, locator, f"merged into {item.get('source_locator')}, "
                                                     f"which was quarantined: {reason}", merged)
    result.items = kept


def display_path(path: Path, root: Path) -> str:
    """Paths are recorded relative to the source root so item provenance does not depend on
    where a user keeps the files."""
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.as_posix()
    return safe_text(shown)  # a file name that is not UTF-8 still gives a storable path


def read_text(path: Path) -> str:
    """UTF-8 with or without BOM (UTF-16 when a UTF-16 BOM says so); CRLF and CR normalised to LF.
    Anything else raises UnicodeDecodeError, which callers turn into a quarantine row."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = data.decode("utf-16")
    else:
        text = data.decode("utf-8-sig")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_lines(path: Path) -> list[str]:
    """The file's lines; a final newline does not make an extra (empty) row."""
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# --- JSON -------------------------------------------------------------------------------------------

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


def provenance(spec: SourceSpec, source_file: str, locator: Any, default_license: str) -> dict[str, Any]:
    """The fields every item carries about where it came from."""
    return {"benchmark": spec.benchmark, "source_version": spec.version, "source_file": source_file,
            "source_locator": str(locator), "license": spec.license or default_license}


CONTENT_KEY_CHARS = 12   # hex digits of sha256: 48 bits, collision-free in practice at benchmark sizes


class ContentKeys:
    """Item keys for files whose rows carry no id (WYWEB): the first 12 hex digits of the SHA-256
    of the text that defines the item, so a row keeps its key when rows around it are added,
    removed or reordered, and its line number is only its `source_locator`. Rows with the same
    defining text within one scope (a split and task) are told apart by order of appearance: the
    first keeps the bare hash, later ones get `-2`, `-3`, ... One instance per parse."""

    def __init__(self) -> None:
        self._seen: Counter = Counter()

    def key(self, scope: Any, *parts: Any) -> str:
        digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
        base = digest[:CONTENT_KEY_CHARS]
        self._seen[(scope, base)] += 1
        n = self._seen[(scope, base)]
        return base if n == 1 else f"{base}-{n}"


def letter(index: int) -> str:
    return OPTION_LETTERS[index]
