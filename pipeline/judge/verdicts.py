"""The judge's score types: what a verdict must look like (a JSON schema or a choice for
structured output) and how its text is read back into a score.

WenMind's four types (Cao et al. 2024, §4.3) answer with a JSON array of strings: `["1"]`
(single-answer MCQ: 0 or 1), `["0.5"]` (multiple-answer MCQ: 0, 0.5 or 1), `["0.8", "理由"]`
(subjective, 0-1) and `["4", "3", "理由"]` (scoring points: P_all, P_obtain, reason; the score
is P_obtain / P_all). Fùxì's evaluator answers `Y` or `N` (binary).

Reading follows WenMind's `Calculate_Score.py`: a 1-2 element array is a score (outside [0, 1]
is rejected), a 3 element array is points (P_all < 1 rejected, P_obtain clamped to P_all), any
other length is rejected. It is tolerant where that script raises on harmless noise: the array
may sit inside other text, use typographic quotes, or hold numbers instead of strings; MCQ types
also reject values their rule cannot give (0.3 for a single-answer item)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

SCORE_TYPES = ("mcq_single", "mcq_multi", "subjective", "scoring_points", "binary")

# Longest reason a structured verdict may carry: keeps a weak judge from rambling to max_tokens.
REASON_CHARS = 120
_SCORE_01 = r"^(0(\.[0-9]{1,2})?|1(\.0{1,2})?)$"

# Structured output per type: a JSON schema (an array of strings, WenMind's form), or a fixed
# set of answers (constrained choice) for Fùxì's Y/N.
SCHEMAS: dict[str, dict[str, Any]] = {
    "mcq_single": {"type": "array", "prefixItems": [{"type": "string", "enum": ["0", "1"]}],
                   "items": False, "minItems": 1, "maxItems": 1},
    "mcq_multi": {"type": "array", "prefixItems": [{"type": "string", "enum": ["0", "0.5", "1"]}],
                  "items": False, "minItems": 1, "maxItems": 1},
    "subjective": {"type": "array", "prefixItems": [{"type": "string", "pattern": _SCORE_01},
                                                    {"type": "string", "maxLength": REASON_CHARS}],
                   "items": False, "minItems": 2, "maxItems": 2},
    "scoring_points": {"type": "array", "prefixItems": [{"type": "string", "pattern": r"^[1-9][0-9]?$"},
                                                        {"type": "string", "pattern": r"^[0-9]{1,2}$"},
                                                        {"type": "string", "maxLength": REASON_CHARS}],
                       "items": False, "minItems": 3, "maxItems": 3},
}
CHOICES: dict[str, tuple[str, ...]] = {"binary": ("Y", "N")}

# The reasons' cap in reliability repeats. Every schema puts the score before the reason, so the
# sampled score cannot depend on the reason that follows it: the repeats' scores have the same law
# with an empty reason, and a weak judge at temperature 0.7 no longer rambles to REASON_CHARS
# (the demo's WenMind repeats: 19 s of a run).
REPEAT_REASON_CHARS = 0


def schema(score_type: str, reason_chars: int = REASON_CHARS) -> dict[str, Any]:
    """The type's JSON schema, its reason (the last element, where it has one) capped at
    `reason_chars` characters."""
    base = SCHEMAS[score_type]
    if reason_chars == REASON_CHARS:
        return base
    items = [dict(item, maxLength=reason_chars) if "maxLength" in item else item for item in base["prefixItems"]]
    return {**base, "prefixItems": items}

_ALLOWED = {"mcq_single": {0.0, 1.0}, "mcq_multi": {0.0, 0.5, 1.0}}
_YN = re.compile(r"(?<![A-Za-z])(Y(?:ES)?|N(?:O)?)(?![A-Za-z])", re.IGNORECASE)


class Unparseable(ValueError):
    """The verdict's text cannot be read as its type's answer."""


@dataclass
class Verdict:
    score: float
    values: list[Any]                    # the array as read (WenMind) or ["Y"] / ["N"] (Fùxì)
    reason: str | None = None            # the judge's own reason, when it gave one
    p_all: float | None = None           # scoring points
    p_obtain: float | None = None        # after clamping to p_all
    notes: list[str] = field(default_factory=list)   # what tolerance was needed to read it

    def extracted(self) -> str:
        """A short form for the scores table: the score, or points as `obtained/all`."""
        if self.p_all is not None:
            return f"{_num(self.p_obtain)}/{_num(self.p_all)}"
        return str(self.values[0]) if self.values else _num(self.score)


def parse(score_type: str, text: str | None) -> Verdict:
    if score_type not in SCORE_TYPES:
        raise ValueError(f"unknown score type {score_type!r}; expected one of {SCORE_TYPES}")
    if text is None or not text.strip():
        raise Unparseable("empty verdict")
    if score_type == "binary":
        return _parse_binary(text)
    values, notes = _find_array(text)
    if len(values) in (1, 2):
        if score_type == "scoring_points" and len(values) == 2:
            notes.append("a score, not points")
        score = _number(values[0], "score")
        if not 0.0 <= score <= 1.0:
            raise Unparseable(f"score {values[0]!r} is outside [0, 1]")
        allowed = _ALLOWED.get(score_type)
        if allowed is not None and score not in allowed:
            raise Unparseable(f"score {values[0]!r} is not one of {sorted(allowed)} for {score_type}")
        return Verdict(score, values, _text(values[1]) if len(values) == 2 else None, notes=notes)
    if len(values) == 3:
        if score_type in _ALLOWED:
            raise Unparseable(f"points {values[:2]!r} for a {score_type} item")
        p_all, p_obtain = _number(values[0], "P_all"), _number(values[1], "P_obtain")
        if p_all < 1:
            raise Unparseable(f"P_all {values[0]!r} is below 1")
        if p_obtain < 0:
            raise Unparseable(f"P_obtain {values[1]!r} is negative")
        if p_obtain > p_all:
            notes.append(f"P_obtain {_num(p_obtain)} clamped to P_all {_num(p_all)}")
            p_obtain = p_all
        return Verdict(p_obtain / p_all, values, _text(values[2]), p_all, p_obtain, notes)
    raise Unparseable(f"an array of {len(values)} elements (expected 1 to 3)")


def _parse_binary(text: str) -> Verdict:
    """The first Y/N token (Fùxì's evaluator is told to answer Y or N and nothing else); the
    format line `Y/N` of its prompt, echoed back, is not an answer."""
    found = _YN.search(text.replace("Y/N", " "))
    if found is None:
        raise Unparseable("no Y or N in the verdict")
    letter = found.group(1)[0].upper()
    notes = [] if text.strip() == letter else ["Y/N read from surrounding text"]
    rest = text[found.end():].strip() or None
    return Verdict(1.0 if letter == "Y" else 0.0, [letter], rest, notes=notes)


def _find_array(text: str) -> tuple[list[Any], list[str]]:
    """The verdict's JSON array: the whole text (WenMind's own reading, after its clean-up of
    line breaks and of a closing `”]`), else the first array of 1-3 elements inside the text,
    trying typographic quotes as ASCII quotes last."""
    cleaned = text.replace("\\n", "").replace("\n", "").replace("”]", "\"]").strip()
    try:
        whole = json.loads(cleaned)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return whole, []
    decoder = json.JSONDecoder()
    for candidate, note in ((cleaned, "array found inside other text"),
                            (re.sub(r"[“”„‟＂]", '"', cleaned), "typographic quotes read as ASCII quotes")):
        for start in (m.start() for m in re.finditer(r"\[", candidate)):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, list) and 1 <= len(value) <= 3 and not any(isinstance(v, (list, dict)) for v in value):
                return value, [note]
    raise Unparseable(f"no JSON array in the verdict: {text.strip()[:80]!r}")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise Unparseable(f"{what} {value!r} is not a number")
    try:
        return float(str(value).strip().rstrip("分"))
    except ValueError:
        raise Unparseable(f"{what} {value!r} is not a number") from None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
