"""AC-EVAL: <dir>/{dev,test}/<subject>.csv with header `,Question,A,B,C,D[,Answer,Explanation]`
(first column is a pandas index), plus <dir>/subject_mapping.json giving each subject's Chinese
topic and its level (General Historical Knowledge / Short / Long Text Understanding).

Test answers are withheld by AC-EVAL; `submission` writes predictions for the test split in the
JSON shape its organisers score.

A subject's level is its `task_group`, which decides how the average is taken (the mean of the
three levels), so it is never guessed: when subject_mapping.json is broken (not UTF-8, not JSON,
not an object), lacks the subject or gives it no valid level, the subject's rows are quarantined
with the reason. Without any subject_mapping.json, AC-EVAL's own 13 subjects take their published
levels (`SUBJECT_LEVELS`) and other subjects' rows are quarantined."""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.reading import (
    FileUnreadable,
    ParseResult,
    Row,
    display_path,
    guarded_file,
    guarded_row,
    json_type,
    parse_json,
    provenance,
    read_text,
)

LICENSE = "CC BY-NC-SA 4.0"
OPTION_COLUMNS = ("A", "B", "C", "D")
# The subject order of AC-EVAL's subject_mapping.json and submission example.
SUBJECTS = (
    "historical_facts", "geography", "social_customs", "art_and_cultural_heritage", "philosophy_and_religion",
    "lexical_pragmatics_analysis", "allusions_and_idioms", "word_sense_disambiguation", "translation",
    "event_extraction", "sentence_pauses", "summarization_and_analysis", "poetry_appreciation",
)
TEST_ITEM_ID = re.compile(r"^aceval/test/([^/]+)/(\d+)$")
# The three levels (task_group) of AC-EVAL's subject_mapping.json, and each subject's level as
# AC-EVAL publishes it: used only when a source has no subject_mapping.json at all.
LEVELS = ("General Historical Knowledge", "Short Text Understanding", "Long Text Understanding")
SUBJECT_LEVELS = {subject: LEVELS[0] for subject in SUBJECTS[:5]} | {
    subject: LEVELS[1] for subject in SUBJECTS[5:10]} | {subject: LEVELS[2] for subject in SUBJECTS[10:]}
MAPPING_FILE = "subject_mapping.json"


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    mapping, broken = _load_mapping(root / MAPPING_FILE)
    for split in ("dev", "test"):
        if not spec.includes_split(split):
            continue
        for path in sorted((root / split).glob("*.csv")):
            shown = display_path(path, root)
            subject = subject_info(path.stem, mapping, broken)
            guarded_file(result, "aceval", shown, lambda own, split=split, path=path, shown=shown, subject=subject:
                         _parse_file(spec, split, path, shown, subject, own))
    return result


def _load_mapping(path) -> tuple[dict | None, str | None]:
    """(subject -> entry, None); (None, None) when there is no mapping file; (None, the problem)
    when there is one that cannot be read as an object of subjects."""
    if not path.exists():
        return None, None
    try:
        loaded = parse_json(read_text(path))
    except UnicodeDecodeError:
        return None, f"{MAPPING_FILE} is not UTF-8 text"
    except (ValueError, RecursionError) as exc:
        return None, f"{MAPPING_FILE} is not valid JSON ({type(exc).__name__}: {exc})"
    except OSError as exc:
        return None, f"{MAPPING_FILE} cannot be read ({exc})"
    if not isinstance(loaded, dict):
        return None, f"{MAPPING_FILE} is {json_type(loaded)}, not an object of subjects"
    return loaded, None


def subject_info(subject: str, mapping: dict | None, broken: str | None) -> dict[str, Any] | str:
    """The subject's level and names ({"level", "Chinese", "English"}), or why its rows cannot be
    given a level (the reason they are quarantined with)."""
    unknown = "so the level (task_group) of its rows is unknown"
    if broken:
        return f"{broken}, {unknown}"
    if mapping is None:
        if subject not in SUBJECT_LEVELS:
            return f"no {MAPPING_FILE} and {subject!r} is not one of AC-EVAL's 13 subjects, {unknown}"
        return {"level": SUBJECT_LEVELS[subject], "Chinese": None, "English": None}
    entry = mapping.get(subject)
    if entry is None:
        return f"subject {subject} is not in {MAPPING_FILE}, {unknown}"
    if not isinstance(entry, dict):
        return f"{MAPPING_FILE}: {subject} is {json_type(entry)}, not an object, {unknown}"
    level = entry.get("Supercategory")
    if not isinstance(level, str) or level not in LEVELS:
        return f"{MAPPING_FILE}: {subject} has Supercategory {level!r}, not one of {list(LEVELS)}"
    names = {k: entry.get(k) for k in ("Chinese", "English")}
    wrong = [k for k, v in names.items() if v is not None and not isinstance(v, str)]
    if wrong:
        return f"{MAPPING_FILE}: {subject}'s {wrong[0]} is {json_type(names[wrong[0]])}, not text"
    return {"level": level, **names}


def submission(predictions: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> dict[str, dict[str, str]]:
    """Predictions keyed by item_id (`aceval/test/<subject>/<row index>`) -> the official
    submission object `{"<subject>": {"<row index>": "A", ...}, ...}`, subjects in AC-EVAL's
    order and row indices in numeric order; `json.dump(..., ensure_ascii=False)` it to a file.

    Dev items are skipped (their answers are public and scored locally). A prediction that is
    not a letter A-D (an unparsable response) is kept as given: the organisers count it wrong,
    and dropping it would leave the row missing instead."""
    pairs = predictions.items() if isinstance(predictions, Mapping) else predictions
    by_subject: dict[str, dict[int, str]] = {}
    for item_id, answer in pairs:
        if item_id.startswith("aceval/dev/"):
            continue
        match = TEST_ITEM_ID.match(item_id)
        if not match:
            raise ValueError(f"{item_id!r} is not an AC-EVAL test item id (aceval/test/<subject>/<index>)")
        subject, index = match.group(1), int(match.group(2))
        text = (answer or "").strip()
        by_subject.setdefault(subject, {})[index] = text.upper() if text.upper() in OPTION_COLUMNS else text
    order = [s for s in SUBJECTS if s in by_subject] + sorted(set(by_subject) - set(SUBJECTS))
    return {s: {str(i): by_subject[s][i] for i in sorted(by_subject[s])} for s in order}


def _parse_file(spec, split, path, shown, subject: dict[str, Any] | str, result: ParseResult) -> None:
    limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)   # an over-long field is one bad row (text_problem), not a bad file
    try:
        rows = list(csv.reader(io.StringIO(read_text(path), newline="")))
    except csv.Error as exc:
        raise FileUnreadable(f"unreadable CSV: {exc}") from None
    finally:
        csv.field_size_limit(limit)
    if not rows:
        return
    header, body = rows[0], rows[1:]
    needed = ["Question", *OPTION_COLUMNS] + (["Answer"] if split == "dev" else [])
    missing = [c for c in needed if c not in header]
    if missing:
        result.raw_counts[shown] += len(body) or 1
        for n, row in enumerate(body or [header]):
            result.reject("aceval", shown, f"row {n}", f"missing columns: {', '.join(missing)}", row)
        return
    col = {name: header.index(name) for name in header}
    names = [name if name and header.count(name) == 1 else f"column {i + 1}" for i, name in enumerate(header)]
    seen: set[str] = set()
    for n, row in enumerate(body):
        result.raw_counts[shown] += 1
        item = guarded_row(result, "aceval", shown, f"row {n}", row,
                           lambda row=row, n=n: _row(spec, split, path.stem, shown, n, row, header, col, seen, subject),
                           fields=dict(zip(names, row)) if len(row) == len(header) else row)
        if item is not None:
            seen.add(item["item_id"].rsplit("/", 1)[1])
            result.items.append(item)


def _row(spec, split, name, shown, n, row, header, col, seen, subject: dict[str, Any] | str) -> Row:
    if len(row) != len(header):
        return None, f"{len(row)} fields, header has {len(header)}"
    key = row[0].strip() if header[0] == "" else str(n)
    if not key.isdigit():
        return None, f"index {key!r} is not a row number"
    if key in seen:
        return None, f"duplicate index {key}"
    question = row[col["Question"]]
    answer = row[col["Answer"]].strip() if "Answer" in col else None
    if not question.strip():
        return None, "empty question"
    if split == "dev" and answer not in OPTION_COLUMNS:
        return None, f"answer {answer!r} is not one of A-D"
    if isinstance(subject, str):
        return None, subject
    meta = {"topic_zh": subject["Chinese"] or name, "subject_en": subject["English"] or name}
    if "Explanation" in col:
        meta["explanation"] = row[col["Explanation"]]
    return {
        "item_id": f"aceval/{split}/{name}/{key}",
        **provenance(spec, shown, f"row {n}", LICENSE),
        "split": split,
        "task": name,
        "task_group": subject["level"],
        "domain": subject["Chinese"],
        "capability": None,
        "format": "mcq_single",
        "context": None,
        "question": question,
        "choices": [row[col[c]] for c in OPTION_COLUMNS],   # not stripped: the official prompt keeps spaces
        "answer": answer,
        "references": [],
        "metadata": meta,
    }, ""
