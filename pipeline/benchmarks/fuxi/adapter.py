"""Fùxì (21 tasks): no data is published, so wenheng defines the file format (see
pipeline/sources/README.md): `<dir>/<split>.jsonl`, one object per line:

  {"id": "...", "task": "ACRC", "input": "...", "output": "B", "options": ["..", "..", "..", ".."]}

`input` is what the model gets after the task's instruction (the paper's Input), `output` the gold
(the paper's Output): an option letter for the three reading-comprehension tasks, a reference text
otherwise. Optional: `context` (a passage kept apart from the question), `references` (more
acceptable answers), `rules` (couplet / ci format rules, required for CiG), `meta` (copied into
metadata). Each item's metadata names the paper's metric, so scorers know how to treat it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.accounting import ParseResult, Row
from pipeline.sources.jsonl import parse_files, record_id, record_task, string_list, text_field
from pipeline.sources.keys import item_id, provenance
from pipeline.sources.records import unique_items
from pipeline.sources.text import non_text

LICENSE = "wenheng-defined format; no public Fùxì data"


@dataclass(frozen=True)
class Task:
    name: str
    category: str       # the paper's four categories (task_group)
    format: str         # pipeline.schema.ITEM_FORMATS
    capability: str     # understanding (answer fixed by the input) / generation (new text)
    domain: str
    metric: str         # how the paper scores it


RC, QA, TG, PCG = ("reading comprehension", "question answering", "text generation",
                   "pattern-constrained generation")
TASKS = {t.name: t for t in [
    Task("ACRC", RC, "mcq_single", "understanding", "ancient prose", "accuracy"),
    Task("IRC", RC, "mcq_single", "understanding", "idioms", "accuracy"),
    Task("TCMSRC", RC, "mcq_single", "understanding", "traditional Chinese medicine", "accuracy"),
    Task("ASQA", QA, "open_qa", "understanding", "allegorical sayings", "llm_judge"),
    Task("LCQA", QA, "open_qa", "understanding", "ancient prose", "llm_judge"),
    Task("BA", QA, "open_qa", "understanding", "classical books", "llm_judge"),
    Task("BD", QA, "open_qa", "understanding", "classical books", "llm_judge"),
    Task("BCC", QA, "open_qa", "understanding", "classical books", "llm_judge"),
    # The paper files poetry generation under QA (LLM-judged); "PG" here is always this task,
    # the paper's PG *category* is called pattern-constrained generation.
    Task("PG", QA, "generation", "generation", "ancient poetry", "llm_judge"),
    Task("PLST", QA, "open_qa", "understanding", "ancient poetry", "llm_judge"),
    Task("FQST", QA, "open_qa", "understanding", "ancient prose", "llm_judge"),
    Task("IST", QA, "open_qa", "understanding", "idioms", "llm_judge"),
    Task("IPT", QA, "open_qa", "understanding", "ancient poetry", "llm_judge"),
    Task("PT", TG, "translation", "generation", "ancient poetry", "bleu"),
    Task("ACT", TG, "translation", "generation", "ancient prose", "bleu"),
    Task("PA", TG, "generation", "generation", "ancient poetry", "bleu"),
    Task("IE", TG, "generation", "generation", "idioms", "bleu"),
    Task("TCMQA", TG, "open_qa", "generation", "traditional Chinese medicine", "bleu"),
    Task("PE", TG, "generation", "generation", "traditional Chinese medicine", "bleu"),
    Task("CG", PCG, "generation", "generation", "couplets", "rule_couplet"),
    Task("CiG", PCG, "generation", "generation", "ci poetry", "rule_ci"),
]}

BCC_LABELS = ["易藏", "医藏", "艺藏", "诗藏", "史藏", "子藏", "集藏", "儒藏", "道藏", "佛藏"]
TONES = set("平仄中")   # 中 = either tone allowed at that position
HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
CLAUSE_BREAK = re.compile(r"[，。？！、；：,.?!;:\s]+")


def parse(spec: SourceSpec) -> ParseResult:
    return parse_files(spec, lambda split, shown, rows, result: _parse_rows(spec, split, shown, rows, result))


def clause_lengths(text: str) -> list[int]:
    """Han characters per clause, clauses split at punctuation and whitespace."""
    return [n for n in (len(HAN.findall(part)) for part in CLAUSE_BREAK.split(text)) if n]


def _parse_rows(spec: SourceSpec, split: str, shown: str, rows: Iterator[tuple[str, dict]],
                result: ParseResult) -> None:
    # an id is unique within its task (Fùxì's tasks are separate data sets)
    for locator, record, item in unique_items(result, "fuxi", shown, rows, lambda _, record: _item(record),
                                              key=lambda record, item: (item["task"], record_id(record)),
                                              duplicate=lambda key: f"duplicate id {key[1]} in task {key[0]}"):
        item.update({
            "item_id": item_id("fuxi", split, item["task"], record_id(record)),
            **provenance(spec, shown, locator, LICENSE),
            "split": split,
        })
        result.items.append(item)


def _item(record: dict) -> Row:
    task, problem = record_task(record, TASKS, "the 21 Fùxì tasks")
    if problem:
        return None, problem
    wrong = non_text(record, ("input", "output", "context"))
    if wrong:
        return None, wrong
    question, gold = text_field(record, "input"), text_field(record, "output")
    if question is None or gold is None:
        return None, "missing or empty: " + ", ".join(k for k in ("input", "output") if not text_field(record, k))
    gold = gold.strip()
    references = record.get("references", [])
    if references != [] and string_list(references) is None:
        return None, "references must be a list of non-empty strings"
    meta = record.get("meta", {})
    if not isinstance(meta, dict):
        return None, "meta must be an object"
    metadata: dict[str, Any] = {**meta, "category": task.category, "metric": task.metric}
    choices: list[str] = []
    if task.format == "mcq_single":
        options = string_list(record.get("options"), 4)
        if options is None:
            return None, f"{task.name} needs 'options': 4 non-empty strings"
        if gold not in ("A", "B", "C", "D"):
            return None, f"output {gold!r} is not an option letter A-D"
        choices = options
    elif "options" in record:
        return None, f"{task.name} is not a multiple-choice task; 'options' is not allowed"
    if task.name == "BCC":
        if gold not in BCC_LABELS:
            return None, f"output {gold!r} is not one of the ten collections {BCC_LABELS}"
        metadata["labels"] = BCC_LABELS
    if task.name in ("CG", "CiG"):
        rules, reason = (_couplet_rules if task.name == "CG" else _ci_rules)(record.get("rules"), question, gold)
        if rules is None:
            return None, reason
        metadata["rules"] = rules
    elif "rules" in record:
        return None, f"{task.name} has no format rules; 'rules' is only for CG and CiG"
    return {
        "task": task.name, "task_group": task.category, "domain": task.domain, "capability": task.capability,
        "format": task.format, "context": text_field(record, "context"), "question": question,
        "choices": choices, "answer": gold, "references": list(references), "metadata": metadata,
    }, ""


def _couplet_rules(rules: Any, first_line: str, reference: str) -> tuple[dict | None, str]:
    """CG: the second line must match the first clause by clause in Han-character count (the rule
    the paper names); optionally its last character's tone (traditionally 平)."""
    lengths = clause_lengths(first_line)
    if not lengths:
        return None, "the first line (input) has no Chinese characters"
    rules = {} if rules is None else rules
    if not isinstance(rules, dict):
        return None, "rules must be an object"
    given = rules.get("clause_lengths", lengths)
    if given != lengths:
        return None, f"rules.clause_lengths {given} do not match the first line {lengths}"
    ending = rules.get("ending_tone", "平")
    if ending not in ("平", "仄", None):
        return None, "rules.ending_tone must be 平, 仄 or null"
    if clause_lengths(reference) != lengths:
        return None, f"the reference second line has clauses {clause_lengths(reference)}, not {lengths}"
    return {"type": "couplet", "clause_lengths": lengths, "ending_tone": ending}, ""


def _ci_rules(rules: Any, question: str, reference: str) -> tuple[dict | None, str]:
    """CiG: the tune's line lengths, optional tone pattern per line (平/仄/中), the lines that end
    on a rhyme, the rhyme's tone and rhyme book; the reference must fit the line lengths."""
    if not isinstance(rules, dict):
        return None, "CiG needs 'rules' with cipai, lines and rhymes"
    cipai, lines, rhymes = rules.get("cipai"), rules.get("lines"), rules.get("rhymes")
    if not isinstance(cipai, str) or not cipai.strip():
        return None, "rules.cipai must name the tune"
    if not isinstance(lines, list) or not lines or not all(isinstance(n, int) and n > 0 for n in lines):
        return None, "rules.lines must be a list of positive line lengths"
    if (not isinstance(rhymes, list) or not rhymes
            or not all(isinstance(n, int) and 1 <= n <= len(lines) for n in rhymes)):
        return None, f"rules.rhymes must list line numbers 1-{len(lines)} that end on a rhyme"
    tones = rules.get("tones")
    if tones is not None and (
            not isinstance(tones, list) or len(tones) != len(lines)
            or any(not isinstance(t, str) or len(t) != n or set(t) - TONES for t, n in zip(tones, lines))):
        return None, "rules.tones must give one 平/仄/中 pattern per line, as long as the line"
    if rules.get("rhyme_tone", "平") not in ("平", "仄"):
        return None, "rules.rhyme_tone must be 平 or 仄"
    breaks = rules.get("stanza_breaks", [])
    if not isinstance(breaks, list) or not all(isinstance(n, int) and 1 <= n < len(lines) for n in breaks):
        return None, "rules.stanza_breaks must list line numbers after which a new stanza starts"
    if cipai not in question:
        return None, f"the input does not name the tune {cipai}"
    if clause_lengths(reference) != lines:
        return None, f"the reference ci has lines {clause_lengths(reference)}, not {lines}"
    return {"type": "ci", "cipai": cipai, "form": rules.get("form"), "lines": lines, "tones": tones,
            "rhymes": rhymes, "rhyme_tone": rules.get("rhyme_tone", "平"),
            "rhyme_book": rules.get("rhyme_book", "词林正韵"), "stanza_breaks": breaks}, ""
