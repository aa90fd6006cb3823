"""What every benchmark adapter (pipeline/benchmarks/<name>/adapter.py) reads files with: each
adapter turns its benchmark's own files into item rows (pipeline.schema.ITEMS, before hashing)
plus quarantine rows for what it could not read.

Every raw row ends up in exactly one of the two lists; `raw_counts` says how many rows each file
had, so a reconciliation check can prove that nothing was lost (`rows_accounted`). An item made
from several raw rows (WYWEB's one source sentence with several translations) lists the rows
merged into it in `metadata.merged_rows` and counts for each of them. A file that cannot be read
at all (not UTF-8, broken JSON, an adapter bug) counts as one raw row and becomes one quarantine
row, so one bad file never stops the other files or benchmarks. The file formats are described in
pipeline/sources/README.md.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.config import SourceSpec
from pipeline.schema import OPTION_LETTERS

MERGED_ROWS = "merged_rows"  # in an item's metadata: the other raw rows this item was made from


@dataclass
class ParseResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    raw_counts: Counter = field(default_factory=Counter)  # source_file -> raw rows seen

    def reject(self, benchmark: str, source_file: str, locator: Any, reason: str, raw: Any) -> None:
        if not isinstance(raw, str):
            raw = json.dumps(raw, ensure_ascii=False, default=str)
        self.quarantine.append({
            "benchmark": benchmark, "source_file": source_file,
            "source_locator": str(locator), "reason": reason, "raw": raw,
        })

    def rows(self) -> list[dict[str, Any]]:
        """Items and quarantine rows together, shaped for schema.RAW_ROWS."""
        rows = [{**item, "reason": None, "raw": None} for item in self.items]
        return rows + [dict(q) for q in self.quarantine]

    def extend(self, other: ParseResult) -> None:
        self.items.extend(other.items)
        self.quarantine.extend(other.quarantine)
        self.raw_counts.update(other.raw_counts)


def rows_accounted(rows: Iterable[dict[str, Any]]) -> Counter:
    """source_file -> the raw rows that these item and quarantine rows stand for: one each, plus
    the rows merged into an item. Equal to `raw_counts` when nothing was lost."""
    counts: Counter = Counter()
    for row in rows:
        counts[row["source_file"]] += 1 + len((row.get("metadata") or {}).get(MERGED_ROWS) or ())
    return counts


def display_path(path: Path, root: Path) -> str:
    """Paths are recorded relative to the source root so item provenance does not depend on
    where a user keeps the files."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


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


def guarded_file(result: ParseResult, benchmark: str, shown: str,
                 parse_file: Callable[[ParseResult], None]) -> None:
    """Run one file's parser on its own result; if it fails, its partial rows are dropped and the
    whole file becomes one quarantine row with the reason, so the other files still load."""
    own = ParseResult()
    try:
        parse_file(own)
    except UnicodeDecodeError as exc:
        result.raw_counts[shown] += 1
        result.reject(benchmark, shown, "file", f"not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                                "convert the file to UTF-8", "")
        return
    except Exception as exc:  # noqa: BLE001 - any failure is reported, never raised
        result.raw_counts[shown] += 1
        result.reject(benchmark, shown, "file", f"could not parse file: {type(exc).__name__}: {exc}", "")
        return
    result.extend(own)


def provenance(spec: SourceSpec, source_file: str, locator: Any, default_license: str) -> dict[str, Any]:
    """The fields every item carries about where it came from."""
    return {"benchmark": spec.benchmark, "source_version": spec.version, "source_file": source_file,
            "source_locator": str(locator), "license": spec.license or default_license}


def load_json(path: Path) -> Any:
    return json.loads(read_text(path))


def letter(index: int) -> str:
    return OPTION_LETTERS[index]
