"""The rows of a benchmark's paper tables: every table's cells for each model x variant x setting x
split, with score, interval, chance, n, coverage, notes and who scored them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pipeline import schema
from pipeline.aggregate.bootstrap import clusters_note, compute_cell, unit_weights
from pipeline.aggregate.chance import chance_of, unit_chance
from pipeline.aggregate.coverage import card_notes, left_out_notes, provenance
from pipeline.aggregate.metrics import _isnan, _number
from pipeline.aggregate.spec import CLUSTER_COLUMNS, CardTables, TableSpec


def _select(units: pd.DataFrame, where: dict[str, list[Any]]) -> pd.DataFrame:
    for column, allowed in where.items():
        units = units[units[column].isin(list(allowed))]
    return units


def _group_units(units: pd.DataFrame) -> pd.DataFrame:
    """Units that are groups of items (CP-DUE's OQ best+worst): right only if every item is."""
    rows = []
    for gid, part in units.groupby("group", sort=True):
        scores = list(part["score"])
        scored = all(s is not None and not _isnan(s) for s in scores)
        first = part.iloc[0].to_dict()
        # all right by chance: each member by its own chance (independent guesses); a group with a
        # member not asked is not asked
        chances = {c: [_number(x) for x in part[c]] for c in ("chance", "chance_each") if c in part}
        reasons = [r for r in part["not_asked"] if isinstance(r, str)] if "not_asked" in part else []
        rows.append({**first, "unit_id": f"group:{gid}", "score": float(min(scores)) if scored else None,
                     "details": {}, "not_asked": reasons[0] if reasons else None,
                     **{c: None if any(x is None for x in xs) else float(np.prod(xs)) for c, xs in chances.items()}})
    return pd.DataFrame(rows, columns=units.columns)


def table_rows(tables: CardTables, units: pd.DataFrame, benchmark: str,
               weights: dict[str, np.ndarray], replicates: bool = False) -> list[dict[str, Any]]:
    """Every row of every table of one benchmark for one model x variant x setting.

    `units`: one row per evaluated item (columns: unit_id, item columns, `group`, `part`, score,
    details, and for `provenance` scored_by, paper_judge, demo_judge), with score None where the
    model's answer could not be scored or is missing; and one per official row not asked
    (`not_asked`: why), unscored. `chance` / `chance_each`: each unit's chance level (unit_chance).
    `replicates`: each row also carries its bootstrap replicates (`replicates`, an array), for
    paired comparisons."""
    out = []
    for spec in tables.tables:
        covered = _select(units, spec.where)
        for order_index, (label, cell) in enumerate(_cells(tables, spec, covered)):
            part = _select(covered, cell.get("where", {}))
            if cell.get("unit") == "group":
                part = _group_units(part)
            head = {"benchmark": benchmark, "table_name": spec.name, "title": spec.title,
                    "row_order": order_index, "row_label": label}
            out += _cell_rows(tables, spec, cell, part, weights, replicates, head)
    return out


def _cells(tables: CardTables, spec: TableSpec, covered: pd.DataFrame) -> list[tuple[str, dict[str, Any]]]:
    """A table's rows (label, cell): its explicit cells, or one per value of its `rows` column
    (the paper's order first, then the others sorted), or the whole table as one row."""
    if spec.cells:
        return [(label, dict(cell)) for label, cell in spec.cells.items()]
    if spec.rows:
        order = tables.row_order.get(spec.rows, [])
        present = [v for v in covered[spec.rows].dropna().unique()]
        values = [v for v in order if v in present] + sorted(v for v in present if v not in order)
        return [(str(v), {"where": {spec.rows: [v]}}) for v in values]
    return [(spec.name, {})]


def _metric_names(tables: CardTables, spec: TableSpec, cell: dict[str, Any], part: pd.DataFrame) -> list[str | None]:
    """The metrics a row is reported in: the cell's or table's, else its one task's (None: a mean
    whose groups each take their own task's), then the task's extra metrics (not for a mean)."""
    metric_names = [cell.get("metric") or spec.metric]
    task = part["task"].dropna().unique()[0] if part["task"].nunique() == 1 else None
    if metric_names == [None]:
        metric_names = [tables.task_metrics.get(task, "accuracy") if task else None]
    metric_names += tables.extra_metrics.get(task, []) if task and not spec.mean_of else []
    return metric_names


def _leaf_metric_for(tables: CardTables, spec_metric: str | None) -> Callable[[pd.DataFrame], str]:
    """The metric of a leaf of the nesting: the row's, else the leaf's one task's, else accuracy."""
    def choose(part: pd.DataFrame) -> str:
        if spec_metric:
            return spec_metric
        tasks = part["task"].dropna().unique()
        return tables.task_metrics.get(tasks[0], "accuracy") if len(tasks) == 1 else "accuracy"
    return choose


def _cell_rows(tables: CardTables, spec: TableSpec, cell: dict[str, Any], part: pd.DataFrame,
               weights: dict[str, np.ndarray], replicates: bool, head: dict[str, Any]) -> list[dict[str, Any]]:
    """One table cell's rows, one per metric: `head` (benchmark, table, row) and the numbers."""
    # who scored and how the interval resamples: the items asked
    asked = part[part["not_asked"].isna()]
    scored_by, comparable, why = provenance(asked)
    clustered = clusters_note(asked, tables.cluster)
    covered_notes = left_out_notes(part) + card_notes(tables, part)
    mean_of = tuple(cell.get("mean_of", spec.mean_of))
    rows = []
    for metric_name in _metric_names(tables, spec, cell, part):
        result = compute_cell(part, mean_of, _leaf_metric_for(tables, metric_name), weights, spec.where)
        chance = chance_of(part, mean_of, "chance_each" if (metric_name or "").startswith("detail:")
                           else "chance", spec.where)
        notes = [f"no scored items in: {', '.join(result.unscored)}" if result.unscored else None,
                 *covered_notes, why, clustered]
        shown = metric_name or "mean"
        low, high = (np.nanpercentile(result.replicates, [2.5, 97.5])
                     if np.isfinite(result.replicates).any() else (math.nan, math.nan))
        rows.append(head | {
            "metric": shown,
            "score": _none(result.value), "ci_low": _none(low), "ci_high": _none(high),
            "chance": _none(chance), "n_items": result.n_items, "n_scored": result.n_scored,
            "note": "; ".join(n for n in notes if n) or None,
            "coverage": result.n_scored / result.n_items if result.n_items else None,
            "headline": spec.headline, "scored_by": scored_by, "comparable": comparable,
        } | ({"replicates": result.replicates} if replicates else {}))
    return rows


def _none(x: float) -> float | None:
    # 9 decimals: sums of floats (100.00000000000004 from sacrebleu) print as the number they are
    return None if x is None or math.isnan(x) else round(float(x), 9)


RUN_KEYS = ["model", "variant", "setting", "split"]


def paper_tables(tables: CardTables, benchmark: str, units: pd.DataFrame, replicates: bool = False) -> pd.DataFrame:
    """All tables of one benchmark for every model x variant x setting x split in `units` (which
    has those columns besides the unit columns, and `capped`: the model's max_tokens cut the
    benchmark's generation budget for that item). `replicates`: a `replicates` column too."""
    units = units.copy()
    for column in ("split", "group", "part", "scored_by", "not_asked", *CLUSTER_COLUMNS.values()):
        if column not in units:
            units[column] = None
    for column in ("capped", "paper_judge", "demo_judge"):
        if column not in units:
            units[column] = False
    units["not_asked"] = units["not_asked"].astype(object).where(units["not_asked"].notna(), None)
    units["chance"], units["chance_each"] = unit_chance(tables, units)
    weights = unit_weights(units, tables.cluster)
    rows = []
    for keys, part in units.groupby(RUN_KEYS, sort=True, dropna=False):
        run = dict(zip(RUN_KEYS, keys)) | {"capped": bool(part["capped"].fillna(False).any())}
        rows += [run | row for row in table_rows(tables, part, benchmark, weights, replicates)]
    return pd.DataFrame(rows, columns=PAPER_TABLE_COLUMNS + (["replicates"] if replicates else []))


# paper_tables' columns, declared in pipeline/schema.py (RUN_KEYS first)
PAPER_TABLE_COLUMNS = schema.PAPER_TABLES.names
