"""The rows of a benchmark's paper tables: every table's cells for each model x variant x setting x
split, with score, interval, chance, n, coverage, notes and who scored them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pipeline import schema
from pipeline.aggregate.bootstrap import (
    REPLICATES,
    Cell,
    Weights,
    clusters_note,
    compute_cell,
    design_note,
    unit_weights,
)
from pipeline.aggregate.chance import chance_of, unit_chance
from pipeline.aggregate.coverage import (
    _groupable,
    card_notes,
    judge_verdict,
    judge_weakness,
    left_out_notes,
    provenance,
    uninformative_note,
    validity_columns,
)
from pipeline.aggregate.metrics import _accuracy_stats, _isnan, _number, metric
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
               weights: Weights, replicates: bool = False) -> list[dict[str, Any]]:
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
               weights: Weights, replicates: bool, head: dict[str, Any]) -> list[dict[str, Any]]:
    """One table cell's rows, one per metric: `head` (benchmark, table, row) and the numbers."""
    # who scored and how the interval resamples: the items asked
    asked = part[part["not_asked"].isna()]
    scored_by, comparable, why = provenance(asked)
    validity = validity_columns(asked)
    head = head | judge_weakness(validity[0], validity[2], asked["score"].notna().to_numpy())
    clustered = clusters_note(asked, tables.cluster)
    covered_notes = left_out_notes(part) + card_notes(tables, part)
    mean_of = tuple(cell.get("mean_of", spec.mean_of))
    rows = []
    for metric_name in _metric_names(tables, spec, cell, part):
        result = compute_cell(part, mean_of, _leaf_metric_for(tables, metric_name), weights, spec.where)
        chance = chance_of(part, mean_of, "chance_each" if (metric_name or "").startswith("detail:")
                           else "chance", spec.where)
        design = design_note(asked, tables.cluster, result.replicates) if clustered else None
        rows.append(_row(head, spec, metric_name, result, chance, [*covered_notes, why, clustered, design],
                         scored_by, comparable, replicates))
    return rows


def _row(head: dict[str, Any], spec: TableSpec, metric_name: str | None, result: Cell, chance: float | None,
         notes: list[str | None], scored_by: str | None, comparable: bool, replicates: bool) -> dict[str, Any]:
    notes = [f"no scored items in: {', '.join(result.unscored)}" if result.unscored else None, *notes]
    shown = metric_name or "mean"
    low, high = (np.nanpercentile(result.replicates, [2.5, 97.5])
                 if np.isfinite(result.replicates).any() else (math.nan, math.nan))
    return head | {
        "metric": shown,
        "score": _none(result.value), "ci_low": _none(low), "ci_high": _none(high),
        "chance": _none(chance), "n_items": result.n_items, "n_scored": result.n_scored,
        "note": "; ".join(n for n in notes if n) or None,
        "coverage": result.n_scored / result.n_items if result.n_items else None,
        "headline": spec.headline, "scored_by": scored_by, "comparable": comparable,
    } | ({"replicates": result.replicates} if replicates else {})


def _none(x: float) -> float | None:
    # 9 decimals: sums of floats (100.00000000000004 from sacrebleu) print as the number they are
    return None if x is None or math.isnan(x) else round(float(x), 9)


RUN_KEYS = ["model", "variant", "setting", "split"]


def paper_tables(tables: CardTables, benchmark: str, units: pd.DataFrame, replicates: bool = False,
                 draws: int = REPLICATES) -> pd.DataFrame:
    """All tables of one benchmark for every model x variant x setting x split in `units` (which
    has those columns besides the unit columns, and `capped`: the model's max_tokens cut the
    benchmark's generation budget for that item). `replicates`: a `replicates` column too.
    `draws`: bootstrap replicates (a comparison whose p sits at the floor draws more)."""
    units = units.copy()
    for column in ("split", "group", "part", "scored_by", "not_asked", *CLUSTER_COLUMNS.values()):
        if column not in units:
            units[column] = None
    for column in ("capped", "paper_judge", "demo_judge"):
        if column not in units:
            units[column] = False
    units["not_asked"] = units["not_asked"].astype(object).where(units["not_asked"].notna(), None)
    # nan for none: chance_of then reads a row's levels as one array
    units["chance"], units["chance_each"] = (np.array([math.nan if c is None else c for c in levels], dtype=np.float64)
                                             for levels in unit_chance(tables, units))
    weights = unit_weights(units, tables.cluster, draws)
    planned = _plannable(tables)
    plans: list[_Plan] = []
    rows = []
    for keys, part in units.groupby(RUN_KEYS, sort=True, dropna=False):
        run = dict(zip(RUN_KEYS, keys)) | {"capped": bool(part["capped"].fillna(False).any())}
        if planned:
            part = part.reset_index(drop=True)
            plan = _plan_for(plans, tables, part, benchmark, weights)
            rows += [run | row for row in plan.rows(tables, part, weights, replicates)]
        else:
            rows += [run | row for row in table_rows(tables, part, benchmark, weights, replicates)]
    rows = _with_declared_rows(tables, rows)
    _mark_not_the_papers(benchmark, rows)
    return pd.DataFrame(rows, columns=PAPER_TABLE_COLUMNS + (["replicates"] if replicates else []))


LOGLIKELIHOOD_NOTE = ("asked by log-likelihood (lm-eval's multiple_choice), not the paper's protocol: "
                      "the paper asks by generation")


def _mark_not_the_papers(benchmark: str, rows: list[dict[str, Any]]) -> None:
    """The rows of a log-likelihood setting (the card's protocol.yaml) are not comparable to the
    paper, whose models generated their answers: marked, with the note, the number kept."""
    from pipeline.benchmarks import card, names

    if benchmark not in names():
        return
    scored = {name for name, s in card(benchmark).protocol.settings.items() if s.loglikelihood}
    for r in rows:
        if r["setting"] in scored:
            r["comparable"] = False
            r["note"] = "; ".join(n for n in (r.get("note"), LOGLIKELIHOOD_NOTE) if n)


def _with_declared_rows(tables: CardTables, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A table whose rows its card lists (`rows: task` with `where: {task: [...]}`) keeps every
    listed row in every run, in the card's order: one the source has no item of (a WYWEB task
    released without files) is a row with n_items 0 and a note, not left out without a word; a
    table none of whose rows has items is such rows alone."""
    runs: dict[tuple, dict[str, Any]] = {}                 # run -> its first row (its run columns)
    by_table: dict[tuple, list[dict[str, Any]]] = {}       # (table, run) -> its rows
    for r in rows:
        run = tuple(r[k] for k in RUN_KEYS)
        runs.setdefault(run, r)
        by_table.setdefault((r["table_name"], run), []).append(r)
    for spec in tables.tables:
        declared = [str(v) for v in spec.where.get(spec.rows, [])] if spec.rows else []
        order = {v: i for i, v in enumerate(declared)}
        for run, like in runs.items() if declared else ():
            mine = by_table.get((spec.name, run), [])
            missing = [v for v in declared if v not in {r["row_label"] for r in mine}]
            if not missing:
                continue
            added = [{**{k: like[k] for k in (*RUN_KEYS, "capped", "benchmark")}, "table_name": spec.name,
                      "title": spec.title, "row_label": value,
                      "metric": spec.metric or tables.task_metrics.get(value, "accuracy"), "score": None,
                      "ci_low": None, "ci_high": None, "chance": None, "n_items": 0, "n_scored": 0,
                      "coverage": None, "headline": spec.headline, "scored_by": None, "comparable": True,
                      "note": f"no items: the paper's table has {value}, but the files read hold none of its rows"}
                     for value in missing]
            rows += added
            for r in mine + added:
                r["row_order"] = order.get(r["row_label"], len(order))
    return rows


# ---- every run of a benchmark at the cost of one ------------------------------------------------
#
# A benchmark's runs (model x variant x setting) cover the same units: which units each table
# cell covers, how they nest, their chance levels and notes are the same for all of them; only
# the scores (and who scored them) differ. A plan, built from the first run of a structure,
# holds the former; each run then computes from its scores what table_rows computes (the same
# arithmetic in the same order: the same numbers), while a cell of grouped units (which read the
# scores) is computed by table_rows' own code.

# what differs between runs of one structure
_PER_RUN = ("score", "details", "scored_by", "paper_judge", "demo_judge", "capped", "model", "variant", "setting",
            "judge_uninformative", "judge_j", "judge_j_low", "judge_j_high")


def _plannable(tables: CardTables) -> bool:
    """Whether no table selects or nests by a column that differs between runs."""
    used = set()
    for spec in tables.tables:
        used |= set(spec.where) | set(spec.mean_of) | ({spec.rows} if spec.rows else set())
        for cell in spec.cells.values():
            used |= set(cell.get("where") or {}) | set(cell.get("mean_of") or ())
    return not used & set(_PER_RUN)


def _structure(part: pd.DataFrame) -> pd.DataFrame:
    return part.drop(columns=[c for c in _PER_RUN if c in part])


class _Leaf:
    def __init__(self, pos: np.ndarray, metric_name: str, n_items: int) -> None:
        self.pos, self.metric_name, self.n_items = pos, metric_name, n_items
        self.accuracy = metric(metric_name).stats is _accuracy_stats


class _Node:
    def __init__(self, groups: list[str], children: list, ungrouped: int) -> None:
        self.groups, self.children, self.ungrouped = groups, children, ungrouped


def _plan_cell(units: pd.DataFrame, mean_of: tuple[str, ...], leaf_metric: Callable[[pd.DataFrame], str],
               expected: dict[str, list[Any]] | None):
    """compute_cell's nesting of a cell's units (`_pos`: their rows in the run)."""
    if not mean_of:
        return _Leaf(units["_pos"].to_numpy(), leaf_metric(units), len(units))
    expected = expected or {}
    grouped = _groupable(units, mean_of[0])
    groups = dict(list(grouped.groupby(mean_of[0], sort=True, dropna=False)))
    for value in expected.get(mean_of[0], []):
        groups.setdefault(value, units.iloc[0:0])
    return _Node([str(g) for g in groups], [_plan_cell(part, mean_of[1:], leaf_metric, expected)
                                            for part in groups.values()], len(units) - len(grouped))


class _Scores:
    """One run's scores, as the plan reads them."""

    def __init__(self, part: pd.DataFrame, draw_rows: np.ndarray) -> None:
        self.part = part
        self.score = part["score"].to_numpy(dtype=np.float64, na_value=math.nan)
        self.scored = ~np.isnan(self.score)   # neither None nor nan, as compute_cell counts them
        self.zero_one = bool(np.all((self.score[self.scored] == 0) | (self.score[self.scored] == 1)))
        self.draw_rows = draw_rows
        # provenance's columns, for the whole run at once
        self.scored_by = part["scored_by"].to_numpy()
        self.in_paper = part["paper_judge"].fillna(False).astype(bool).to_numpy()
        # (each distinct scorer once)
        codes, scorers = pd.factorize(part["scored_by"].fillna(""))
        self.judged = pd.Series(scorers).str.startswith("judge ").to_numpy()[codes] if len(codes) else \
            np.zeros(0, dtype=bool)
        self.demo = part["demo_judge"].fillna(False).astype(bool).to_numpy()
        self.validity = validity_columns(part)


def _evaluate(tree, run: _Scores, weights: Weights) -> Cell:
    if isinstance(tree, _Node):   # compute_cell's mean over groups
        children = [_evaluate(child, run, weights) for child in tree.children]
        n_items = sum(c.n_items for c in children) + tree.ungrouped
        n_scored = sum(c.n_scored for c in children)
        unscored = tuple(g for g, c in zip(tree.groups, children) if c.n_scored == 0)
        if not children or unscored:
            return Cell(math.nan, np.full(REPLICATES, math.nan), n_items, n_scored, unscored)
        return Cell(float(np.mean([c.value for c in children])),
                    np.mean(np.stack([c.replicates for c in children]), axis=0), n_items, n_scored)
    if not (tree.accuracy and run.zero_one):
        return compute_cell(run.part.iloc[tree.pos], (), lambda _: tree.metric_name, weights)
    # accuracy of scores 0 or 1: the statistics [score, 1] and the weights are small integers, so
    # their weighted sums (_leaf's stats.T @ w) are exact integers whatever the order they are
    # summed in: summed here as integers (the weights of the units right, and of the others)
    pos = tree.pos[run.scored[tree.pos]]
    if not len(pos):
        return Cell(math.nan, np.full(REPLICATES, math.nan), tree.n_items, 0)
    stats = np.empty((len(pos), 2), dtype=np.float64)
    stats[:, 0] = run.score[pos]
    stats[:, 1] = 1.0
    counts, right = weights.counts(), stats[:, 0] == 1
    total = np.uint16 if len(pos) * 16 < 2 ** 16 else np.uint64   # no sum overflows it
    sums = np.stack([counts[run.draw_rows[pos[right]]].sum(axis=0, dtype=total),
                     counts[run.draw_rows[pos[~right]]].sum(axis=0, dtype=total)])
    sums[1] += sums[0]
    sums = sums.astype(np.float64)
    m = metric(tree.metric_name)
    return Cell(float(m.value(stats.sum(axis=0))), np.asarray(m.value(sums), dtype=float), tree.n_items, len(pos))


class _Plan:
    def __init__(self, tables: CardTables, part: pd.DataFrame, benchmark: str, weights: Weights) -> None:
        self.structure = _structure(part)
        self.draw_rows = np.array([weights.row[u] for u in part["unit_id"]], dtype=np.intp)
        self.not_asked = part["not_asked"].isna().to_numpy()
        units = part.assign(_pos=np.arange(len(part)))
        self.cells = []
        for spec in tables.tables:
            covered = _select(units, spec.where)
            for order_index, (label, cell) in enumerate(_cells(tables, spec, covered)):
                chosen = _select(covered, cell.get("where", {}))
                head = {"benchmark": benchmark, "table_name": spec.name, "title": spec.title,
                        "row_order": order_index, "row_label": label}
                pos = chosen["_pos"].to_numpy()
                if cell.get("unit") == "group":   # grouped units read the scores: table_rows' code
                    self.cells.append((spec, cell, head, pos, None))
                    continue
                asked = chosen[chosen["not_asked"].isna()]
                mean_of = tuple(cell.get("mean_of", spec.mean_of))
                metrics = []
                for metric_name in _metric_names(tables, spec, cell, chosen):
                    tree = _plan_cell(chosen, mean_of, _leaf_metric_for(tables, metric_name), spec.where)
                    chance = chance_of(chosen, mean_of, "chance_each" if (metric_name or "").startswith("detail:")
                                       else "chance", spec.where)
                    metrics.append((metric_name, tree, chance))
                fixed = {"asked": asked["_pos"].to_numpy(), "clustered": clusters_note(asked, tables.cluster),
                         "covered_notes": left_out_notes(chosen) + card_notes(tables, chosen), "metrics": metrics}
                self.cells.append((spec, cell, head, pos, fixed))

    def fits(self, part: pd.DataFrame) -> bool:
        return self.structure.equals(_structure(part))

    def rows(self, tables: CardTables, part: pd.DataFrame, weights: Weights,
             replicates: bool) -> list[dict[str, Any]]:
        """table_rows(tables, part, ...) of a run of this structure."""
        run = _Scores(part, self.draw_rows)
        out = []
        for spec, cell, head, pos, fixed in self.cells:
            if fixed is None:
                out += _cell_rows(tables, spec, cell, _group_units(part.iloc[pos]), weights, replicates, head)
                continue
            scored_by, comparable, why = _provenance(part, run, fixed["asked"])
            asked = fixed["asked"]
            weak = judge_weakness(run.validity[0][asked], run.validity[2][asked], run.scored[asked])
            for metric_name, tree, chance in fixed["metrics"]:
                result = _evaluate(tree, run, weights)
                design = design_note(part.iloc[fixed["asked"]], tables.cluster, result.replicates) \
                    if fixed["clustered"] else None
                out.append(_row(head | weak, spec, metric_name, result, chance,
                                [*fixed["covered_notes"], why, fixed["clustered"], design], scored_by, comparable,
                                replicates))
        return out


def _plan_for(plans: list[_Plan], tables: CardTables, part: pd.DataFrame, benchmark: str,
              weights: Weights) -> _Plan:
    for plan in plans:
        if plan.fits(part):
            return plan
    plans.append(_Plan(tables, part, benchmark, weights))
    return plans[-1]


def _provenance(part: pd.DataFrame, run: _Scores, asked: np.ndarray) -> tuple[str | None, bool, str | None]:
    """provenance() of the run's units at `asked`, from its columns computed once per run."""
    if run.judged.dtype != bool:   # a scorer that is not a string: provenance() itself
        return provenance(part.iloc[asked])
    scored = run.scored[asked]
    scored_by = ", ".join(sorted({str(x) for x in pd.unique(run.scored_by[asked[scored]]) if x})) or None
    weak = uninformative_note(*(column[asked] for column in run.validity), scored) if run.validity[0].any() else None
    in_paper = run.in_paper[asked]
    if not in_paper.any():
        return (scored_by, True, None) if weak is None else (scored_by, False, weak)
    judged = run.judged[asked][in_paper]
    demo = judged & run.demo[asked][in_paper]
    comparable, why = judge_verdict(judged, demo, int(scored.sum()), len(asked))
    return scored_by, comparable and weak is None, "; ".join(n for n in (why, weak) if n) or None


# paper_tables' columns, declared in pipeline/schema.py (RUN_KEYS first)
PAPER_TABLE_COLUMNS = schema.PAPER_TABLES.names
