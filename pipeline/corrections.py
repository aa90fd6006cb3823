"""Corrections to benchmark items, and what changed between two versions of a source.

Benchmarks ship errors (wrong gold answers, typos, scraping leftovers). wenheng never edits the
upstream files; a correction is a row in a file under data/corrections/ (CSV or YAML) with the
columns `item_id, field, old, new, reason, date`. It is applied to the standardized items only
while the item still has the `old` value: once upstream fixes (or otherwise changes) the item,
the correction is reported `stale` instead of overwriting the new text. Every correction yields
one audit row (pipeline.schema.CORRECTIONS_AUDIT), applied or not.

`old` and `new` are the field's values: plain text for text fields, a JSON array (CSV) or a list
(YAML) for `choices` and `references`; an empty `old` / `new` cell means null for the text
fields `context` and `answer`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.paths import PROJECT_ROOT
from pipeline.schema import derive_fields

TEXT_FIELDS = ("context", "question", "answer")
LIST_FIELDS = ("choices", "references")
FIELDS = TEXT_FIELDS + LIST_FIELDS
COLUMNS = ("item_id", "field", "old", "new", "reason", "date")
# Fields compared between two versions of a source: what a model is asked and what it is scored on.
DIFF_FIELDS = ("context", "question", "choices", "answer", "references")


class CorrectionsError(ValueError):
    """A corrections file is malformed; the message names the file and row."""


@dataclass(frozen=True)
class Correction:
    item_id: str
    field: str
    old: Any
    new: Any
    reason: str
    date: str
    origin: str         # "<file>:<n>": the CSV line or the YAML entry number


def load_corrections(path: Path) -> list[Correction]:
    """Every correction in a file, or in the *.csv / *.yaml / *.yml files of a folder (name order).
    A missing folder means no corrections."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".csv", ".yaml", ".yml"))
    elif path.is_file():
        files = [path]
    else:
        return []
    corrections: list[Correction] = []
    for file in files:
        rows = _csv_rows(file) if file.suffix.lower() == ".csv" else _yaml_rows(file)
        corrections += [_correction(file, where, row) for where, row in rows]
    return corrections


def apply_corrections(items: Iterable[dict[str, Any]], corrections: Iterable[Correction]
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(corrected items, audit rows). Items are copied, never modified in place; corrections run in
    order, so a second correction of the same field sees the first one's result. The script and
    both hashes of a corrected item are recomputed."""
    items = [dict(item) for item in items]
    by_id = {item["item_id"]: item for item in items}
    ingested = {item["benchmark"] for item in items}
    audit, changed = [], set()
    for corr in corrections:
        item = by_id.get(corr.item_id)
        if item is None and corr.item_id.split("/", 1)[0] not in ingested:
            continue  # a correction to a benchmark this run does not ingest
        if item is None:
            audit.append(_audit(corr, corr.item_id.split("/", 1)[0], "unknown_item"))
            continue
        current = _value(item.get(corr.field), corr.field)
        if current != corr.old:
            audit.append(_audit(corr, item["benchmark"], "stale", current=current))
            continue
        item[corr.field] = list(corr.new) if corr.field in LIST_FIELDS else corr.new
        changed.add(corr.item_id)
        audit.append(_audit(corr, item["benchmark"], "applied"))
    for item_id in changed:
        derive_fields(by_id[item_id])
    return items, audit


def correct(items: Iterable[dict[str, Any]], path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Load the corrections under `path` (a file or folder) and apply them."""
    return apply_corrections(items, load_corrections(path))


def diff_versions(previous_items: Iterable[dict[str, Any]], new_items: Iterable[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """Audit rows (status `changed_upstream`) for items present in both versions, matched by
    item_id, whose context, question, choices, answer or references differ: one row per changed
    field, origin "upstream <old version> -> <new version>". Items added or removed are not
    reported here; the items table shows those."""
    before = {item["item_id"]: item for item in previous_items}
    rows = []
    for item in new_items:
        old = before.get(item["item_id"])
        if old is None:
            continue
        origin = f"upstream {old.get('source_version')} -> {item.get('source_version')}"
        for name in DIFF_FIELDS:
            was, now = _value(old.get(name), name), _value(item.get(name), name)
            if was != now:
                rows.append({"item_id": item["item_id"], "benchmark": item.get("benchmark"), "field": name,
                             "old": _encode(was), "new": _encode(now), "reason": "changed between versions",
                             "date": None, "status": "changed_upstream", "origin": origin})
    return rows


# ---------------------------------------------------------------------------------------------

def _value(value: Any, name: str) -> Any:
    """A field's value in comparable form: lists (also numpy arrays from parquet) as lists."""
    if name in LIST_FIELDS:
        return [str(v) for v in value] if value is not None else []
    return value


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _audit(corr: Correction, benchmark: str, status: str, current: Any = None) -> dict[str, Any]:
    reason = corr.reason
    if status == "stale":
        reason = f"{corr.reason} [not applied: the item's {corr.field} is now {_encode(current)}]"
    return {"item_id": corr.item_id, "benchmark": benchmark, "field": corr.field, "old": _encode(corr.old),
            "new": _encode(corr.new), "reason": reason, "date": corr.date, "status": status,
            "origin": corr.origin}


def _csv_rows(file: Path) -> list[tuple[str, dict[str, Any]]]:
    text = file.read_bytes().decode("utf-8-sig").replace("\r\n", "\n")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise CorrectionsError(f"{file}: missing columns {missing}; expected {', '.join(COLUMNS)}")
    return [(f"{file.name}:{reader.line_num}", row) for row in reader]


def _yaml_rows(file: Path) -> list[tuple[str, dict[str, Any]]]:
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        raise CorrectionsError(f"{file}: not valid YAML: {exc}") from exc
    rows = (data or {}).get("corrections") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise CorrectionsError(f"{file}: expected a list of corrections (or a 'corrections:' list)")
    return [(f"{file.name}:{n}", row) for n, row in enumerate(rows, start=1)]


def _correction(file: Path, where: str, row: Any) -> Correction:
    if not isinstance(row, dict):
        raise CorrectionsError(f"{file} ({where}): expected a mapping with {', '.join(COLUMNS)}")
    missing = [c for c in COLUMNS if c not in row]
    if missing:
        raise CorrectionsError(f"{file} ({where}): missing {missing}")
    item_id, name = str(row["item_id"] or "").strip(), str(row["field"] or "").strip()
    if item_id.count("/") < 3:
        raise CorrectionsError(f"{file} ({where}): item_id {item_id!r} is not benchmark/split/task/key")
    if name not in FIELDS:
        raise CorrectionsError(f"{file} ({where}): field {name!r} cannot be corrected; use one of {FIELDS}")
    reason = str(row["reason"] or "").strip()
    if not reason:
        raise CorrectionsError(f"{file} ({where}): every correction needs a reason")
    date = row["date"]
    try:
        date = dt.date.fromisoformat(str(date)).isoformat() if not isinstance(date, dt.date) else date.isoformat()
    except ValueError as exc:
        raise CorrectionsError(f"{file} ({where}): date {row['date']!r} is not YYYY-MM-DD") from exc
    old, new = (_parse_value(file, where, name, row[k], k) for k in ("old", "new"))
    if name in ("question",) and not new:
        raise CorrectionsError(f"{file} ({where}): a question cannot be corrected to empty")
    return Correction(item_id, name, old, new, reason, date, f"{_shown(file)}:{where.rsplit(':', 1)[-1]}")


def _shown(file: Path) -> str:
    try:
        return file.resolve().relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return file.as_posix()


def _parse_value(file: Path, where: str, name: str, value: Any, column: str) -> Any:
    if name in LIST_FIELDS:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except json.JSONDecodeError as exc:
                raise CorrectionsError(f"{file} ({where}): {column} of {name} must be a JSON array: {exc}") from exc
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CorrectionsError(f"{file} ({where}): {column} of {name} must be a list of strings")
        return value
    if value is None or (isinstance(value, str) and value == "" and name != "question"):
        return None
    if not isinstance(value, str):
        raise CorrectionsError(f"{file} ({where}): {column} must be text (quote it in YAML)")
    return value

