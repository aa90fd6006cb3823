"""Rule scoring of one response. Returns a row for schema.SCORES (without the identity columns).

Each benchmark card says which scorer its tasks and formats use (`scorers=` in its card);
`DEFAULT_SCORERS` covers the formats a card does not name."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import sacrebleu

from pipeline.benchmarks import card
from pipeline.scoring.extract import extract_aceval, extract_label, extract_letters
from pipeline.scoring.labeling import entity_f1, punctuation_f1
from pipeline.script import convert

VERSION = "1"
_MULTI_SPLIT = re.compile(r"[、,，\s]+")

JUDGE_REASON = "needs the LLM judge"
# Fùxì's couplet and ci tasks are scored by format rules (length, tone pattern, rhyme), which need
# tone and rhyme tables wenheng does not ship yet.
FORMAT_RULES_REASON = "format rules need tone and rhyme tables (not shipped yet)"

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
            | score_response(by_id[r["item_id"]], r["text"], r["error"]) for r in responses]


def normalise(text: str) -> str:
    """For containment checks: NFKC, simplified script, no spaces or punctuation."""
    text = convert(unicodedata.normalize("NFKC", text), "t2s")
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZ")


def _score_option(item: dict[str, Any], text: str) -> dict[str, Any]:
    extracted = extract_aceval(text, len(item.get("choices") or []))
    return _row("option", float(extracted == item["answer"]), None, extracted)


def _score_label(item: dict[str, Any], text: str) -> dict[str, Any]:
    """The gold is a label text, not a letter (WenMind's sentiment MCQs)."""
    extracted = extract_label(text, item["metadata"]["labels"])
    return _row("label", float(extracted == item["answer"]), None, extracted)


def _score_fill_blank(item: dict[str, Any], text: str) -> dict[str, Any]:
    gold = normalise(item["answer"])
    return _row("fill_blank", float(bool(gold) and gold in normalise(text)), None)


def _score_punctuation(item: dict[str, Any], text: str) -> dict[str, Any]:
    counts = punctuation_f1(item["answer"], text)
    return _row("punctuation_f1", counts["f1"], None, None, counts)


def _score_entities(item: dict[str, Any], text: str) -> dict[str, Any]:
    counts = entity_f1(item["answer"], text, item["metadata"]["markup"])
    return _row("entity_f1", counts["f1"], None, None, counts)


def _needs_judge(item: dict[str, Any], text: str) -> dict[str, Any]:
    return _row("judge", None, JUDGE_REASON)


def _needs_format_tables(item: dict[str, Any], text: str) -> dict[str, Any]:
    return _row("format_rules", None, FORMAT_RULES_REASON)


def _score_multi(item: dict[str, Any], text: str) -> dict[str, Any]:
    """WenMind's multiple-answer rule: all correct 1, a correct strict subset 0.5, else 0."""
    gold = set(_MULTI_SPLIT.split(item["answer"].strip())) - {""}
    got = extract_letters(text, max(len(item.get("choices") or []), 5))
    score = 1.0 if got == gold else 0.5 if got and got < gold else 0.0
    return _row("option_multi", score, None, "、".join(sorted(got)))


def _score_translation(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Per-item chrF (0-1) as the item score; sentence BLEU with the zh tokenizer in details."""
    refs = [item["answer"], *(item.get("references") or [])]
    chrf = sacrebleu.sentence_chrf(text.strip(), refs).score
    bleu = sacrebleu.sentence_bleu(text.strip(), refs, tokenize="zh").score
    return _row("chrf", chrf / 100.0, None, None, {"chrf": chrf, "bleu": bleu})


def _score_bleu(item: dict[str, Any], text: str) -> dict[str, Any]:
    """Sentence BLEU (zh tokenizer, sacrebleu defaults) / 100 as the item score; chrF in details.
    Papers that report corpus BLEU aggregate differently; the per-item score is what we store."""
    refs = [item["answer"], *(item.get("references") or [])]
    bleu = sacrebleu.sentence_bleu(text.strip(), refs, tokenize="zh").score
    chrf = sacrebleu.sentence_chrf(text.strip(), refs).score
    return _row("bleu", bleu / 100.0, None, None, {"bleu": bleu, "chrf": chrf})


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
    "format_rules": _needs_format_tables,
}


def _row(scorer: str, score: float | None, reason: str | None, extracted: str | None = None,
         details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scorer": f"{scorer}@{VERSION}", "score": score, "reason": reason, "extracted": extracted,
            "judge_model": None, "details": details or {}}
