"""Row accounting: what every benchmark adapter (pipeline/benchmarks/<name>/adapter.py) reads its
rows through. Each adapter turns its benchmark's own files into item rows (pipeline.schema.ITEMS,
before hashing) plus quarantine rows for what it could not read.

Every raw row ends up in exactly one of the two lists; `raw_counts` says how many rows each file
had, so a reconciliation check can prove that nothing was lost (`rows_accounted`). An item made
from several raw rows (WYWEB's one source sentence with several translations) lists the rows
merged into it in `metadata.merged_rows` and counts for each of them.

Bad rows stay rows. Adapters read each record through `guarded_row`: the record's text is
checked (`pipeline.sources.text.text_problem`), the adapter's reader runs, and whatever goes
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

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.sources.errors import SourceError
from pipeline.sources.text import item_problem, raw_text, safe_text, text_problem

MERGED_ROWS = "merged_rows"  # in an item's metadata: the other raw rows this item was made from
MAX_REASON_CHARS = 1_000    # a quarantine reason is cut here (the row in `raw`: text.RAW_EXCERPT_BYTES)


class BadRow(ValueError):
    """Raised by a row reader: the row is quarantined with this message as its reason."""


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
    except SourceError as exc:   # the source's problem, named by its benchmark (a torn read names only the file)
        if str(exc).startswith(f"{benchmark}: "):
            raise
        raise SourceError(f"{benchmark}: {exc}") from None
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
