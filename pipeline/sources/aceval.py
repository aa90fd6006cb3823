"""AC-EVAL: <dir>/{dev,test}/<subject>.csv with header `,Question,A,B,C,D[,Answer,Explanation]`
(first column is a pandas index), plus <dir>/subject_mapping.json giving each subject's Chinese
topic and its level (General Historical Knowledge / Short / Long Text Understanding)."""

from __future__ import annotations

import csv
import io
import json

from pipeline.config import SourceSpec
from pipeline.sources import ParseResult, display_path, read_text

OPTION_COLUMNS = ("A", "B", "C", "D")


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    mapping_file = root / "subject_mapping.json"
    mapping = json.loads(read_text(mapping_file)) if mapping_file.is_file() else {}
    for split in ("dev", "test"):
        for path in sorted((root / split).glob("*.csv")):
            _parse_file(spec, split, path, display_path(path, root), mapping, result)
    return result


def _parse_file(spec, split, path, shown, mapping, result: ParseResult) -> None:
    subject = path.stem
    info = mapping.get(subject, {})
    try:
        rows = list(csv.reader(io.StringIO(read_text(path), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        result.raw_counts[shown] += 1
        result.reject("aceval", shown, "file", f"unreadable file: {exc}", "")
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
        key = row[0] if header[0] == "" else str(n)
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
            "benchmark": "aceval",
            "source_version": spec.version,
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
            "source_file": shown,
            "source_locator": f"row {n}",
            "license": spec.license or "CC BY-NC-SA 4.0",
        })
