"""Chance levels: each unit's, from its card's `chance:` rule, and a row's, nested like its score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.aggregate.coverage import _groupable
from pipeline.aggregate.metrics import _number
from pipeline.aggregate.spec import CardTables


def unit_chance(tables: CardTables, units: pd.DataFrame) -> tuple[list[float | None], list[float | None]]:
    """Each unit's chance level (0-1) for its score, and for each one of its questions (what a
    `detail:` metric counts: CP-DUE AU's Q1-Q3); None where its card declares none (the rule of
    its task, else of its format, else `default`, else none) or its item does not say k."""
    whole: list[float | None] = []
    each: list[float | None] = []

    def column(name: str) -> list[Any]:
        return list(units[name]) if name in units else [None] * len(units)
    for task, fmt, options, questions, labels in zip(column("task"), column("format"), column("n_options"),
                                                      column("n_questions"), column("n_labels")):
        rule = tables.chance.get(task) or tables.chance.get(fmt) or tables.chance.get("default") or "none"
        k = _number(options if rule == "options" else labels if rule == "labels" else None)
        if not k or k < 1:
            whole.append(None)
            each.append(None)
            continue
        asked = _number(questions) if rule == "options" else 1.0
        asked = asked if asked and asked >= 1 else 1.0
        each.append(1.0 / k)
        whole.append((1.0 / k) ** asked)
    return whole, each


def chance_of(units: pd.DataFrame, mean_of: Sequence[str], column: str,
              expected: dict[str, list[Any]] | None = None) -> float | None:
    """A row's chance level x100: the mean over its items asked of each one's chance, or with
    `mean_of` the unweighted mean of its groups' chance levels (recursively), like the score.
    None when any item (or group) has none."""
    if not mean_of:
        asked = units[units["not_asked"].isna()] if "not_asked" in units else units
        values = [_number(v) for v in asked[column]] if column in asked else []
        if not values or any(v is None for v in values):
            return None
        return 100.0 * float(np.mean(values))
    expected = expected or {}
    groups = dict(list(_groupable(units, mean_of[0]).groupby(mean_of[0], sort=True, dropna=False)))
    for value in expected.get(mean_of[0], []):
        groups.setdefault(value, units.iloc[0:0])
    children = [chance_of(part, mean_of[1:], column, expected) for part in groups.values()]
    if not children or any(c is None for c in children):
        return None
    return float(np.mean(children))
