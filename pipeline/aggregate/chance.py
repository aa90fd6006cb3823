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

    typed = False   # whether a column holds booleans: then the values' types are part of the key

    def column(name: str) -> list[Any]:
        nonlocal typed
        if name not in units:
            return [None] * len(units)
        values = units[name]
        typed = typed or pd.api.types.infer_dtype(values, skipna=True) not in (
            "string", "integer", "floating", "mixed-integer-float", "empty")
        return list(values.astype(object).where(values.notna(), None))   # a nan reads as None
    # the same inputs, the same levels: each distinct one computed once
    known: dict[tuple, tuple[float | None, float | None]] = {}
    columns = [column(c) for c in ("task", "format", "n_options", "n_questions", "n_labels")]
    for values in zip(*columns):
        key = (*values, *map(type, values)) if typed else values
        try:
            levels = known.get(key)
        except TypeError:   # an unhashable value
            levels, key = None, None
        if levels is None:
            levels = _levels(tables, *values)
            if key is not None:
                known[key] = levels
        whole.append(levels[0])
        each.append(levels[1])
    return whole, each


def _levels(tables: CardTables, task, fmt, options, questions, labels) -> tuple[float | None, float | None]:
    """One unit's chance levels: (whole, each)."""
    rule = tables.chance.get(task) or tables.chance.get(fmt) or tables.chance.get("default") or "none"
    k = _number(options if rule == "options" else labels if rule == "labels" else None)
    if not k or k < 1:
        return None, None
    asked = _number(questions) if rule == "options" else 1.0
    asked = asked if asked and asked >= 1 else 1.0
    return (1.0 / k) ** asked, 1.0 / k


def chance_of(units: pd.DataFrame, mean_of: Sequence[str], column: str,
              expected: dict[str, list[Any]] | None = None) -> float | None:
    """A row's chance level x100: the mean over its items asked of each one's chance, or with
    `mean_of` the unweighted mean of its groups' chance levels (recursively), like the score.
    None when any item (or group) has none."""
    if not mean_of:
        if column not in units:
            return None
        asked = units[column][units["not_asked"].isna()] if "not_asked" in units else units[column]
        if asked.dtype == np.float64:   # unit_chance's, as paper_tables keeps them: nan for none
            values = asked.to_numpy()
            if not len(values) or np.isnan(values).any():
                return None
        else:
            values = [_number(v) for v in asked]
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
