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

What a row covers: `n_items` counts every official row of the evaluated split for the row's
task(s), not only the items asked. The units are the items asked, plus the items the data-quality or
duplicate policy left out and the rows quarantined at ingestion (`not_asked` says why: unscored units,
so coverage < 1, and the row's note counts them). A card's `quarantine:` declares where its files put
a row (`place_quarantine`), so that a quarantined row counts in its split's and task's rows; its
`notes:` add what the card itself changed about a task (merged references, simplified labels).

Chance: a card's `chance:` names, per task or item format, how an item's chance level is computed
from its options (1/k of k options; k^-n for n questions asked at once, all to be right) or its
label set; `chance` in a row is the mean over its items asked (x100), nested like the score, and
null when any of them has none (generation, labeling).

`combine` is the same nesting rule applied to numbers already aggregated (a paper's per-task
table), which is how the reproduction tests check the rules against published aggregates.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import yaml
from sacrebleu.metrics import BLEU, CHRF

from pipeline import schema

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
    # task or item format (or `default`) -> how an item's chance level is computed (CHANCE_RULES)
    chance: dict[str, str] = field(default_factory=dict)
    # task -> a note every row covering the task carries (`{merged_rows}`: how many raw rows the
    # row's items merged; the note is left out when none)
    notes: dict[str, str] = field(default_factory=dict)
    # where a row quarantined at ingestion belongs (QUARANTINE_KEYS; see place_quarantine)
    quarantine: dict[str, Any] = field(default_factory=dict)


CLUSTER_COLUMNS = {"context": "context_id"}   # tables.yaml `cluster:` -> the units column it reads

# tables.yaml `chance:` values. options: 1/k for an item of k options (its `choices`, or
# `options_per_question` where one prompt asks several questions: the product, all must be
# right); labels: 1/k for an item answered with one of its task's k label texts; none: no
# chance level (generation, labeling, multiple answers with partial credit).
CHANCE_RULES = ("options", "labels", "none")
# tables.yaml `quarantine:` keys. file: a pattern of the source file's path ({split}, {task}, `*`
# for any characters but `/`); split: the split, when the path does not say; task, group, part: the
# field of the raw row (a JSON object) that holds it; merge: task -> a raw field whose rows with one
# value are one item (as the adapter merges them: CP-DUE's AU questions about one line).
QUARANTINE_KEYS = ("file", "split", "task", "group", "part", "merge")
# `not_asked` of a unit quarantined at ingestion; an item left out by a policy says which
QUARANTINED = "quarantined"


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
    chance = {str(k): str(v) for k, v in (data.get("chance") or {}).items()}
    bad = sorted(v for v in chance.values() if v not in CHANCE_RULES)
    if bad:
        raise ValueError(f"{path}: chance: {bad[0]!r} is not one of {list(CHANCE_RULES)}")
    quarantine = dict(data.get("quarantine") or {})
    unknown = sorted(set(quarantine) - set(QUARANTINE_KEYS))
    if unknown:
        raise ValueError(f"{path}: quarantine: unknown keys {unknown}; expected some of {list(QUARANTINE_KEYS)}")
    return CardTables(tuple(tables), dict(data.get("task_metrics") or {}),
                      {k: list(v) for k, v in (data.get("extra_metrics") or {}).items()},
                      {k: list(v) for k, v in (data.get("row_order") or {}).items()}, cluster, chance,
                      {str(k): str(v) for k, v in (data.get("notes") or {}).items()}, quarantine)


def declared_tasks(tables: CardTables) -> set[str]:
    """The tasks a card's tables name (row order, `where`, cells)."""
    tasks = set(tables.row_order.get("task", []))
    for spec in tables.tables:
        tasks |= set(spec.where.get("task", []))
        for cell in spec.cells.values():
            tasks |= set((cell.get("where") or {}).get("task", []))
    return {str(t) for t in tasks}


# ---- official rows not asked: where a quarantined row belongs ----------------------------------

def _file_pattern(pattern: str | None) -> re.Pattern | None:
    if not pattern:
        return None
    parts = re.split(r"(\{split\}|\{task\}|\*)", pattern)
    regex = "".join({"{split}": "(?P<split>[^/]+?)", "{task}": "(?P<task>[^/]+?)", "*": "[^/]*"}.get(p, re.escape(p))
                    for p in parts)
    return re.compile(f"(?:^|/){regex}$")


def _raw_field(raw: Any, name: str | None) -> str | None:
    if not name or not isinstance(raw, dict):
        return None
    value = raw.get(name)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) else None


def place_quarantine(layout: Mapping[str, Any], rows: Iterable[Mapping[str, Any]],
                     tasks: Collection[str]) -> list[dict[str, Any]]:
    """Each quarantined row (benchmark, source_file, source_locator, raw) with the split and task
    (and question group and part) a card's `quarantine:` layout places it in, and its unit id: one
    per row, or per merged group (`merge`). A task that is not one of `tasks` (the benchmark's
    own) is None, as is what the layout cannot tell; a row without a split counts nowhere.
    Ids repeated (a row quarantined twice) are kept once."""
    pattern = _file_pattern(layout.get("file"))
    merge = dict(layout.get("merge") or {})
    reads_raw = any(layout.get(k) for k in ("task", "group", "part")) or bool(merge)
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        source, locator = row.get("source_file") or "", row.get("source_locator") or ""
        match = pattern.search(source) if pattern else None
        found = match.groupdict() if match else {}
        raw = None
        if reads_raw and isinstance(row.get("raw"), str) and row["raw"].lstrip().startswith("{"):
            try:
                raw = json.loads(row["raw"])
            except ValueError:
                raw = None
        split = found.get("split") or layout.get("split")
        task = found.get("task") or _raw_field(raw, layout.get("task"))
        task = task if task in tasks else None
        unit = f"quarantine:{source}:{locator}"
        key = _raw_field(raw, merge.get(task)) if task else None
        if key is not None:
            unit = f"quarantine:{split}/{task}/{key}"
        out.setdefault(unit, {"benchmark": row.get("benchmark"), "unit_id": unit, "source_file": source,
                              "source_locator": locator, "split": None if split is None else str(split),
                              "task": task, "group": _raw_field(raw, layout.get("group")),
                              "part": _raw_field(raw, layout.get("part"))})
    return list(out.values())


def left_out_notes(units: pd.DataFrame) -> list[str]:
    """What a row's official rows not asked were: items a policy left out (by reason) and rows
    quarantined at ingestion."""
    if "not_asked" not in units:
        return []
    reasons = [r for r in units["not_asked"] if isinstance(r, str)]
    policy = Counter(r for r in reasons if r != QUARANTINED)
    quarantined = len(reasons) - sum(policy.values())
    notes = []
    if policy:
        n = sum(policy.values())
        why = next(iter(policy)) if len(policy) == 1 else ", ".join(f"{c:,} {r}" for r, c in sorted(policy.items()))
        notes.append(f"{n:,} official row{'' if n == 1 else 's'} not asked: {why}")
    if quarantined:
        notes.append(f"{quarantined:,} row{'' if quarantined == 1 else 's'} quarantined at ingestion")
    return notes


def card_notes(tables: CardTables, units: pd.DataFrame) -> list[str]:
    """The card's notes on the tasks a row covers, in the card's task order."""
    if not tables.notes:
        return []
    present = set(units["task"].dropna())
    order = tables.row_order.get("task", [])
    notes = []
    for task in [t for t in order if t in present] + sorted(t for t in present if t not in order):
        text = tables.notes.get(task)
        if not text:
            continue
        if "{merged_rows}" in text:
            merged = units.loc[units["task"] == task, "merged_rows"] if "merged_rows" in units else pd.Series([])
            total = int(pd.to_numeric(merged, errors="coerce").fillna(0).sum())
            if not total:
                continue
            text = text.replace("{merged_rows}", f"{total:,}")
        notes.append(text)
    return notes


# ---- chance levels ---------------------------------------------------------------------------

def _number(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


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


def _groupable(units: pd.DataFrame, column: str) -> pd.DataFrame:
    """The units a mean over `column`'s groups is taken over: a row not asked that the layout could
    not place (no value) counts in n_items, never as a group of its own."""
    if "not_asked" not in units:
        return units
    return units[units[column].notna() | units["not_asked"].isna()]


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
    grouped = _groupable(units, mean_of[0])
    groups = dict(list(grouped.groupby(mean_of[0], sort=True, dropna=False)))
    for value in expected.get(mean_of[0], []):
        groups.setdefault(value, units.iloc[0:0])
    children = [compute_cell(part, mean_of[1:], leaf_metric, weights, expected) for part in groups.values()]
    n_items = sum(c.n_items for c in children) + len(units) - len(grouped)
    n_scored = sum(c.n_scored for c in children)
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
    def leaf_metric_for(spec_metric: str | None) -> Callable[[pd.DataFrame], str]:
        def choose(part: pd.DataFrame) -> str:
            if spec_metric:
                return spec_metric
            tasks = part["task"].dropna().unique()
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
            task = part["task"].dropna().unique()[0] if part["task"].nunique() == 1 else None
            if metric_names == [None]:
                metric_names = [tables.task_metrics.get(task, "accuracy") if task else None]
            metric_names += tables.extra_metrics.get(task, []) if task and not spec.mean_of else []
            # who scored and how the interval resamples: the items asked
            asked = part[part["not_asked"].isna()]
            scored_by, comparable, why = provenance(asked)
            clustered = clusters_note(asked, tables.cluster)
            covered_notes = left_out_notes(part) + card_notes(tables, part)
            mean_of = tuple(cell.get("mean_of", spec.mean_of))
            for metric_name in metric_names:
                result = compute_cell(part, mean_of, leaf_metric_for(metric_name), weights, spec.where)
                chance = chance_of(part, mean_of, "chance_each" if (metric_name or "").startswith("detail:")
                                   else "chance", spec.where)
                notes = [f"no scored items in: {', '.join(result.unscored)}" if result.unscored else None,
                         *covered_notes, why, clustered]
                shown = metric_name or "mean"
                low, high = (np.nanpercentile(result.replicates, [2.5, 97.5])
                             if np.isfinite(result.replicates).any() else (math.nan, math.nan))
                out.append({
                    "benchmark": benchmark, "table_name": spec.name, "title": spec.title,
                    "row_order": order_index, "row_label": label, "metric": shown,
                    "score": _none(result.value), "ci_low": _none(low), "ci_high": _none(high),
                    "chance": _none(chance), "n_items": result.n_items, "n_scored": result.n_scored,
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
    scored = units[pd.Series([s is not None and not _isnan(s) for s in units["score"]], index=units.index,
                             dtype=bool)]
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
