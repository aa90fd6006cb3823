"""AC-EVAL: <dir>/{dev,test}/<subject>.csv with header `,Question,A,B,C,D[,Answer,Explanation]`
(first column is a pandas index), plus <dir>/subject_mapping.json giving each subject's Chinese
topic and its level (General Historical Knowledge / Short / Long Text Understanding).

Test answers are withheld by AC-EVAL; `submission` writes predictions for the test split in the
JSON shape its organisers score."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping

from pipeline.config import SourceSpec
from pipeline.sources.reading import ParseResult, display_path, guarded_file, provenance, read_text

LICENSE = "CC BY-NC-SA 4.0"
OPTION_COLUMNS = ("A", "B", "C", "D")
# The subject order of AC-EVAL's subject_mapping.json and submission example.
SUBJECTS = (
    "historical_facts", "geography", "social_customs", "art_and_cultural_heritage", "philosophy_and_religion",
    "lexical_pragmatics_analysis", "allusions_and_idioms", "word_sense_disambiguation", "translation",
    "event_extraction", "sentence_pauses", "summarization_and_analysis", "poetry_appreciation",
)
TEST_ITEM_ID = re.compile(r"^aceval/test/([^/]+)/(\d+)$")


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    mapping_file = root / "subject_mapping.json"
    mapping: dict = {}
    if mapping_file.is_file():
        try:
            loaded = json.loads(read_text(mapping_file))
            mapping = loaded if isinstance(loaded, dict) else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            mapping = {}  # subjects then fall back to their file names; the CSV rows still load
    for split in ("dev", "test"):
        if not spec.includes_split(split):
            continue
        for path in sorted((root / split).glob("*.csv")):
            shown = display_path(path, root)
            guarded_file(result, "aceval", shown, lambda own, split=split, path=path, shown=shown:
                         _parse_file(spec, split, path, shown, mapping, own))
    return result


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


def _parse_file(spec, split, path, shown, mapping, result: ParseResult) -> None:
    subject = path.stem
    info = mapping.get(subject)
    info = info if isinstance(info, dict) else {}
    try:
        rows = list(csv.reader(io.StringIO(read_text(path), newline="")))
    except csv.Error as exc:
        result.raw_counts[shown] += 1
        result.reject("aceval", shown, "file", f"unreadable CSV: {exc}", "")
        return
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
    seen: set[str] = set()
    for n, row in enumerate(body):
        result.raw_counts[shown] += 1
        if len(row) != len(header):
            result.reject("aceval", shown, f"row {n}", f"{len(row)} fields, header has {len(header)}", row)
            continue
        key = row[0].strip() if header[0] == "" else str(n)
        if not key.isdigit():
            result.reject("aceval", shown, f"row {n}", f"index {key!r} is not a row number", row)
            continue
        if key in seen:
            result.reject("aceval", shown, f"row {n}", f"duplicate index {key}", row)
            continue
        question = row[col["Question"]]
        answer = row[col["Answer"]].strip() if "Answer" in col else None
        if not question.strip():
            result.reject("aceval", shown, f"row {n}", "empty question", row)
            continue
        if split == "dev" and answer not in OPTION_COLUMNS:
            result.reject("aceval", shown, f"row {n}", f"answer {answer!r} is not one of A-D", row)
            continue
        seen.add(key)
        meta = {"topic_zh": info.get("Chinese", subject), "subject_en": info.get("English", subject)}
        if "Explanation" in col:
            meta["explanation"] = row[col["Explanation"]]
        result.items.append({
            "item_id": f"aceval/{split}/{subject}/{key}",
            **provenance(spec, shown, f"row {n}", LICENSE),
            "split": split,
            "task": subject,
            "task_group": info.get("Supercategory", "unknown"),
            "domain": info.get("Chinese"),
            "capability": None,
            "format": "mcq_single",
            "context": None,
            "question": question,
            "choices": [row[col[c]] for c in OPTION_COLUMNS],   # not stripped: the official prompt keeps spaces
            "answer": answer,
            "references": [],
            "metadata": meta,
        })
