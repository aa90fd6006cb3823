"""Metrics: per-unit statistics that sum, and the number computed from their sums (accuracy,
micro-F1, corpus BLEU / chrF, the mean of a number in a score's details)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np


@cache
def _scorer(kind: str):
    """sacrebleu's BLEU (Chinese tokenisation) or chrF, made when first used: sacrebleu costs
    0.1 s to import, and most paper tables (and reports) have no corpus metric."""
    from sacrebleu.metrics import BLEU, CHRF

    return BLEU(tokenize="zh") if kind == "bleu" else CHRF()


@dataclass(frozen=True)
class Metric:
    name: str
    stats: Callable[[dict[str, Any]], list[float] | None]   # a scored unit -> its statistics
    # summed statistics (k,) or (k, replicates) -> the number(s), 0-100
    value: Callable[[np.ndarray], float | np.ndarray]
    higher_is_better: bool = True   # every metric of the five papers is (results.json says so per metric)
    reads: tuple[str, ...] = ()     # the keys of a score's details its statistics need (none: the score)


def _accuracy_stats(unit: dict[str, Any]) -> list[float]:
    return [unit["score"], 1.0]


def _ratio(sums: np.ndarray) -> float | np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums[1] > 0, 100.0 * sums[0] / np.where(sums[1] > 0, sums[1], 1), np.nan)[()]


def _f1_stats(unit: dict[str, Any]) -> list[float] | None:
    d = unit["details"] or {}
    return [d["tp"], d["fp"], d["fn"]] if "tp" in d else None


def _micro_f1(sums: np.ndarray) -> float | np.ndarray:
    tp, fp, fn = sums
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 200.0 * tp / np.where(denominator > 0, denominator, 1), np.nan)[()]


def _detail_stats(key: str) -> Callable[[dict[str, Any]], list[float] | None]:
    def stats(unit: dict[str, Any]) -> list[float] | None:
        value = (unit["details"] or {}).get(key)
        return None if value is None else [float(value), 1.0]
    return stats


def _corpus(kind: str, key: str) -> Metric:
    def stats(unit: dict[str, Any]) -> list[float] | None:
        return (unit["details"] or {}).get(key)

    def one(sums: np.ndarray) -> float:
        return _scorer(kind)._compute_score_from_stats([int(round(x)) for x in sums]).score if sums.any() else math.nan

    def value(sums: np.ndarray) -> float | np.ndarray:
        return one(sums) if sums.ndim == 1 else np.array([one(sums[:, b]) for b in range(sums.shape[1])])
    return Metric(key.removesuffix("_stats"), stats, value, reads=(key,))


METRICS: dict[str, Metric] = {
    "accuracy": Metric("accuracy", _accuracy_stats, _ratio),
    "micro_f1": Metric("micro_f1", _f1_stats, _micro_f1, reads=("tp", "fp", "fn")),
    # corpus BLEU / chrF from per-item sacrebleu statistics (scoring/rules.py stores them)
    "corpus_bleu": _corpus("bleu", "bleu_stats"),
    "corpus_chrf": _corpus("chrf", "chrf_stats"),
}


def metric(name: str) -> Metric:
    if name.startswith("detail:"):   # the mean of a number in the score's details (CP-DUE AU's questions)
        key = name.split(":", 1)[1]
        return Metric(name, _detail_stats(key), _ratio, reads=(key,))
    return METRICS[name]


def item_stats(kind: str, hyp: str, refs: Sequence[str]) -> list[int]:
    """sacrebleu's sufficient statistics of one hypothesis, summed later for a corpus score."""
    scorer = _scorer("bleu" if kind == "bleu" else "chrf")
    return [int(x) for x in scorer._extract_corpus_statistics([hyp], [[r] for r in refs])[0]]


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _number(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value
