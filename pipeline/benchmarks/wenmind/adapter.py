"""WenMind: one JSON array of objects (id, domain, capability, question_format, coarse/fine task
names in zh and en, optional difficulty, question, answer). MCQ options are inline in `question`.

Each array element is one raw row read through `guarded_row`: text fields must be strings (a
number or object in `question` is quarantined, never `str()`-ed), and an MCQ whose answer names an
option the inline options could not be split into (answer Z, options only up to H) is
quarantined with the reason instead of becoming another format."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.accounting import ParseResult, Row, guarded_file
from pipeline.sources.json_array import read_json_array
from pipeline.sources.keys import item_id, provenance
from pipeline.sources.layout import Layout
from pipeline.sources.records import unique_items
from pipeline.sources.text import display_path, json_type, non_text

LICENSE = "CC BY-NC-SA 4.0"
REQUIRED = ("id", "question", "answer", "question_format", "fine_grained_task_en", "coarse_grained_task_en")
TEXT_FIELDS = ("question", "answer", "question_format", "fine_grained_task_en", "coarse_grained_task_en",
               "fine_grained_task_zh", "coarse_grained_task_zh", "domain", "capability", "difficulty")
# An MCQ answer that is option letters: one (mcq_single) or several (mcq_multi, "A、C").
LETTERS = re.compile(r"^[A-Z]$")
LETTER_SET = re.compile(r"^[A-Z](?:[、,，\s]*[A-Z])+$")
# Inline options are split for the letters A-H (WenMind's questions have at most 6).
INLINE_LETTERS = "ABCDEFGH"
# Options are written inline after the stem, most often "A、text  B、text" / "A.text" / "A．text"
# after a space or newline; some run on from the stem ("…？A.甲B.乙") or have no separator at all
# ("…（）A杜甫B苏轼C李白"). Patterns from strict to loose; the letters found must read A, B, C, …
INLINE_OPTION = re.compile(r"(?:^|\s|\n)([A-H])[、.．:：]\s*")
GLUED_OPTION = re.compile(r"(?<![A-Za-z0-9])([A-H])[、.．:：]\s*")
BARE_OPTION = re.compile(r"(?<![A-Za-z0-9])([A-H])(?![A-Za-z0-9])")
# An option after the last one split (I), inside the last option's text: the options run on.
NEXT_OPTION = re.compile(r"(?<![A-Za-z0-9])I[、.．:：]")


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


def _splits(path) -> set[str]:
    return {"test"} if path.is_file() or any(path.glob("WenMind*.json")) else set()


LAYOUT = Layout("a WenMind JSON file (WenMind_ver1.json) or a folder of WenMind*.json files", True, True, _splits)


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
    for _, _, item in unique_items(result, "wenmind", shown, _elements(path, shown, result),
                                   lambda index, rec: _row(spec, shown, index, rec),
                                   key=lambda _, item: item["item_id"].rsplit("/", 1)[1]):
        result.items.append(item)


def _elements(path, shown: str, result: ParseResult) -> Iterator[tuple[int, Any]]:
    """(index, element) for each element of the file's array, counted; an element that is not
    valid JSON on its own is quarantined here."""
    for index, (rec, broken, text) in enumerate(read_json_array(path)):
        result.raw_counts[shown] += 1
        if broken is not None:
            result.reject("wenmind", shown, index, broken, text)
            continue
        yield index, rec


def _row(spec: SourceSpec, shown: str, index: int, rec) -> Row:
    if not isinstance(rec, dict):
        return None, "not a JSON object"
    missing = [k for k in REQUIRED if rec.get(k) is None or (isinstance(rec.get(k), str) and not rec[k].strip())]
    if missing:
        return None, f"missing or empty: {', '.join(missing)}"
    wrong = non_text(rec, TEXT_FIELDS)
    if wrong:
        return None, wrong
    if isinstance(rec["id"], bool) or not isinstance(rec["id"], (str, int)):
        return None, f"id is {json_type(rec['id'])}, not a string or integer"
    key = str(rec["id"]).strip()
    question, answer = rec["question"], rec["answer"].strip()
    fmt = item_format(rec["question_format"], answer)
    choices: list[str] = []
    if fmt.startswith("mcq"):
        choices = split_inline_choices(question)
        reason = _options_problem(choices, answer)
        if reason:
            return None, reason
    meta = {k: rec[k] for k in ("difficulty", "coarse_grained_task_zh", "fine_grained_task_zh",
                                 "question_format") if k in rec}
    return {
        "item_id": item_id("wenmind", "test", _slug(rec["fine_grained_task_en"]), key),
        **provenance(spec, shown, index, LICENSE),
        "split": "test",
        "task": rec["fine_grained_task_en"],
        "task_group": rec["coarse_grained_task_en"],
        "domain": rec.get("domain"),
        "capability": rec.get("capability"),
        "format": fmt,
        "context": None,
        "question": question,
        "choices": choices,
        "answer": answer,
        "references": [],
        "metadata": meta,
    }, ""


def _options_problem(choices: list[str], answer: str) -> str | None:
    """Why an MCQ cannot be asked as written: its answer names an option the inline options were
    not split into, or the options run on past H (option H's text holds an option I)."""
    needed = sorted(set(re.findall(r"[A-Z]", answer)))
    if not choices:
        return (f"answer {answer} names option {needed[-1]}, but no inline options A, B, … could be "
                "split from the question")
    last = INLINE_LETTERS[len(choices) - 1]
    beyond = [x for x in needed if x > last]
    if beyond:
        return (f"answer {answer} names option {beyond[-1]}, but the question's inline options "
                f"were split only into A-{last}")
    if len(choices) == len(INLINE_LETTERS) and NEXT_OPTION.search(choices[-1]):
        return (f"the inline options run on past {last} (option {last}'s text holds an option I); "
                f"at most {len(INLINE_LETTERS)} options (A-{last}) are split")
    return None


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
