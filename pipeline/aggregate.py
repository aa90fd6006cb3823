"""Paper-shaped tables from per-item scores, each number with its n, coverage and a 95% interval.

A benchmark card's `tables.yaml` declares the tables its paper publishes: which rows a table has,
which items a row covers, how its number is computed (`METRICS`) and how rows nest (`mean_of`:
the unweighted mean of sub-groups' numbers, as AC-EVAL averages subjects within a level and then
the levels). Without `mean_of` a row is computed over its items at once (micro): the mean score,
or a corpus metric from summed per-item statistics (corpus BLEU/chrF, micro-F1).

Intervals are a seeded Poisson bootstrap: replicate b gives each scoring unit (an item, or a
group for group metrics) a Poisson(1) weight derived from a hash of its id, b and the seed, so the
same unit carries the same weight for every model (paired comparisons) and in any process. Every
replicate recomputes the row exactly like the point estimate, nesting included; the interval is
the 2.5th-97.5th percentile of the replicates. Where questions share a passage or poem, a card
declares `cluster: context`: the weight is then drawn per cluster (every question about one text
carries the same weight), the cluster bootstrap, so that correlated answers do not pass for
independent evidence (Miller 2024, "Adding error bars to evals").

`combine` is the same nesting rule applied to numbers already aggregated (a paper's per-task
table), which is how the reproduction tests check the rules against published aggregates.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import yaml
from sacrebleu.metrics import BLEU, CHRF

REPLICATES = 1000
SEED = "wenheng"
_POISSON_CDF = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(12)])
_BLEU = BLEU(tokenize="zh")
_CHRF = CHRF()


# ---- metrics: per-unit statistics that sum, and the number computed from their sums ----------

@dataclass(frozen=True)
class Metric:
    name: str
    stats: Callable[[dict[str, Any]], list[float] | None]   # a scored unit -> its statistics
    # summed statistics (k,) or (k, replicates) -> the number(s), 0-100
    value: Callable[[np.ndarray], float | np.ndarray]


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


def _corpus(metric, key: str) -> Metric:
    def stats(unit: dict[str, Any]) -> list[float] | None:
        return (unit["details"] or {}).get(key)

    def one(sums: np.ndarray) -> float:
        return metric._compute_score_from_stats([int(round(x)) for x in sums]).score if sums.any() else math.nan

    def value(sums: np.ndarray) -> float | np.ndarray:
        return one(sums) if sums.ndim == 1 else np.array([one(sums[:, b]) for b in range(sums.shape[1])])
    return Metric(key.removesuffix("_stats"), stats, value)


METRICS: dict[str, Metric] = {
    "accuracy": Metric("accuracy", _accuracy_stats, _ratio),
    "micro_f1": Metric("micro_f1", _f1_stats, _micro_f1),
    # corpus BLEU / chrF from per-item sacrebleu statistics (scoring/rules.py stores them)
    "corpus_bleu": _corpus(_BLEU, "bleu_stats"),
    "corpus_chrf": _corpus(_CHRF, "chrf_stats"),
}


def metric(name: str) -> Metric:
    if name.startswith("detail:"):   # the mean of a number in the score's details (CP-DUE AU's questions)
        key = name.split(":", 1)[1]
        return Metric(name, _detail_stats(key), _ratio)
    return METRICS[name]


def item_stats(kind: str, hyp: str, refs: Sequence[str]) -> list[int]:
    """sacrebleu's sufficient statistics of one hypothesis, summed later for a corpus score."""
    scorer = _BLEU if kind == "bleu" else _CHRF
    return [int(x) for x in scorer._extract_corpus_statistics([hyp], [[r] for r in refs])[0]]


# ---- table specifications (a card's tables.yaml) --------------------------------------------

@dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    rows: str | None = None                      # an item column: one row per value
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)   # or explicit rows
    where: dict[str, list[Any]] = field(default_factory=dict)        # which items the table covers
    mean_of: tuple[str, ...] = ()
    metric: str | None = None
    headline: bool = False                       # shown in the all-benchmark leaderboard


@dataclass(frozen=True)
class CardTables:
    tables: tuple[TableSpec, ...]
    task_metrics: dict[str, str]                 # task -> metric name (default accuracy)
    extra_metrics: dict[str, list[str]]          # task -> metrics reported beside the main one
    row_order: dict[str, list[str]]              # column -> the paper's order of its values
    # a unit column whose equal values are one cluster the bootstrap resamples whole (`context`:
    # the questions asked about one passage or poem); None: every unit on its own
    cluster: str | None = None


CLUSTER_COLUMNS = {"context": "context_id"}   # tables.yaml `cluster:` -> the units column it reads


# A card without tables.yaml gets these: its tasks, and the mean over all its items.
DEFAULT_TABLES = {"tables": {"by_task": {"title": "tasks", "rows": "task"},
                             "overall": {"title": "overall (mean over items)", "headline": True}}}


def load_tables(path) -> CardTables:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else DEFAULT_TABLES
    tables = []
    for name, spec in (data.get("tables") or {}).items():
        spec = dict(spec or {})
        tables.append(TableSpec(
            name=name, title=spec.pop("title", name), rows=spec.pop("rows", None),
            cells=spec.pop("cells", None) or {}, where=spec.pop("where", None) or {},
            mean_of=tuple(spec.pop("mean_of", None) or ()), metric=spec.pop("metric", None),
            headline=bool(spec.pop("headline", False))))
        if spec:
            raise ValueError(f"{path}: table {name}: unknown keys {sorted(spec)}")
    cluster = data.get("cluster")
    if cluster is not None and cluster not in CLUSTER_COLUMNS:
        raise ValueError(f"{path}: cluster: {cluster!r} is not one of {sorted(CLUSTER_COLUMNS)}")
    return CardTables(tuple(tables), dict(data.get("task_metrics") or {}),
                      {k: list(v) for k, v in (data.get("extra_metrics") or {}).items()},
                      {k: list(v) for k, v in (data.get("row_order") or {}).items()}, cluster)


# ---- computing ---------------------------------------------------------------------------

def poisson_weights(ids: Sequence[str], replicates: int = REPLICATES, seed: str = SEED) -> np.ndarray:
    """(len(ids), replicates) bootstrap weights; a unit's weights depend only on its id and the seed."""
    if not len(ids):
        return np.zeros((0, replicates))
    roots = np.array([int.from_bytes(hashlib.sha256(f"{seed}|{i}".encode()).digest()[:8], "little") for i in ids],
                     dtype=np.uint64)
    mix = np.arange(replicates, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    out = np.empty((len(ids), replicates))
    # in blocks of rows, in place: the arrays stay in cache (7x faster than whole-matrix steps)
    for start in range(0, len(ids), _WEIGHT_BLOCK):
        x = roots[start:start + _WEIGHT_BLOCK, None] ^ mix[None, :]
        x ^= x >> np.uint64(30)                  # splitmix64 finaliser (wrapping uint64 arithmetic)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
        x >>= np.uint64(11)
        # 53 bits: exact as int64 too, whose conversion to float is several times faster than uint64's
        uniform = x.view(np.int64).astype(np.float64)
        uniform /= float(1 << 53)
        # the Poisson draw: how many CDF values lie below (np.searchsorted's left side), counted
        drawn = np.zeros(uniform.shape, dtype=np.uint8)
        for bound in _POISSON_CDF:
            drawn += uniform > bound
        out[start:start + _WEIGHT_BLOCK] = drawn
    return out


_WEIGHT_BLOCK = 512


@dataclass
class Cell:
    value: float                 # 0-100, nan when nothing could be computed
    replicates: np.ndarray       # (REPLICATES,)
    n_items: int
    n_scored: int
    unscored: tuple[str, ...] = ()   # groups of a mean with no scored unit: why the mean is undefined


def _leaf(units: pd.DataFrame, metric_name: str, weights: dict[str, np.ndarray]) -> Cell:
    m = metric(metric_name)
    # a unit's statistics read its score and details only: those two, not the whole row as a dict
    rows = [(uid, m.stats({"unit_id": uid, "score": score, "details": details}))
            for uid, score, details in zip(units["unit_id"], units["score"], units["details"])
            if score is not None and not _isnan(score)]
    rows = [(uid, s) for uid, s in rows if s is not None]
    n_items = len(units)
    if not rows:
        return Cell(math.nan, np.full(REPLICATES, math.nan), n_items, 0)
    stats = np.array([s for _, s in rows], dtype=np.float64)          # (n, k)
    w = np.stack([weights[uid] for uid, _ in rows])                    # (n, B)
    return Cell(float(m.value(stats.sum(axis=0))), np.asarray(m.value(stats.T @ w), dtype=float), n_items, len(rows))


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def compute_cell(units: pd.DataFrame, mean_of: Sequence[str], leaf_metric: Callable[[pd.DataFrame], str],
                 weights: dict[str, np.ndarray], expected: dict[str, list[Any]] | None = None) -> Cell:
    """A row's number: micro over its units, or the unweighted mean over `mean_of[0]`'s groups of
    their own numbers (recursively). A mean over groups is undefined (nan) when any group has no
    scored unit, or when a group the table lists (`expected`, from its `where`) has no items at all,
    so a missing task never silently changes what an average covers."""
    if not mean_of:
        return _leaf(units, leaf_metric(units), weights)
    expected = expected or {}
    groups = dict(list(units.groupby(mean_of[0], sort=True, dropna=False)))
    for value in expected.get(mean_of[0], []):
        groups.setdefault(value, units.iloc[0:0])
    children = [compute_cell(part, mean_of[1:], leaf_metric, weights, expected) for part in groups.values()]
    n_items, n_scored = sum(c.n_items for c in children), sum(c.n_scored for c in children)
    unscored = tuple(str(g) for g, c in zip(groups, children) if c.n_scored == 0)
    if not children or unscored:
        return Cell(math.nan, np.full(REPLICATES, math.nan), n_items, n_scored, unscored)
    return Cell(float(np.mean([c.value for c in children])),
                np.mean(np.stack([c.replicates for c in children]), axis=0), n_items, n_scored)


def combine(values: Sequence[float], sizes: Sequence[int] | None = None) -> float:
    """The nesting rule on already-aggregated numbers: the unweighted mean, or (with sizes) the
    size-weighted mean, which is what a micro average over items amounts to."""
    if sizes is None:
        return float(np.mean(values))
    return float(np.dot(values, sizes) / np.sum(sizes))


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
        rows.append({**first, "unit_id": f"group:{gid}", "score": float(min(scores)) if scored else None,
                     "details": {}})
    return pd.DataFrame(rows, columns=units.columns)


def table_rows(tables: CardTables, units: pd.DataFrame, benchmark: str,
               weights: dict[str, np.ndarray], replicates: bool = False) -> list[dict[str, Any]]:
    """Every row of every table of one benchmark for one model x variant x setting.

    `units`: one row per evaluated item (columns: unit_id, item columns, `group`, `part`, score,
    details, and for `provenance` scored_by, paper_judge, demo_judge), with score None where the
    model's answer could not be scored or is missing. `replicates`: each row also carries its
    bootstrap replicates (`replicates`, an array), for paired comparisons."""
    def leaf_metric_for(spec_metric: str | None) -> Callable[[pd.DataFrame], str]:
        def choose(part: pd.DataFrame) -> str:
            if spec_metric:
                return spec_metric
            tasks = part["task"].unique()
            return tables.task_metrics.get(tasks[0], "accuracy") if len(tasks) == 1 else "accuracy"
        return choose

    out = []
    for spec in tables.tables:
        covered = _select(units, spec.where)
        if spec.cells:
            cells = [(label, dict(cell)) for label, cell in spec.cells.items()]
        elif spec.rows:
            order = tables.row_order.get(spec.rows, [])
            present = [v for v in covered[spec.rows].dropna().unique()]
            values = [v for v in order if v in present] + sorted(v for v in present if v not in order)
            cells = [(str(v), {"where": {spec.rows: [v]}}) for v in values]
        else:
            cells = [(spec.name, {})]
        for order_index, (label, cell) in enumerate(cells):
            part = _select(covered, cell.get("where", {}))
            if cell.get("unit") == "group":
                part = _group_units(part)
            metric_names = [cell.get("metric") or spec.metric]
            task = part["task"].unique()[0] if part["task"].nunique() == 1 else None
            if metric_names == [None]:
                metric_names = [tables.task_metrics.get(task, "accuracy") if task else None]
            metric_names += tables.extra_metrics.get(task, []) if task and not spec.mean_of else []
            scored_by, comparable, why = provenance(part)
            clustered = clusters_note(part, tables.cluster)
            for metric_name in metric_names:
                result = compute_cell(part, tuple(cell.get("mean_of", spec.mean_of)),
                                      leaf_metric_for(metric_name), weights, spec.where)
                notes = [f"no scored items in: {', '.join(result.unscored)}" if result.unscored else None, why,
                         clustered]
                shown = metric_name or "mean"
                low, high = (np.nanpercentile(result.replicates, [2.5, 97.5])
                             if np.isfinite(result.replicates).any() else (math.nan, math.nan))
                out.append({
                    "benchmark": benchmark, "table_name": spec.name, "title": spec.title,
                    "row_order": order_index, "row_label": label, "metric": shown,
                    "score": _none(result.value), "ci_low": _none(low), "ci_high": _none(high),
                    "n_items": result.n_items, "n_scored": result.n_scored,
                    "note": "; ".join(n for n in notes if n) or None,
                    "coverage": result.n_scored / result.n_items if result.n_items else None,
                    "headline": spec.headline, "scored_by": scored_by, "comparable": comparable,
                } | ({"replicates": result.replicates} if replicates else {}))
    return out


def provenance(units: pd.DataFrame) -> tuple[str | None, bool, str | None]:
    """Who scored a row's units, whether the row can stand beside the paper's number, and why not.

    `scored_by` lists the scorers of its scored units ("rules", "judge <model> (<prompt set>
    prompts)"). A row is not comparable when any of its units is one the paper scored with an LLM
    judge (`paper_judge`) and it was scored here by rules or by the bundled demo judge
    (`demo_judge`), or was not judged at all; the number stays, marked."""
    scored = units[[s is not None and not _isnan(s) for s in units["score"]]]
    scored_by = ", ".join(sorted({str(x) for x in scored["scored_by"] if x})) or None
    judged_in_paper = units[units["paper_judge"].fillna(False).astype(bool)]
    if judged_in_paper.empty:
        return scored_by, True, None
    by = judged_in_paper["scored_by"].fillna("")
    judged = by.str.startswith("judge ")
    demo = judged & judged_in_paper["demo_judge"].fillna(False).astype(bool)
    if not judged.any():
        scored_n = int(units["score"].map(lambda s: s is not None and not _isnan(s)).sum())
        return scored_by, False, (f"not comparable to the paper: its LLM-judged items have no judge here "
                                  f"(rule-scored items only: {scored_n:,}/{len(units):,})")
    if demo.any():
        return scored_by, False, "not comparable to the paper: judged by the bundled demo judge"
    if (~judged).any():
        return scored_by, False, (f"not comparable to the paper: {int((~judged).sum()):,} of its "
                                  f"{len(judged_in_paper):,} LLM-judged items have no judge verdict")
    return scored_by, True, None


def _none(x: float) -> float | None:
    # 9 decimals: sums of floats (100.00000000000004 from sacrebleu) print as the number they are
    return None if x is None or math.isnan(x) else round(float(x), 9)


RUN_KEYS = ["model", "variant", "setting", "split"]


def unit_weights(units: pd.DataFrame, cluster: str | None = None) -> dict[str, np.ndarray]:
    """Each unit id's bootstrap weights (groups' ids `group:<g>` included): its own, or with
    `cluster` its cluster's, so that a cluster's units are resampled together."""
    units = units.drop_duplicates("unit_id")
    column = CLUSTER_COLUMNS.get(cluster) if cluster else None
    key = {uid: uid for uid in units["unit_id"]}
    if column:
        key |= {uid: f"cluster:{c}" for uid, c in zip(units["unit_id"], units[column]) if c is not None}
    for gid, first in units.dropna(subset=["group"]).groupby("group", sort=True)["unit_id"].first().items():
        key[f"group:{gid}"] = key[first] if key[first] != first else f"group:{gid}"
    draws = sorted(set(key.values()))
    drawn = dict(zip(draws, poisson_weights(draws)))
    return {uid: drawn[k] for uid, k in key.items()}


def clusters_note(units: pd.DataFrame, cluster: str | None) -> str | None:
    """What a row's interval says about its clusters, when some cluster holds several units."""
    column = CLUSTER_COLUMNS.get(cluster) if cluster else None
    if not column or column not in units:
        return None
    ids = units[column].dropna()
    if ids.empty or ids.value_counts().max() < 2:
        return None
    n = ids.nunique() + int(units[column].isna().sum())
    return f"interval clustered by {cluster}: {n:,} clusters of {len(units):,} items resampled whole"


def paper_tables(tables: CardTables, benchmark: str, units: pd.DataFrame, replicates: bool = False) -> pd.DataFrame:
    """All tables of one benchmark for every model x variant x setting x split in `units` (which
    has those columns besides the unit columns, and `capped`: the model's max_tokens cut the
    benchmark's generation budget for that item). `replicates`: a `replicates` column too."""
    units = units.copy()
    for column in ("split", "group", "part", "scored_by", *CLUSTER_COLUMNS.values()):
        if column not in units:
            units[column] = None
    for column in ("capped", "paper_judge", "demo_judge"):
        if column not in units:
            units[column] = False
    weights = unit_weights(units, tables.cluster)
    rows = []
    for keys, part in units.groupby(RUN_KEYS, sort=True, dropna=False):
        run = dict(zip(RUN_KEYS, keys)) | {"capped": bool(part["capped"].fillna(False).any())}
        rows += [run | row for row in table_rows(tables, part, benchmark, weights, replicates)]
    return pd.DataFrame(rows, columns=PAPER_TABLE_COLUMNS + (["replicates"] if replicates else []))


PAPER_TABLE_COLUMNS = [*RUN_KEYS, "capped", "benchmark", "table_name", "title", "row_order", "row_label", "metric",
                       "score", "ci_low", "ci_high", "n_items", "n_scored", "coverage", "headline", "note",
                       "scored_by", "comparable"]
