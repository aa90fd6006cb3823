"""WYWEB: <dir>/<task>/<split>.<ext>, one folder per task, no id fields. The key of a row is
derived from its content (pipeline.sources.keys.ContentKeys): 12 hex digits of the SHA-256 of
the text the item asks about (its context and question), so adding, deleting or moving a line
changes no other item's id and an edited gold or option shows up as a changed field, not a new
item. Rows with identical text in one split and task are numbered in order of appearance (`-2`,
`-3`, ...). The line number (1-based; the array index, 0-based, in JSON arrays) is the item's
`source_locator`.

Tasks (formats in pipeline/sources/README.md):
  punc   punctuation restoration   tsv  text<TAB>one mark per char     labeling (gold: punctuated text)
  glner  named entities            jsonl {"text","label":[[s,e,type]]} labeling (gold: marked-up text)
  gjc    collection of a book      tsv  label<TAB>text                 10 lettered options
  fspc   poem sentiment            json [{poet,poem,dynasty,sentiments,title}]  5 lettered options
  tlc    period of a text          tsv  period<TAB>dynasty<TAB>text    3 lettered options (period)
  xuci   same function-word use?   tsv  sentA<TAB>sentB<TAB>"i, j"<TAB>"k, l"<TAB>t|f  2 options
  wywrc  reading comprehension     json [{article,question,type,answer,option0..3}]  4 options
  irc    idiom comprehension       json [{idiom,options[4],label,origin}]  4 options
  wywmt  classical -> modern       tsv  classical<TAB>modern            translation

One raw row is one item, with one exception. TLC's dynasty label and FSPC's per-line sentiments
are kept in metadata rather than made into extra items, so row counts reconcile and each text is
asked once. The exception is WYWMT: rows of one file whose source sentences are the same (the
match key dedup compares: script, punctuation and spacing aside) but whose translations differ
are one item, the first row's, with the other translations as further references, so a model's
translation is scored against all of them instead of being one right and one wrong answer. The
rows merged into it are listed in `metadata.merged_rows`, which the reconciliation counts.

WYWRC and IRC items carry `metadata.quality_flags` (pipeline.dedup.policy): HTML scraped into an
option, an empty option, the gold text repeated in another option. Flagged items are read and
kept like any other; the sources file's `quality:` decides whether they are evaluated.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from pipeline.config import SourceSpec
from pipeline.dedup.policy import QUALITY_FLAGS_KEY, option_quality_flags
from pipeline.sources.accounting import MERGED_ROWS, ParseResult, Row, guarded_file, guarded_row
from pipeline.sources.json_array import json_row, read_json_array
from pipeline.sources.keys import ContentKeys, item_id, provenance
from pipeline.sources.layout import Layout
from pipeline.sources.options import letter
from pipeline.sources.text import display_path, non_text, read_lines

LICENSE = "no licence file published"

TLC_PERIODS = ["远古", "中古", "近古"]   # fixed order, so option letters are stable across versions
TLC_DYNASTIES = ["先秦", "两汉", "魏晋南北朝", "唐", "宋", "元明", "清"]
TLC_NESTING = {"先秦": "远古", "两汉": "远古", "魏晋南北朝": "中古", "唐": "中古", "宋": "中古",
               "元明": "近古", "清": "近古"}

FSPC_LABELS = ["negative", "implicit negative", "neutral", "implicit positive", "positive"]
FSPC_CHOICES = ["消极", "隐含消极", "中性", "隐含积极", "积极"]

# The order of WYWEB's own GJC label list, so letters match its label ids.
GJC_LABELS = ["儒藏", "诗藏", "佛藏", "易藏", "医藏", "艺藏", "子藏", "集藏", "道藏", "史藏"]

XUCI_CHOICES = ["相同", "不同"]
XUCI_LABELS = {"t": "A", "f": "B"}

PUNC_MARKS = "。？！，、；：|"
# How named entities are marked in the gold text: GLNER texts contain neither bracket pair.
GLNER_MARKUP = {"noun_bookname": ["《", "》"], "noun_other": ["[", "]"]}

WYWRC_TYPES = {
    0: "summary and analysis", 1: "same word meaning", 2: "trait matching", 3: "word explanation",
    4: "cultural terms", 5: "sentence breaking", 6: "function-word usage", 7: "poem understanding",
    8: "phonetic loan characters", 9: "sentence or word interpretation",
}


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    keys = ContentKeys()   # one numbering of identical rows per split and task, across its files
    for task, (extensions, kind, reader) in TASKS.items():
        folder = root / task
        if not folder.is_dir():
            continue
        for path in sorted(p for ext in extensions for p in folder.glob(f"*.{ext}")):
            if not spec.includes_split(path.stem):
                continue
            shown = display_path(path, root)
            guarded_file(result, "wyweb", shown,
                         lambda own, path=path, shown=shown, task=task, kind=kind, reader=reader:
                         _parse_file(spec, task, kind, reader, path, shown, own, keys))
    return result


def _parse_file(spec: SourceSpec, task: str, kind: str, reader: Callable[[Any], Row], path: Path,
                shown: str, result: ParseResult, keys: ContentKeys) -> None:
    split = path.stem
    if kind == "array":
        rows = [(index, f"index {index}", rec if broken is None else text, broken)
                for index, (rec, broken, text) in enumerate(read_json_array(path))]
    else:
        rows = [(number, f"line {number}", line, None) for number, line in enumerate(read_lines(path), start=1)]
    for _, locator, raw, broken in rows:
        result.raw_counts[shown] += 1
        if kind == "jsonl" and broken is None:
            line = raw
            raw, broken = json_row(line)
            if broken is not None:
                raw = line
        if broken is not None:
            result.reject("wyweb", shown, locator, broken, raw)
            continue
        fields = {f"column {i}": part for i, part in enumerate(raw.split("\t"), start=1)} if kind == "tsv" else raw
        item = guarded_row(result, "wyweb", shown, locator, raw, lambda raw=raw: _read(kind, reader, raw),
                           fields=fields)
        if item is None:
            continue
        item.setdefault("question", None)
        item.setdefault("references", [])
        item.update({
            "item_id": item_id("wyweb", split, task, keys.key((split, task), item.get("context"), item["question"])),
            **provenance(spec, shown, locator, LICENSE),
            "split": split,
            "task": task,
            "domain": item.get("domain", "ancient prose"),
            "capability": "understanding",
        })
        result.items.append(item)
    if task == "wywmt":
        result.items = _merge_references(result.items)


def _read(kind: str, reader: Callable[[Any], Row], raw: Any) -> Row:
    if kind != "tsv" and not isinstance(raw, dict):
        return None, "not a JSON object"
    return reader(raw)


def _merge_references(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One item per source sentence that has several different translations in the file: the
    first row's item (its id, locator and source text) with the first translation as `answer` and
    the others, in row order and each once, as `references`. The merged rows are listed in
    `metadata.merged_rows` (locator, source, translation), so none is lost and the reconciliation
    counts them. A sentence repeated with the same translation is left to the duplicate policy."""
    from pipeline.dedup.keys import match_keys  # numpy: imported when items are parsed, not with the card

    groups: dict[str, list[int]] = defaultdict(list)
    for index, key in enumerate(match_keys([item["context"] for item in items])):
        if key:
            groups[key].append(index)
    merged: set[int] = set()
    for members in groups.values():
        translations = list(dict.fromkeys(items[i]["answer"] for i in members))
        if len(translations) < 2:
            continue
        first = items[members[0]]
        first["references"] = translations[1:]
        first["metadata"][MERGED_ROWS] = [
            {"source_locator": items[i]["source_locator"], "context": items[i]["context"],
             "answer": items[i]["answer"]} for i in members[1:]]
        merged.update(members[1:])
    return [item for index, item in enumerate(items) if index not in merged]


def _fields(line: str, n: int) -> list[str] | None:
    parts = line.split("\t")
    return parts if len(parts) == n else None


def _wywmt(line: str) -> Row:
    parts = _fields(line, 2)
    if parts is None:
        return None, f"expected 2 tab-separated fields, got {len(line.split(chr(9)))}"
    source, target = (p.strip() for p in parts)
    if not source or not target:
        return None, "empty source or reference translation"
    return {"task_group": "translation", "format": "translation", "context": source,
            "choices": [], "answer": target, "metadata": {"direction": "classical->modern"}}, ""


def _tlc(line: str) -> Row:
    parts = _fields(line, 3)
    if parts is None:
        return None, f"expected 3 tab-separated fields, got {len(line.split(chr(9)))}"
    period, dynasty, text = (p.strip() for p in parts)
    if period not in TLC_PERIODS:
        return None, f"period label {period!r} not in {TLC_PERIODS}"
    if not text:
        return None, "empty text"
    answer = letter(TLC_PERIODS.index(period))
    # The dynasty is a finer label of the same text; kept for a dynasty scorer, not asked twice.
    meta = {"label": period, "dynasty": dynasty, "dynasty_choices": TLC_DYNASTIES,
            "dynasty_answer": letter(TLC_DYNASTIES.index(dynasty)) if dynasty in TLC_DYNASTIES else None}
    if TLC_NESTING.get(dynasty) not in (None, period):
        meta["dynasty_conflict"] = f"{dynasty} belongs to {TLC_NESTING[dynasty]}, not {period}"
    return {"task_group": "classification", "format": "classification", "context": text,
            "choices": list(TLC_PERIODS), "answer": answer, "metadata": meta}, ""


def _gjc(line: str) -> Row:
    parts = _fields(line, 2)
    if parts is None:
        return None, f"expected 2 tab-separated fields, got {len(line.split(chr(9)))}"
    first, second = (p.strip() for p in parts)
    # WYWEB's code reads label<TAB>text; its paper shows text then label, so accept both orders.
    if first in GJC_LABELS:
        label, text = first, second
    elif second in GJC_LABELS:
        label, text = second, first
    else:
        return None, f"neither field is one of the GJC labels {GJC_LABELS}"
    if not text:
        return None, "empty text"
    return {"task_group": "classification", "format": "classification", "domain": "classical books",
            "context": text, "choices": list(GJC_LABELS), "answer": letter(GJC_LABELS.index(label)),
            "metadata": {"label": label}}, ""


def _fspc(rec: dict) -> Row:
    poem, sentiments = rec.get("poem"), rec.get("sentiments")
    wrong = non_text(rec, ("poem", "title", "poet", "dynasty"))
    if wrong:
        return None, wrong
    if not isinstance(poem, str) or not poem.strip():
        return None, "missing or empty: poem"
    if not isinstance(sentiments, dict):
        return None, "missing: sentiments"
    holistic = sentiments.get("holistic")
    if not isinstance(holistic, str) or holistic not in FSPC_LABELS:
        return None, f"holistic sentiment {holistic!r} not in {FSPC_LABELS}"
    lines = [part.strip() for part in poem.split("|")]
    if not all(lines):
        return None, "empty line in poem"
    # Couplet punctuation (，。) as poems are printed; WYWEB's code joins the lines the same way.
    text = "".join(f"{ln}{'，' if n % 2 == 0 else '。'}" for n, ln in enumerate(lines))
    meta = {"label": holistic, "title": rec.get("title"), "poet": rec.get("poet"), "dynasty": rec.get("dynasty"),
            "line_labels": {k: v for k, v in sentiments.items() if k != "holistic"}}
    return {"task_group": "classification", "format": "classification", "domain": "ancient poetry",
            "context": text, "choices": list(FSPC_CHOICES), "answer": letter(FSPC_LABELS.index(holistic)),
            "metadata": meta}, ""


def _xuci(line: str) -> Row:
    parts = _fields(line, 5)
    if parts is None:
        return None, f"expected 5 tab-separated fields, got {len(line.split(chr(9)))}"
    sent_a, sent_b, span_a, span_b, label = parts
    label = label.strip()
    if label not in XUCI_LABELS:
        return None, f"label {label!r} is not t or f"
    marked = []
    for name, sentence, span in (("A", sent_a, span_a), ("B", sent_b, span_b)):
        try:
            start, end = (int(x) for x in span.split(","))
        except ValueError:
            return None, f"span {span!r} of sentence {name} is not 'start, end'"
        if not 0 <= start <= end < len(sentence):  # spans are 0-based and inclusive
            return None, f"span {start}-{end} is outside sentence {name} ({len(sentence)} chars)"
        word = sentence[start:end + 1]
        if any(unicodedata.category(ch).startswith("P") for ch in word):
            return None, f"span {start}-{end} of sentence {name} covers punctuation {word!r}"
        marked.append((sentence[:start] + "【" + word + "】" + sentence[end + 1:], word, [start, end]))
    context = f"句一：{marked[0][0]}\n句二：{marked[1][0]}"
    return {"task_group": "classification", "format": "classification", "context": context,
            "choices": list(XUCI_CHOICES), "answer": XUCI_LABELS[label],
            "metadata": {"label": label, "words": [marked[0][1], marked[1][1]],
                         "spans": [marked[0][2], marked[1][2]]}}, ""


def _option_flags(choices: list[str], answer: str) -> dict[str, Any]:
    """What is wrong with an item's options: `quality_flags` (always present, [] when clean),
    plus which options are empty and whether two options are the same text."""
    flags: dict[str, Any] = {QUALITY_FLAGS_KEY: option_quality_flags(choices, answer)}
    empty = [letter(i) for i, c in enumerate(choices) if not c.strip()]
    if empty:
        flags["empty_options"] = empty
    if len({c.strip() for c in choices}) < len(choices):
        flags["duplicate_options"] = True
    return flags


def _wywrc(rec: dict) -> Row:
    missing = [k for k in ("article", "question", "answer", "option0", "option1", "option2", "option3")
               if rec.get(k) is None]
    if missing:
        return None, f"missing: {', '.join(missing)}"
    wrong = non_text(rec, ("article", "question", "option0", "option1", "option2", "option3"))
    if wrong:
        return None, wrong
    if isinstance(rec["answer"], bool) or not isinstance(rec["answer"], (str, int)):
        return None, f"answer {rec['answer']!r} is not 0-3"
    if not rec["article"].strip() or not rec["question"].strip():
        return None, "empty article or question"
    answer = str(rec["answer"]).strip()
    if answer not in ("0", "1", "2", "3"):
        return None, f"answer {answer!r} is not 0-3"
    choices = [rec[f"option{i}"] for i in range(4)]
    if not choices[int(answer)].strip():
        return None, f"the gold option {letter(int(answer))} (option{answer}) is empty"
    kind = rec.get("type")
    meta = {"type": kind, "type_name": WYWRC_TYPES.get(kind) if isinstance(kind, int) else None,
            **_option_flags(choices, letter(int(answer)))}
    return {"task_group": "reading comprehension", "format": "mcq_single", "context": rec["article"],
            "question": rec["question"], "choices": choices, "answer": letter(int(answer)),
            "metadata": meta}, ""


def _irc(rec: dict) -> Row:
    idiom, options, label, origin = rec.get("idiom"), rec.get("options"), rec.get("label"), rec.get("origin")
    wrong = non_text(rec, ("idiom", "origin"))
    if wrong:
        return None, wrong
    if not isinstance(idiom, str) or not idiom.strip():
        return None, "missing or empty: idiom"
    if not isinstance(options, list) or len(options) != 4 or not all(isinstance(o, str) for o in options):
        return None, "options must be a list of 4 strings"
    if isinstance(label, str) and label.strip().isdigit():
        label = int(label)
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= 3:
        return None, f"label {label!r} is not an integer 0-3"
    if not options[label].strip():
        return None, f"the gold option {letter(label)} is empty"
    return {"task_group": "reading comprehension", "format": "mcq_single", "domain": "idioms",
            "context": origin if isinstance(origin, str) else None, "question": idiom.strip(),
            "choices": list(options), "answer": letter(label),
            "metadata": _option_flags(options, letter(label))}, ""


def _glner(rec: dict) -> Row:
    text, labels = rec.get("text"), rec.get("label")
    wrong = non_text(rec, ("text",))
    if wrong:
        return None, wrong
    if not isinstance(text, str) or not text.strip():
        return None, "missing or empty: text"
    if not isinstance(labels, list):
        return None, "label must be a list of [start, end, type]"
    spans = []
    for span in labels:
        if (not isinstance(span, list) or len(span) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in span[:2])):
            return None, f"entity {span!r} is not [start, end, type]"
        start, end, kind = span
        if not isinstance(kind, str) or kind not in GLNER_MARKUP:
            return None, f"entity type {kind!r} not in {sorted(GLNER_MARKUP)}"
        if not 0 <= start < end <= len(text):  # end is exclusive
            return None, f"entity {start}-{end} is outside the text ({len(text)} chars)"
        spans.append((start, end, kind))
    spans.sort()
    for (_, end_a, _), (start_b, _, _) in pairwise(spans):
        if start_b < end_a:
            return None, "overlapping entities"
    pieces, cursor = [], 0
    for start, end, kind in spans:
        left, right = GLNER_MARKUP[kind]
        pieces += [text[cursor:start], left, text[start:end], right]
        cursor = end
    pieces.append(text[cursor:])
    return {"task_group": "labeling", "format": "labeling", "context": text, "choices": [],
            "answer": "".join(pieces),
            "metadata": {"entities": [list(s) for s in spans], "markup": GLNER_MARKUP}}, ""


def _punc(line: str) -> Row:
    parts = _fields(line, 2)
    if parts is None:
        return None, f"expected 2 tab-separated fields, got {len(line.split(chr(9)))}"
    text, marks = parts
    if not text:
        return None, "empty text"
    if len(marks) != len(text):
        return None, f"{len(marks)} labels for {len(text)} characters"
    bad = sorted(set(marks) - set("O" + PUNC_MARKS))
    if bad:
        return None, f"labels {bad} not in O{PUNC_MARKS}"
    # Label i is the mark that follows character i.
    punctuated = "".join(ch + (m if m != "O" else "") for ch, m in zip(text, marks))
    return {"task_group": "labeling", "format": "labeling", "context": text, "choices": [],
            "answer": punctuated, "metadata": {"marks": marks}}, ""


# task -> (file extensions, row kind, reader); the order is the order items are emitted in.
TASKS: dict[str, tuple[tuple[str, ...], str, Callable[[Any], Row]]] = {
    "punc": (("tsv", "txt"), "tsv", _punc),
    "glner": (("jsonl",), "jsonl", _glner),
    "gjc": (("tsv", "txt"), "tsv", _gjc),
    "fspc": (("json",), "array", _fspc),
    "tlc": (("tsv",), "tsv", _tlc),
    "xuci": (("tsv",), "tsv", _xuci),
    "wywrc": (("json",), "array", _wywrc),
    "irc": (("json",), "array", _irc),
    "wywmt": (("tsv",), "tsv", _wywmt),
}


# where the files lie (pipeline/sources/layout.py): <task>/<split>.<ext>
def _splits(path) -> set[str]:
    return {p.stem for task, (extensions, _, _) in TASKS.items() for ext in extensions
            for p in (path / task).glob(f"*.{ext}")}


LAYOUT = Layout(f"a folder of <task>/<split>.<ext> files, e.g. punc/dev.tsv (tasks: {', '.join(TASKS)})",
                False, True, _splits)
