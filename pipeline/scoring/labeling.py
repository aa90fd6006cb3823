"""Rewriting-style labeling tasks (WYWEB PUNC and GLNER): the model rewrites the text with marks,
we recover (position, label) pairs and compare them with the gold's.

Positions are indices into the unmarked text. If the model also changed characters, its text is
aligned to the original with difflib, and marks on characters it invented count as false
positives. This equals WYWEB's seqeval micro-F1 over single-character chunks (PUNC) and exact
typed spans (GLNER), computed per item; tp/fp/fn are kept so a corpus F1 can be summed."""

from __future__ import annotations

from difflib import SequenceMatcher

PUNCTUATION_MARKS = set("。？！，、；：|")


def _strip_marks(text: str, marks: set[str]) -> tuple[str, list[tuple[int, str]]]:
    """Text without marks, and each mark with the number of text characters before it."""
    base, found = [], []
    for ch in text:
        if ch in marks:
            found.append((len(base), ch))
        elif not ch.isspace():
            base.append(ch)
    return "".join(base), found


def _aligner(gold_base: str, pred_base: str):
    """Map a prediction position (characters before a mark) to the gold position, or None."""
    mapping = {}
    for block in SequenceMatcher(None, pred_base, gold_base, autojunk=False).get_matching_blocks():
        for k in range(block.size + 1):
            mapping.setdefault(block.a + k, block.b + k)
    return mapping.get


def _f1(gold: set, pred: set) -> dict[str, float]:
    tp = len(gold & pred)
    fp, fn = len(pred) - tp, len(gold) - tp
    f1 = 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "f1": f1}


def punctuation_f1(gold_text: str, predicted: str) -> dict[str, float]:
    gold_base, gold_marks = _strip_marks(gold_text, PUNCTUATION_MARKS)
    pred_base, pred_marks = _strip_marks(predicted.strip(), PUNCTUATION_MARKS)
    to_gold = _aligner(gold_base, pred_base)
    pred = {(to_gold(pos), mark) for pos, mark in pred_marks}
    pred = {(pos, mark) if pos is not None else (-1 - i, mark) for i, (pos, mark) in enumerate(pred)}
    return _f1(set(gold_marks), pred)


def _spans(text: str, markup: dict[str, list[str]]) -> tuple[str, list[tuple[int, int, str]]]:
    opening = {pair[0]: label for label, pair in markup.items()}
    closing = {pair[1]: label for label, pair in markup.items()}
    base, spans, open_at = [], [], {}
    for ch in text:
        if ch in opening:
            open_at[opening[ch]] = len(base)
        elif ch in closing and closing[ch] in open_at:
            label = closing[ch]
            spans.append((open_at.pop(label), len(base), label))
        elif not ch.isspace():
            base.append(ch)
    return "".join(base), spans


def entity_f1(gold_text: str, predicted: str, markup: dict[str, list[str]]) -> dict[str, float]:
    gold_base, gold_spans = _spans(gold_text, markup)
    pred_base, pred_spans = _spans(predicted.strip(), markup)
    to_gold = _aligner(gold_base, pred_base)
    pred = set()
    for i, (start, end, label) in enumerate(pred_spans):
        s, e = to_gold(start), to_gold(end)
        pred.add((s, e, label) if s is not None and e is not None else (-1 - i, -1, label))
    return _f1(set(gold_spans), pred)
