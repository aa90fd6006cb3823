"""WenMind: one JSON array of objects (id, domain, capability, question_format, coarse/fine task
names in zh and en, optional difficulty, question, answer). MCQ options are inline in `question`."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from pipeline.config import SourceSpec
from pipeline.sources.reading import ParseResult, display_path, guarded_file, provenance, read_text

LICENSE = "CC BY-NC-SA 4.0"
REQUIRED = ("id", "question", "answer", "question_format", "fine_grained_task_en", "coarse_grained_task_en")
LETTERS = re.compile(r"^[A-H]$")
LETTER_SET = re.compile(r"^[A-H](?:[、,，\s]*[A-H])+$")
# Options are written inline after the stem, most often "A、text  B、text" / "A.text" / "A．text"
# after a space or newline; some run on from the stem ("…？A.甲B.乙") or have no separator at all
# ("…（）A杜甫B苏轼C李白"). Patterns from strict to loose; the letters found must read A, B, C, …
INLINE_OPTION = re.compile(r"(?:^|\s|\n)([A-H])[、.．:：]\s*")
GLUED_OPTION = re.compile(r"(?<![A-Za-z0-9])([A-H])[、.．:：]\s*")
BARE_OPTION = re.compile(r"(?<![A-Za-z0-9])([A-H])(?![A-Za-z0-9])")


def split_inline_choices(question: str) -> list[str]:
    """The option texts, or [] when the question has no readable A, B, C, … sequence. The loosest
    pattern is used only when it finds more options than a stricter one (as in "…C、丙D丁")."""
    best: list[str] = []
    for pattern in (INLINE_OPTION, GLUED_OPTION, BARE_OPTION):
        choices = _choices(question, pattern)
        if len(choices) > len(best):
            best = choices
    return best


def _choices(question: str, pattern: re.Pattern) -> list[str]:
    marks = list(pattern.finditer(question))
    labels = [m.group(1) for m in marks]
    if len(labels) < 2 or labels != [chr(ord("A") + i) for i in range(len(labels))]:
        return []
    ends = [m.start() for m in marks[1:]] + [len(question)]
    return [question[m.end():end].lstrip("、.．:：").strip() for m, end in zip(marks, ends)]


def item_format(question_format: str, answer: str) -> str:
    if question_format == "FB":
        return "fill_blank"
    if question_format == "MCQ":
        if LETTERS.match(answer):
            return "mcq_single"
        if LETTER_SET.match(answer):
            return "mcq_multi"
        return "classification"  # sentiment-style MCQs whose gold is a label text
    return "open_qa"


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    files = [spec.path] if spec.path.is_file() else sorted(spec.path.glob("WenMind*.json"))
    root = spec.path.parent if spec.path.is_file() else spec.path
    for path in files:
        shown = display_path(path, root)
        guarded_file(result, "wenmind", shown, lambda own, path=path, shown=shown: _parse_file(spec, path, shown, own))
    _attach_label_sets(result)
    return result


def _parse_file(spec: SourceSpec, path, shown: str, result: ParseResult) -> None:
    try:
        records = json.loads(read_text(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        result.raw_counts[shown] += 1
        result.reject("wenmind", shown, "file", f"unreadable file: {exc}", "")
        return
    if not isinstance(records, list):
        result.raw_counts[shown] += 1
        result.reject("wenmind", shown, "file", "expected a JSON array of items", str(type(records)))
        return
    seen: set[str] = set()
    for index, rec in enumerate(records):
        result.raw_counts[shown] += 1
        if not isinstance(rec, dict):
            result.reject("wenmind", shown, index, "not a JSON object", rec)
            continue
        missing = [k for k in REQUIRED if rec.get(k) in (None, "")]
        if missing:
            result.reject("wenmind", shown, index, f"missing or empty: {', '.join(missing)}", rec)
            continue
        key = str(rec["id"])
        if key in seen:
            result.reject("wenmind", shown, index, f"duplicate id {key}", rec)
            continue
        seen.add(key)
        question, answer = str(rec["question"]), str(rec["answer"]).strip()
        fmt = item_format(str(rec["question_format"]), answer)
        choices = split_inline_choices(question) if fmt.startswith("mcq") else []
        meta = {k: rec[k] for k in ("difficulty", "coarse_grained_task_zh", "fine_grained_task_zh",
                                     "question_format") if k in rec}
        result.items.append({
            "item_id": f"wenmind/test/{_slug(rec['fine_grained_task_en'])}/{key}",
            **provenance(spec, shown, index, LICENSE),
            "split": "test",
            "task": str(rec["fine_grained_task_en"]),
            "task_group": str(rec["coarse_grained_task_en"]),
            "domain": rec.get("domain"),
            "capability": rec.get("capability"),
            "format": fmt,
            "context": None,
            "question": question,
            "choices": choices,
            "answer": answer,
            "references": [],
            "metadata": meta,
        })


def _attach_label_sets(result: ParseResult) -> None:
    """Label-text MCQs are scored against their task's label set, so record it on each item."""
    labels = defaultdict(set)
    for item in result.items:
        if item["format"] == "classification":
            labels[item["task"]].add(item["answer"])
    for item in result.items:
        if item["format"] == "classification":
            item["metadata"]["labels"] = sorted(labels[item["task"]])


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
