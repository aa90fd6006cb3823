"""Rule scoring of one response. Returns a row for schema.SCORES (without the identity columns).

Each benchmark card says which scorer its tasks and formats use (`scorers=` in its card);
`DEFAULT_SCORERS` covers the formats a card does not name."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import sacrebleu

from pipeline.aggregate import item_stats
from pipeline.benchmarks import card
from pipeline.schema import OPTION_LETTERS
from pipeline.scoring.extract import asks_for_incorrect, blank_hits, extract_aceval, extract_label, extract_letters
from pipeline.scoring.format_rules import check_ci, check_couplet, cipai_of, pattern_from_rules
from pipeline.scoring.labeling import entity_f1, punctuation_f1

VERSION = "1"
_MULTI_SPLIT = re.compile(r"[、,，\s]+")

JUDGE_REASON = "needs the LLM judge"

# The scorer an item gets when its benchmark card names none for its task or format.
DEFAULT_SCORERS = {
    "mcq_single": "option", "mcq_multi": "option_multi", "classification": "option",
    "fill_blank": "fill_blank", "translation": "chrf", "open_qa": "judge", "generation": "judge",
}


def scorer_name(item: dict[str, Any]) -> str | None:
    """Which scorer an item gets: its card's choice by task, then by format, then the default."""
    chosen = card(item["benchmark"]).scorer_for(item["task"], item["format"])
    return chosen or DEFAULT_SCORERS.get(item["format"])


def score_response(item: dict[str, Any], text: str | None, error: str | None = None) -> dict[str, Any]:
    if error or text is None:
        return _row("none", None, f"no response: {error or 'missing'}")
    if not item.get("answer"):
        # still extract the option, so withheld-answer tests can be submitted (AC-EVAL test split)
        extracted = extract_aceval(text, len(item["choices"])) if item.get("choices") else None
        return _row("option" if extracted else "none", None, "no gold answer (withheld by the benchmark)", extracted)
    name = scorer_name(item)
    scorer = SCORERS.get(name)
    if scorer is None:
        return _row("none", None, f"no rule scorer for format {item['format']!r}")
    return scorer(item, text)


def score_rows(responses: list[dict[str, Any]], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One schema.SCORES row per response row."""
    by_id = {it["item_id"]: it for it in items}
    return [{k: r[k] for k in ("item_id", "benchmark", "variant", "setting", "model")}
            | score_response(by_id[r["item_id"]], before_stop(r["text"], r.get("stop")), r["error"])
            for r in responses]


def before_stop(text: str | None, stop: Sequence[str] | None) -> str | None:
    """The answer up to the first of its stop sequences: a base model runs on past its answer into
    a question of its own (and that question's options), which must never be read as its answer.
    An engine that honours `stop` has cut there already; this holds for one that did not."""
    if not text or stop is None or len(stop) == 0:
        return text
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


def _score_option(item: dict[str, Any], text: str) -> dict[str, Any]:
    extracted = extract_aceval(text, len(item.get("choices") or []))
    return _row("option", float(extracted == item["answer"]), None, extracted)


def _score_label(item: dict[str, Any], text: str) -> dict[str, Any]:
    """The gold is a label text, not a letter (WenMind's sentiment MCQs): the label the response
    asserts (negated and listed labels do not count; pipeline/scoring/extract.py)."""
    extracted = extract_label(text, item["metadata"]["labels"])
    return _row("label", float(extracted == item["answer"]), None, extracted)


def _score_fill_blank(item: dict[str, Any], text: str) -> dict[str, Any]:
    """The share of the gold's blanks found in the response (pipeline/scoring/extract.py). WenMind
    judges fill-in items by scoring points (points obtained / points in the reference), so partial
    credit is the paper's rule; the blank counts are in details."""
    hits = blank_hits(text, item["answer"])
    score = sum(hits) / len(hits) if hits else 0.0
    return _row("fill_blank", score, None, None, {"blanks": len(hits), "hit": sum(hits)})


def _score_punctuation(item: dict[str, Any], text: str) -> dict[str, Any]:
    counts = punctuation_f1(item["answer"], text)
    return _row("punctuation_f1", counts["f1"], None, None, counts)


def _score_entities(item: dict[str, Any], text: str) -> dict[str, Any]:
    counts = entity_f1(item["answer"], text, item["metadata"]["markup"])
    return _row("entity_f1", counts["f1"], None, None, counts)


def _needs_judge(item: dict[str, Any], text: str) -> dict[str, Any]:
    return _row("judge", None, JUDGE_REASON)


def _score_couplet(item: dict[str, Any], text: str) -> dict[str, Any]:
    """A second line against the first (pipeline/scoring/format_rules.py): the score is the strict
    pass/fail; the lenient verdict, the checks and the mismatches are in details."""
    rules = item["metadata"].get("rules") or {}
    result = check_couplet(item["question"], text, rules.get("ending_tone", "平"))
    checked = result.pop("text")
    return _row("couplet_rules", float(result["strict"]), None, checked, result)


def _score_ci(item: dict[str, Any], text: str) -> dict[str, Any]:
    """A ci against every 格 of the requested tune (pipeline/scoring/format_rules.py): strict
    pass/fail as the score; lenient verdict, checks, mismatches and the 格 matched in details."""
    cipai = cipai_of(item)
    if cipai is None:
        return _row("ci_rules", None, "the item names no cipai")
    result = check_ci(text, cipai, pattern_from_rules(item["metadata"].get("rules") or {}))
    if isinstance(result, str):
        return _row("ci_rules", None, result)
    checked = result.pop("text")
    return _row("ci_rules", float(result["strict"]), None, checked, result)


def _score_multi(item: dict[str, Any], text: str) -> dict[str, Any]:
    """WenMind's multiple-answer rule (its judge prompt): all correct 1, only correct options but not
    all of them 0.5 (one of its two-letter golds), any wrong option or none 0. Letters judged wrong
    count as chosen when the stem asks for the wrong statements (`不正确的两项是`)."""
    gold = set(_MULTI_SPLIT.split(item["answer"].strip())) - {""}
    asks_wrong = asks_for_incorrect(item.get("question") or "", item.get("choices"))
    got = extract_letters(text, max(len(item.get("choices") or []), 5), asks_wrong)
    score = 1.0 if got == gold else 0.5 if got and got < gold else 0.0
    return _row("option_multi", score, None, "、".join(sorted(got)))


def _translation_details(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Sentence BLEU (zh tokenizer) and chrF for drill-down, and sacrebleu's statistics of the
    item, which the paper tables sum into corpus BLEU and chrF (pipeline/aggregate/)."""
    refs = [item["answer"], *(item.get("references") or [])]
    hyp = text.strip()
    return {"bleu": sacrebleu.sentence_bleu(hyp, refs, tokenize="zh").score,
            "chrf": sacrebleu.sentence_chrf(hyp, refs).score,
            "bleu_stats": item_stats("bleu", hyp, refs), "chrf_stats": item_stats("chrf", hyp, refs)}


def _score_translation(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Per-item chrF (0-1) as the item score; the benchmark's number is corpus BLEU (its table)."""
    details = _translation_details(item, text)
    return _row("chrf", _share(details["chrf"]), None, None, details)


def _score_bleu(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Per-item sentence BLEU / 100 as the item score; the paper's number is corpus BLEU (its table)."""
    details = _translation_details(item, text)
    return _row("bleu", _share(details["bleu"]), None, None, details)


def _share(points: float) -> float:
    """sacrebleu's 0-100 as a 0-1 score; its float sums can land a hair outside (a perfect
    sentence BLEU is 100.00000000000004), which would be a score above 1."""
    return min(max(points / 100.0, 0.0), 1.0)


def _extract_sequence(text: str, n: int, letters: str, labels: Sequence[str] = ()) -> str | None:
    """`n` option letters in order, or None: the whole answer is n letters ("CAB", "c a b",
    "C,A,B"); else a run of n letters standing alone ("答案：CAB"), the same run if repeated; else
    exactly n letters standing alone ("1.C 2.A 3.B", "典故人物:C …"); else each question's letter
    after its number or label ("1. C，因为A不对 2. A 3. B")."""
    text = unicodedata.normalize("NFKC", text).strip()
    compact = "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZC").upper()
    if len(compact) == n and all(ch in letters for ch in compact):
        return compact
    alone = rf"(?<![A-Za-z])([{letters}]{{{n}}})(?![A-Za-z])"
    runs = set(re.findall(alone, text))
    if len(runs) == 1:
        return runs.pop()
    if runs:
        return None
    singles = re.findall(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", text)
    if len(singles) == n:
        return "".join(singles)
    picked = []
    for k in range(n):
        names = [str(k + 1), "一二三四五六七八九"[k] if k < 9 else str(k + 1), *labels[k:k + 1]]
        head = "|".join(re.escape(name) for name in names)
        found = set(re.findall(rf"(?:第\s*)?(?:{head})\s*(?:题|问)?\s*[.、:)]?\s*\(?([{letters}])(?![A-Za-z])", text))
        if len(found) != 1:
            return None
        picked.append(found.pop())
    return "".join(picked)


def _score_sequence(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Several single-choice questions in one prompt, answered with one letter each in order
    (CP-DUE AU: figure, source, meaning, e.g. `CAB`). 1 when every letter is right, else 0 (an
    answer that cannot be read is wrong); details: each question's 0/1 (q1, q2, …) and the letters
    read ("extracted")."""
    gold = item["answer"]
    meta = item.get("metadata") or {}
    letters = OPTION_LETTERS[:meta.get("options_per_question", 4)]
    labels = [q.get("label", "") for q in meta.get("questions", ())]
    got = _extract_sequence(text, len(gold), letters, [label for label in labels if label])
    right = [int(got is not None and got[k] == gold[k]) for k in range(len(gold))]
    details = {f"q{k + 1}": right[k] for k in range(len(gold))} | {"extracted": got}
    return _row("option_sequence", float(all(right)), None, got, details)


# name -> scorer(item, text); cards route tasks and formats to these names.
SCORERS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "option": _score_option,
    "option_multi": _score_multi,
    "label": _score_label,
    "fill_blank": _score_fill_blank,
    "chrf": _score_translation,
    "bleu": _score_bleu,
    "punctuation_f1": _score_punctuation,
    "entity_f1": _score_entities,
    "judge": _needs_judge,
    "couplet_rules": _score_couplet,
    "ci_rules": _score_ci,
    "option_sequence": _score_sequence,
}

# name -> the keys of the details its rows carry (checked on every card's samples by
# tests/unit/scoring/test_scorer_details.py): a card's tables may sum only what the scorer its
# tasks are routed to writes (BenchmarkCard.tables checks each metric against this).
DETAILS: dict[str, frozenset[str]] = {name: frozenset(keys) for name, keys in {
    "option": (), "option_multi": (), "label": (), "judge": (),
    "fill_blank": ("blanks", "hit"),
    "chrf": ("bleu", "chrf", "bleu_stats", "chrf_stats"),
    "bleu": ("bleu", "chrf", "bleu_stats", "chrf_stats"),
    "punctuation_f1": ("tp", "fp", "fn", "f1"),
    "entity_f1": ("tp", "fp", "fn", "f1"),
    "couplet_rules": ("checks", "expected", "faults", "first_line_ends", "lengths", "lenient", "mismatches",
                      "strict", "unknown", "unknown_chars"),
    "ci_rules": ("checks", "cipai", "expected", "faults", "lengths", "lenient", "mismatches", "pattern", "source",
                 "strict", "unknown", "unknown_chars", "variant", "variants"),
    "option_sequence": ("extracted", "q1", "q2", "q3"),
}.items()}


def _row(scorer: str, score: float | None, reason: str | None, extracted: str | None = None,
         details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scorer": f"{scorer}@{VERSION}", "score": score, "reason": reason, "extracted": extracted,
            "judge_model": None, "details": details or {}}
