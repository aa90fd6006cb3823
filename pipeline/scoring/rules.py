"""Rule scoring of one response. Returns a row for schema.SCORES (without the identity columns)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import sacrebleu

from pipeline.scoring.extract import extract_aceval, extract_label, extract_letters
from pipeline.scoring.labeling import entity_f1, punctuation_f1
from pipeline.script import convert

VERSION = "1"
_MULTI_SPLIT = re.compile(r"[、,，\s]+")

# Formats that only an LLM judge can score (WenMind's QA, Fùxì generation, ...).
JUDGE_FORMATS = {"open_qa", "generation"}
# Fùxì's couplet and ci tasks are scored by format rules (length, tone pattern, rhyme), which need
# tone and rhyme tables wenheng does not ship yet.
RULE_TABLE_METRICS = {"rule_couplet", "rule_ci"}


def score_response(item: dict[str, Any], text: str | None, error: str | None = None) -> dict[str, Any]:
    fmt = item["format"]
    meta = item["metadata"] if isinstance(item["metadata"], dict) else json.loads(item["metadata"] or "{}")
    if error or text is None:
        return _row("none", None, f"no response: {error or 'missing'}")
    if not item.get("answer"):
        # still extract the option, so withheld-answer tests can be submitted (AC-EVAL test split)
        extracted = extract_aceval(text, len(item["choices"])) if item.get("choices") else None
        return _row("option" if extracted else "none", None, "no gold answer (withheld by the benchmark)", extracted)
    metric = meta.get("metric")  # set by adapters whose paper names a metric per task (Fùxì)
    if metric == "llm_judge":
        return _row("judge", None, "needs the LLM judge")
    if metric in RULE_TABLE_METRICS:
        return _row("format_rules", None, "format rules need tone and rhyme tables (not shipped yet)")
    if metric == "bleu":
        return _score_bleu(item, text)
    if fmt == "labeling" and "marks" in meta:
        return _score_labeling("punctuation_f1", punctuation_f1(item["answer"], text))
    if fmt == "labeling" and "entities" in meta:
        return _score_labeling("entity_f1", entity_f1(item["answer"], text, meta["markup"]))
    if fmt in JUDGE_FORMATS:
        return _row("judge", None, "needs the LLM judge")
    if fmt == "mcq_multi":
        return _score_multi(item, text)
    if fmt == "classification" and meta.get("labels"):  # gold is a label text, not a letter
        extracted = extract_label(text, meta["labels"])
        return _row("label", float(extracted == item["answer"]), None, extracted)
    if item.get("choices") or fmt == "mcq_single":
        extracted = extract_aceval(text, len(item.get("choices") or []))
        return _row("option", float(extracted == item["answer"]), None, extracted)
    if fmt == "fill_blank":
        gold = normalise(item["answer"])
        return _row("fill_blank", float(bool(gold) and gold in normalise(text)), None)
    if fmt == "translation":
        return _score_translation(item, text)
    return _row("none", None, f"no rule scorer for format {fmt!r}")


def score_rows(responses: list[dict[str, Any]], items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One schema.SCORES row per response row."""
    by_id = {it["item_id"]: it for it in items}
    return [{k: r[k] for k in ("item_id", "benchmark", "variant", "setting", "model")}
            | score_response(by_id[r["item_id"]], r["text"], r["error"]) for r in responses]


def normalise(text: str) -> str:
    """For containment checks: NFKC, simplified script, no spaces or punctuation."""
    text = convert(unicodedata.normalize("NFKC", text), "t2s")
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZ")


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


def _score_labeling(name: str, counts: dict[str, float]) -> dict[str, Any]:
    return _row(name, counts["f1"], None, None, counts)


def _row(scorer: str, score: float | None, reason: str | None, extracted: str | None = None,
         details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scorer": f"{scorer}@{VERSION}", "score": score, "reason": reason, "extracted": extracted,
            "judge_model": None, "details": json.dumps(details or {}, ensure_ascii=False)}
