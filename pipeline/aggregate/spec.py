"""A card's `tables.yaml`: the tables its paper publishes, how their rows are computed, and the
card's chance rules, notes and quarantine layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml


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
    _check_metrics(path, tables, data)
    return CardTables(tuple(tables), dict(data.get("task_metrics") or {}),
                      {k: list(v) for k, v in (data.get("extra_metrics") or {}).items()},
                      {k: list(v) for k, v in (data.get("row_order") or {}).items()}, cluster, chance,
                      {str(k): str(v) for k, v in (data.get("notes") or {}).items()}, quarantine)


def _check_metrics(path, tables: list[TableSpec], data: dict) -> None:
    """Every metric a card names is one the metrics registry has (or `detail:<key>`): a typo is
    one line when the card loads, not a KeyError when a warehouse is published."""
    from pipeline.aggregate.metrics import METRICS

    named = [(f"table {t.name}: metric", t.metric) for t in tables if t.metric]
    named += [(f"task_metrics: {task}", m) for task, m in (data.get("task_metrics") or {}).items()]
    named += [(f"extra_metrics: {task}", m) for task, ms in (data.get("extra_metrics") or {}).items() for m in ms]
    for where, name in named:
        if not (isinstance(name, str) and (name in METRICS or name.startswith("detail:"))):
            raise ValueError(f"{path}: {where}: {name!r} is not a metric; expected one of {', '.join(METRICS)} "
                             "or detail:<key>")


def declared_tasks(tables: CardTables) -> set[str]:
    """The tasks a card's tables name (row order, `where`, cells)."""
    tasks = set(tables.row_order.get("task", []))
    for spec in tables.tables:
        tasks |= set(spec.where.get("task", []))
        for cell in spec.cells.values():
            tasks |= set((cell.get("where") or {}).get("task", []))
    return {str(t) for t in tasks}
