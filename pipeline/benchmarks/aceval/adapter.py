"""AC-EVAL: <dir>/{dev,test}/<subject>.csv with header `,Question,A,B,C,D[,Answer,Explanation]`
(first column is a pandas index), plus <dir>/subject_mapping.json giving each subject's Chinese
topic and its level (General Historical Knowledge / Short / Long Text Understanding).

Test answers are withheld by AC-EVAL; `submission` writes predictions for the test split in the
JSON shape its organisers score.

A subject's level is its `task_group`, which decides how the average is taken (the mean of the
three levels), so it is never guessed: a subject_mapping.json that is broken (not UTF-8, not
JSON, not an object) is the source's error (`SourceError`: one line, no rows), and one that lacks
a subject or gives it no valid level quarantines that subject's rows with the reason. Without any
subject_mapping.json, AC-EVAL's own 13 subjects take their published levels (`SUBJECT_LEVELS`)
and other subjects' rows are quarantined."""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pipeline.sources.accounting import FileUnreadable, ParseResult, Row, SourceError, guarded_file, guarded_row
from pipeline.sources.json_array import parse_json
from pipeline.sources.keys import item_id, provenance
from pipeline.sources.layout import Layout
from pipeline.sources.text import display_path, json_type, read_text

if TYPE_CHECKING:  # annotations only: pipeline.config reaches this module (the source layout check)
    from pipeline.config import SourceSpec

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
SPLITS = ("dev", "test")   # <dir>/<split>/<subject>.csv


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    mapping = load_mapping(root)
    for split in SPLITS:
        if not spec.includes_split(split):
            continue
        for path in sorted((root / split).glob("*.csv")):
            shown = display_path(path, root)
            subject = subject_info(path.stem, mapping)
            guarded_file(result, "aceval", shown, lambda own, split=split, path=path, shown=shown, subject=subject:
                         _parse_file(spec, split, path, shown, subject, own))
    return result


def present_splits(root) -> set[str]:
    """The splits whose folder holds at least one subject's CSV file (the source layout check)."""
    return {split for split in SPLITS if any((root / split).glob("*.csv"))}


def load_mapping(root) -> dict | None:
    """`root/subject_mapping.json`: subject -> entry, or None when there is none. One that cannot
    be read as an object of subjects raises SourceError: every level would be unknown."""
    path = root / MAPPING_FILE
    if not path.exists():
        return None
    try:
        loaded = parse_json(read_text(path))
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise SourceError(f"{path} is not valid JSON ({type(exc).__name__}: {exc}); expected an object "
                          "subject -> {Chinese, English, Supercategory}") from None
    except OSError as exc:
        raise SourceError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if not isinstance(loaded, dict):
        raise SourceError(f"{path} is {json_type(loaded)}; expected an object subject -> "
                          "{Chinese, English, Supercategory}")
    return loaded


def check_mapping(root) -> None:
    """Raises SourceError when `root`'s subject_mapping.json is broken (the source layout check)."""
    if root.is_dir():
        load_mapping(root)


def subject_info(subject: str, mapping: dict | None) -> dict[str, Any] | str:
    """The subject's level and names ({"level", "Chinese", "English"}), or why its rows cannot be
    given a level (the reason they are quarantined with)."""
    unknown = "so the level (task_group) of its rows is unknown"
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
    for identifier, answer in pairs:
        if identifier.startswith("aceval/dev/"):
            continue
        match = TEST_ITEM_ID.match(identifier)
        if not match:
            raise ValueError(f"{identifier!r} is not an AC-EVAL test item id (aceval/test/<subject>/<index>)")
        subject, index = match.group(1), int(match.group(2))
        text = (answer or "").strip()
        by_subject.setdefault(subject, {})[index] = text.upper() if text.upper() in OPTION_COLUMNS else text
    order = [s for s in SUBJECTS if s in by_subject] + sorted(set(by_subject) - set(SUBJECTS))
    return {s: {str(i): by_subject[s][i] for i in sorted(by_subject[s])} for s in order}


def _parse_file(spec, split, path, shown, subject: dict[str, Any] | str, result: ParseResult) -> None:
    rows, lines = _csv_rows(path)
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
                           lambda row=row, n=n: _row(spec, split, path.stem, shown, n, row, header, col, seen, subject,
                                                     lines[n + 1]),
                           fields=dict(zip(names, row)) if len(row) == len(header) else row)
        if item is not None:
            seen.add(item["item_id"].rsplit("/", 1)[1])
            result.items.append(item)


def _csv_rows(path) -> tuple[list[list[str]], list[tuple[int, int]]]:
    """The file's CSV rows, and the first and last line (1-based) of each: a quoted field may
    span lines, so a row's lines are where the reader found it, not its index."""
    limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)   # an over-long field is one bad row (text_problem), not a bad file
    rows, lines = [], []
    try:
        reader = csv.reader(io.StringIO(read_text(path), newline=""))
        for row in reader:
            lines.append((lines[-1][1] + 1 if lines else 1, reader.line_num))
            rows.append(row)
    except csv.Error as exc:
        raise FileUnreadable(f"unreadable CSV at line {reader.line_num}: {exc}") from None
    finally:
        csv.field_size_limit(limit)
    return rows, lines


def _field_count(row: list[str], header: list[str], lines: tuple[int, int]) -> str:
    """Why a row has the wrong number of fields. A quote that is not closed where it should be
    runs on over the next lines, which the row then swallows: named by the line it opened on."""
    counted = f"{len(row)} fields, header has {len(header)}"
    first, last = lines
    if last == first:
        return counted
    column = next((i for i, field in enumerate(row) if "\n" in field), 0)
    swallowed = f"line {last} was" if last == first + 1 else f"lines {first + 1}-{last} were"
    return (f"unterminated quote: the quote opened on line {first} (field {column + 1}) runs on to line {last}, "
            f"so {swallowed} read into this row ({counted})")


def _row(spec, split, name, shown, n, row, header, col, seen, subject: dict[str, Any] | str,
         lines: tuple[int, int]) -> Row:
    if len(row) != len(header):
        return None, _field_count(row, header, lines)
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
        "item_id": item_id("aceval", split, name, key),
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


# where the files lie (pipeline/sources/layout.py): the splits' folders, and the mapping checked
LAYOUT = Layout(f"a folder holding {' and/or '.join(s + '/' for s in SPLITS)} folders of <subject>.csv files, "
                f"and {MAPPING_FILE}", False, True, present_splits, check_mapping)
