"""Corrections to benchmark items, and what changed between two builds of a source.

Benchmarks ship errors (wrong gold answers, typos, scraping leftovers). wenheng never edits the
upstream files; a correction is a row in a file under data/corrections/ (CSV or YAML) with the
columns `item_id, field, old, new, reason, date`. It is applied to the standardized items only
while the item still has the `old` value: once upstream fixes (or otherwise changes) the item,
the correction is reported `stale` instead of overwriting the new text. Every correction yields
one audit row (pipeline.schema.CORRECTIONS_AUDIT), applied or not.

A correction may be scoped, per file (top-level keys of a YAML file) or per row (keys of the
entry; CSV columns), by `benchmark`, `version` (the source `version` in sources.yaml; a string or
a list) and `path` (a glob, or a list, matched with fnmatch against the benchmark's configured
source: its absolute path, its path relative to the project, or its url). A correction outside
its scope is not applied and is reported `out_of_scope`: a fix written for one release of a
benchmark never touches another, and is not `stale` there.

`old` and `new` are the field's values: plain text for text fields, a JSON array (CSV) or a list
(YAML) for `choices` and `references`; an empty `old` / `new` cell means null for the text
fields `context` and `answer`.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.paths import PROJECT_ROOT
from pipeline.rows import derive_fields

TEXT_FIELDS = ("context", "question", "answer")
LIST_FIELDS = ("choices", "references")
FIELDS = TEXT_FIELDS + LIST_FIELDS
COLUMNS = ("item_id", "field", "old", "new", "reason", "date")
SCOPE_KEYS = ("benchmark", "version", "path")
FILE_KEYS = ("corrections", *SCOPE_KEYS)
# Fields compared between two builds of a source: what a model is asked and what it is scored on.
DIFF_FIELDS = ("context", "question", "choices", "answer", "references")


class CorrectionsError(ValueError):
    """A corrections file is malformed; one line per problem, each naming the file and the entry."""


@dataclass(frozen=True)
class Scope:
    """Where a correction applies; an empty part matches everything."""

    benchmark: str | None = None
    versions: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()     # fnmatch globs

    def problem(self, version: str | None, locations: tuple[str, ...] | None) -> str | None:
        """Why a benchmark built from source `version` at `locations` is outside this scope, or None.
        `locations` None: the benchmark's source is not known here."""
        if self.versions and version not in self.versions:
            return f"scoped to version {' or '.join(self.versions)}; the source is version {version}"
        if self.paths:
            if not locations:
                return f"scoped to path {' or '.join(self.paths)}; the source's path is not known"
            if not any(fnmatch.fnmatchcase(loc, glob) for loc in locations for glob in self.paths):
                return f"scoped to path {' or '.join(self.paths)}; the source is {locations[0]}"
        return None


@dataclass(frozen=True)
class Correction:
    item_id: str
    field: str
    old: Any
    new: Any
    reason: str
    date: str
    origin: str         # "<file>:<n>": the CSV line or the YAML entry number
    scope: Scope = Scope()

    @property
    def benchmark(self) -> str:
        return self.item_id.split("/", 1)[0]


def load_corrections(path: Path) -> list[Correction]:
    """Every correction in a file, or in the *.csv / *.yaml / *.yml files of a folder (name order).
    A missing folder means no corrections. Every problem of every file is collected and raised
    together, one line each."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".csv", ".yaml", ".yml"))
    elif path.is_file():
        files = [path]
    else:
        return []
    corrections: list[Correction] = []
    problems: list[str] = []
    for file in files:
        try:
            defaults, rows = _csv_rows(file) if file.suffix.lower() == ".csv" else _yaml_rows(file)
        except CorrectionsError as exc:
            problems += str(exc).splitlines()
            continue
        defaults = _file_scope(file, defaults, problems)
        for where, row in rows:
            try:
                corrections.append(_correction(file, where, row, defaults))
            except CorrectionsError as exc:
                problems += str(exc).splitlines()
    if problems:
        raise CorrectionsError("\n".join(problems))
    return corrections


def source_locations(sources: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """benchmark -> the strings a `path` scope is matched against: the configured source's absolute
    path, its path relative to the project (e.g. data/samples/wyweb) and its url, if any."""
    found = {}
    for name, spec in sources.items():
        where = Path(spec.path).resolve()
        locations = [where.as_posix()]
        if where.is_relative_to(PROJECT_ROOT):
            locations.insert(0, where.relative_to(PROJECT_ROOT).as_posix())
        if getattr(spec, "url", ""):
            locations.append(spec.url)
        found[name] = tuple(locations)
    return found


def apply_corrections(items: Iterable[dict[str, Any]], corrections: Iterable[Correction],
                      sources: Mapping[str, Any] | None = None
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(corrected items, audit rows). Items are copied, never modified in place; corrections run in
    order, so a second correction of the same field sees the first one's result. The script and
    both hashes of a corrected item are recomputed.

    `sources` (benchmark -> SourceSpec, as load_sources returns) is where `path` scopes look; a
    benchmark it does not name has no known path, so its path-scoped corrections are out of scope."""
    items = [dict(item) for item in items]
    corrections = list(corrections)
    by_id = {item["item_id"]: item for item in items}
    versions = {item["benchmark"]: item.get("source_version") for item in items}
    locations = source_locations(sources or {})
    audit, changed = [], set()
    for corr in corrections:
        if corr.benchmark not in versions:
            continue  # a correction to a benchmark this build does not ingest
        outside = corr.scope.problem(versions[corr.benchmark], locations.get(corr.benchmark))
        if outside:
            audit.append(_audit(corr, corr.benchmark, "out_of_scope", note=outside))
            continue
        item = by_id.get(corr.item_id)
        if item is None:
            audit.append(_audit(corr, corr.benchmark, "unknown_item"))
            continue
        current = _value(item.get(corr.field), corr.field)
        if current != corr.old:
            audit.append(_audit(corr, item["benchmark"], "stale",
                                note=f"the item's {corr.field} is now {_encode(current)}"))
            continue
        item[corr.field] = list(corr.new) if corr.field in LIST_FIELDS else corr.new
        changed.add(corr.item_id)
        audit.append(_audit(corr, item["benchmark"], "applied"))
    for item_id in changed:
        derive_fields(by_id[item_id])
    return items, audit


def correct(items: Iterable[dict[str, Any]], path: Path, sources: Mapping[str, Any] | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Load the corrections under `path` (a file or folder) and apply them."""
    return apply_corrections(items, load_corrections(path), sources)


def diff_versions(previous_items: Iterable[dict[str, Any]], new_items: Iterable[dict[str, Any]],
                  corrected: Iterable[dict[str, Any]] | None = None,
                  previous_audit: Iterable[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Audit rows for what changed between the previous build of a source and this one, items
    matched by item_id: `changed_upstream`, one row per field (context, question, choices, answer,
    references) that differs; `removed_upstream`, one row per previous item no longer there;
    `added_upstream`, one row per new item. Origin "upstream <old version> -> <new version>", or
    "upstream <version> (same version label)" when the label did not change but the content did.

    `new_items` are the items as read from upstream; `corrected` (optional) the same items after
    corrections. The previous build holds corrected items, so a field counts as unchanged when its
    previous value equals either the upstream or the corrected value now: a correction applied to
    both builds, or first applied in this one, is not an upstream change; nor is one gone: with
    `previous_audit` (the previous build's audit), a field that holds the upstream value the
    previous build corrected is one `reverted` row (origin: the correction's file and entry).

    Items that carry their content and answer hashes (as built items do) are compared on those
    first: equal hashes mean that no compared field differs, so only changed items are compared
    field by field."""
    new_items = list(new_items)
    before = {item["item_id"]: item for item in previous_items}
    after = {item["item_id"]: item for item in (corrected if corrected is not None else new_items)}
    # each field the previous build corrected -> its first correction, whose `old` was the upstream value
    applied = {(row["item_id"], row["field"]): row for row in reversed(list(previous_audit or ()))
               if row.get("status") == "applied"}
    now_ids = {item["item_id"] for item in new_items}
    was_version = next((item.get("source_version") for item in before.values()), None)
    now_version = next((item.get("source_version") for item in new_items), None)
    rows = []
    for item in new_items:
        old = before.get(item["item_id"])
        if old is None:
            rows.append(_presence_row(item, "added_upstream", _origin(was_version, now_version)))
        elif not _same_hashes(old, item):   # equal hashes: no compared field differs
            rows += _field_rows(old, item, after.get(item["item_id"], item), applied)
    for item_id, old in before.items():
        if item_id not in now_ids:
            rows.append(_presence_row(old, "removed_upstream", _origin(old.get("source_version"), now_version)))
    return rows


def _field_rows(old: Mapping[str, Any], item: Mapping[str, Any], fixed: Mapping[str, Any],
                applied: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One item's rows: each compared field changed upstream, or whose earlier correction is gone."""
    rows = []
    for name in DIFF_FIELDS:
        was, now, corrected = (_value(x.get(name), name) for x in (old, item, fixed))
        if was == now or was == corrected:
            continue
        earlier = applied.get((item["item_id"], name))
        if earlier is None or earlier["old"] != _encode(now):
            status, reason, date, origin = "changed_upstream", "changed between versions", None, \
                _origin(old.get("source_version"), item.get("source_version"))
        elif corrected == now:   # upstream unchanged, the correction no longer applied
            status, date, origin = "reverted", earlier.get("date"), earlier.get("origin")
            reason = f"{earlier.get('reason')} [reverted: no longer applied, the item has its upstream value]"
        else:
            continue   # upstream unchanged, another correction of the field applied instead
        rows.append({"item_id": item["item_id"], "benchmark": item.get("benchmark"), "field": name,
                     "old": _encode(was), "new": _encode(now), "reason": reason, "date": date, "status": status,
                     "origin": origin})
    return rows


# ---------------------------------------------------------------------------------------------

def _value(value: Any, name: str) -> Any:
    """A field's value in comparable form: lists (also numpy arrays from parquet) as lists."""
    if name in LIST_FIELDS:
        return [str(v) for v in value] if value is not None else []
    return value


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same_hashes(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Both items carry content and answer hashes and they are equal: the hashes cover every
    DIFF_FIELDS value (content: context, question, choices; answer: answer, references)."""
    return all(old.get(name) is not None and old.get(name) == new.get(name) for name in ("content_hash", "answer_hash"))


def _origin(was: Any, now: Any) -> str:
    return f"upstream {was} -> {now}" if was != now else f"upstream {now} (same version label)"


def _presence_row(item: Mapping[str, Any], status: str, origin: str) -> dict[str, Any]:
    """One row for an item that only one of the two builds has: its compared fields as `new`
    (added) or `old` (removed), and where it is (or was) in the source as the reason."""
    fields = _encode({name: _value(item.get(name), name) for name in DIFF_FIELDS})
    where = f"{item.get('source_file')} {item.get('source_locator')}"
    added = status == "added_upstream"
    return {"item_id": item["item_id"], "benchmark": item.get("benchmark"), "field": None,
            "old": None if added else fields, "new": fields if added else None,
            "reason": f"new upstream, at {where}" if added else f"no longer upstream (was at {where})",
            "date": None, "status": status, "origin": origin}


def _audit(corr: Correction, benchmark: str, status: str, note: str | None = None) -> dict[str, Any]:
    reason = corr.reason if note is None else f"{corr.reason} [not applied: {note}]"
    return {"item_id": corr.item_id, "benchmark": benchmark, "field": corr.field, "old": _encode(corr.old),
            "new": _encode(corr.new), "reason": reason, "date": corr.date, "status": status,
            "origin": corr.origin}


def _read_text(file: Path) -> str:
    """A corrections file's text (UTF-8, a byte-order mark allowed); a file that is not UTF-8 or
    cannot be read is a CorrectionsError naming it."""
    try:
        return file.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorrectionsError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                               "save it as UTF-8") from None
    except OSError as exc:
        raise CorrectionsError(f"{file}: cannot be read ({exc.strerror or exc})") from None


def _csv_rows(file: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    text = _read_text(file).replace("\r\n", "\n")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    problems = []
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        problems.append(f"{file}: missing columns {missing}; expected {', '.join(COLUMNS)}")
    unknown = [c for c in header if c not in COLUMNS + SCOPE_KEYS]
    if unknown:
        problems.append(f"{file}: unknown columns {unknown}; expected {', '.join(COLUMNS)} "
                        f"and optionally {', '.join(SCOPE_KEYS)}")
    if problems:
        raise CorrectionsError("\n".join(problems))
    # an empty scope cell means no scope of that kind
    return {}, [(f"{file.name}:{reader.line_num}",
                 {k: v for k, v in row.items() if not (k in SCOPE_KEYS and not (v or "").strip())})
                for row in reader]


def _yaml_rows(file: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    try:
        data = yaml.safe_load(_read_text(file))
    except yaml.YAMLError as exc:
        raise CorrectionsError(f"{file}: not valid YAML: {str(exc).splitlines()[0]}") from None
    defaults: dict[str, Any] = {}
    if isinstance(data, dict):
        unknown = sorted(str(k) for k in data if k not in FILE_KEYS)
        if unknown:
            raise CorrectionsError(f"{file}: unknown keys {unknown}; expected corrections and optionally "
                                   f"{', '.join(SCOPE_KEYS)}")
        defaults = {k: data[k] for k in SCOPE_KEYS if k in data}
        rows = data.get("corrections")
    else:
        rows = data
    if not isinstance(rows, list):
        raise CorrectionsError(f"{file}: expected a list of corrections (or a 'corrections:' list)")
    return defaults, [(f"{file.name}:{n}", row) for n, row in enumerate(rows, start=1)]


def _correction(file: Path, where: str, row: Any, defaults: Mapping[str, Any]) -> Correction:
    at = f"{file} ({where})"
    if not isinstance(row, dict):
        raise CorrectionsError(f"{at}: expected a mapping with {', '.join(COLUMNS)}")
    problems = []
    missing = [c for c in COLUMNS if c not in row]
    if missing:
        problems.append(f"{at}: missing {missing}")
    unknown = sorted(str(k) for k in row if k not in COLUMNS + SCOPE_KEYS)
    if unknown:
        problems.append(f"{at}: unknown keys {unknown}; expected {', '.join(COLUMNS)} "
                        f"and optionally {', '.join(SCOPE_KEYS)}")
    if problems:
        raise CorrectionsError("\n".join(problems))
    item_id, name = str(row["item_id"] or "").strip(), str(row["field"] or "").strip()
    if item_id.count("/") < 3:
        problems.append(f"{at}: item_id {item_id!r} is not benchmark/split/task/key")
    if name not in FIELDS:
        problems.append(f"{at}: field {name!r} cannot be corrected; use one of {FIELDS}")
    reason = str(row["reason"] or "").strip()
    if not reason:
        problems.append(f"{at}: every correction needs a reason")
    date = row["date"]
    try:
        date = dt.date.fromisoformat(str(date)).isoformat() if not isinstance(date, dt.date) else date.isoformat()
    except ValueError:
        problems.append(f"{at}: date {row['date']!r} is not YYYY-MM-DD")
    values = []
    for column in ("old", "new"):
        try:
            values.append(_parse_value(file, where, name, row[column], column) if name in FIELDS else None)
        except CorrectionsError as exc:
            problems.append(str(exc))
    if name == "question" and len(values) == 2 and not values[1]:
        problems.append(f"{at}: a question cannot be corrected to empty")
    scope = _scope(at, item_id.split("/", 1)[0], {**defaults, **{k: row[k] for k in SCOPE_KEYS if k in row}},
                   problems)
    if problems:
        raise CorrectionsError("\n".join(problems))
    return Correction(item_id, name, values[0], values[1], reason, date,
                      f"{_shown(file)}:{where.rsplit(':', 1)[-1]}", scope)


def _file_scope(file: Path, given: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """A YAML file's own scope keys, checked once: the valid ones, with a line for each bad one."""
    from pipeline import benchmarks

    valid = {}
    benchmark = given.get("benchmark")
    if benchmark is not None:
        if isinstance(benchmark, str) and benchmark in benchmarks.names():
            valid["benchmark"] = benchmark
        else:
            problems.append(f"{file}: benchmark {benchmark!r} is not one of {', '.join(benchmarks.names())}")
    for key in ("version", "path"):
        before = len(problems)
        if _scope_values(str(file), key, given.get(key), problems) and len(problems) == before:
            valid[key] = given[key]
    return valid


def _scope(at: str, item_benchmark: str, given: Mapping[str, Any], problems: list[str]) -> Scope:
    from pipeline import benchmarks

    known = benchmarks.names()
    if item_benchmark not in known:
        problems.append(f"{at}: item_id names benchmark {item_benchmark!r}; expected one of {', '.join(known)}")
    benchmark = given.get("benchmark")
    if benchmark is not None:
        if not isinstance(benchmark, str) or benchmark not in known:
            problems.append(f"{at}: benchmark {benchmark!r} is not one of {', '.join(known)}")
        elif benchmark != item_benchmark:
            problems.append(f"{at}: item_id {item_benchmark}/... is outside the scope benchmark {benchmark!r}")
    return Scope(benchmark if isinstance(benchmark, str) else None,
                 _scope_values(at, "version", given.get("version"), problems),
                 _scope_values(at, "path", given.get("path"), problems))


def _scope_values(at: str, key: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    """A scope's `version` or `path`: a string (a version may be an integer in YAML) or a list."""
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, (str, int)) or not str(v).strip()
                         for v in values):
        what = "a version label" if key == "version" else "a path glob"
        problems.append(f"{at}: {key} must be {what} or a list of them (got {value!r}); quote it in YAML")
        return ()
    return tuple(str(v).strip() for v in values)


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
                raise CorrectionsError(f"{file} ({where}): {column} of {name} must be a JSON array: {exc}") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CorrectionsError(f"{file} ({where}): {column} of {name} must be a list of strings")
        return value
    if value is None or (isinstance(value, str) and value == "" and name != "question"):
        return None
    if not isinstance(value, str):
        raise CorrectionsError(f"{file} ({where}): {column} must be text (quote it in YAML)")
    return value
