"""A card's published.yaml: the model rows its paper publishes, as printed (x100), placed on the
rows of the card's own tables so that they can be shown beside a user's scores as reference rows.

    paper: WenMind paper                 # how the rows are labelled: "published (WenMind paper, Table 3)"
    tables:
      - table: Table 3                   # the paper's table
        setting: question_only           # the setting in wenheng's names (or the paper's words,
        split: test                      #   e.g. fine-tuned, where wenheng has no such setting)
        note: ...                        # optional: how the rows were repaired from the paper text
        kinds: {Average: average}        # optional: rows that are no model (average, human, chance)
        columns:                         # every CSV column but `model` (and `setting`):
          overall: overall/overall       #   <card table>/<row label>, or null: kept, not placed
          T1: by_coarse_task/sentence structure
        rows: |                          # the paper's table as CSV, one model per line
          model,overall,T1,...

A table printed once per setting has a `setting` column and `settings:` (CSV value -> setting)
instead of `setting:`. Empty cells are values the paper does not give. These are the papers'
numbers, not a run of wenheng's: they have no interval and no item count, and a comparison with
them is a point difference only.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from pipeline.errors import ConfigError

# The long form every card's rows are given in (and the warehouse's `published_scores`).
COLUMNS = ["benchmark", "source", "paper_table", "table_name", "row_label", "model", "kind", "setting", "split",
           "score", "note"]
# What a row that is not a model is: the paper's mean over its models, humans, or chance.
KINDS = ("model", "average", "human", "chance")


@dataclass(frozen=True)
class PublishedTable:
    table: str                     # the paper's table, e.g. "Table 3"
    csv: str                       # as printed, one model per line
    columns: dict[str, str | None]  # CSV column -> "<card table>/<row label>" (None: not placed)
    setting: str | None
    settings: dict[str, str]       # CSV `setting` value -> setting, where the table has that column
    split: str
    note: str | None
    kinds: dict[str, str]          # row (model column value) -> what it is, where it is no model


@dataclass(frozen=True)
class Published:
    paper: str
    tables: tuple[PublishedTable, ...]

    def csv(self, table: str) -> str:
        """The CSV of the paper's `table` (the first one so named)."""
        for t in self.tables:
            if t.table == table:
                return t.csv
        raise KeyError(f"{self.paper} has no published {table}")

    def rows(self, benchmark: str) -> pd.DataFrame:
        """Every placed cell, long form (COLUMNS); cells the paper leaves empty are left out."""
        frames = [_long(benchmark, self.paper, t) for t in self.tables]
        frames = [f for f in frames if not f.empty]
        return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)


def _long(benchmark: str, paper: str, t: PublishedTable) -> pd.DataFrame:
    frame = pd.read_csv(io.StringIO(t.csv), dtype={"model": str}, na_values=["-"], keep_default_na=False)
    settings = frame["setting"].map(t.settings) if t.settings else pd.Series(t.setting, index=frame.index)
    placed = [(column, where) for column, where in t.columns.items() if where]
    out = []
    for column, where in placed:
        table_name, row_label = where.split("/", 1)
        out.append(pd.DataFrame({
            "benchmark": benchmark, "source": f"{paper}, {t.table}", "paper_table": t.table,
            "table_name": table_name, "row_label": row_label, "model": frame["model"],
            "kind": frame["model"].map(lambda m: t.kinds.get(m, "model")), "setting": settings,
            "split": t.split, "score": pd.to_numeric(frame[column], errors="coerce"), "note": t.note}))
    long = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=COLUMNS)
    return long[long["score"].notna()]


def read_published(path: Path, tables: dict[str, set[str] | None] | None = None) -> Published | None:
    """`path` (a card's published.yaml) read and checked, or None where the card has none.
    `tables`: the card's table -> its row labels (None: a single-row table, whose label is its
    name), to check that every placed column lands on a row that exists. A problem raises a
    ConfigError naming the file, the paper's table and the column."""
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        raise ConfigError(f"{path}: not YAML"
                          + (f" (line {where.line + 1})" if where is not None else "")) from None
    if not isinstance(data, dict) or not isinstance(data.get("paper"), str) or not isinstance(data.get("tables"), list):
        raise ConfigError(f"{path}: expected a mapping with `paper` (a name) and `tables` (a list)")
    return Published(data["paper"], tuple(_table(path, entry, tables) for entry in data["tables"]))


def _table(path: Path, entry: dict, tables: dict[str, set[str] | None] | None) -> PublishedTable:
    where = f"{path}: {entry.get('table', '?')}"
    unknown = sorted(set(entry) - {"table", "setting", "settings", "split", "note", "columns", "rows", "kinds"})
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}")
    if not entry.get("table") or not entry.get("split") or not isinstance(entry.get("rows"), str):
        raise ConfigError(f"{where}: `table`, `split` and `rows` (CSV text) are required")
    if bool(entry.get("setting")) == bool(entry.get("settings")):
        raise ConfigError(f"{where}: give `setting`, or `settings` for a CSV with a `setting` column, not both")
    header = entry["rows"].splitlines()[0].split(",")
    columns = dict(entry.get("columns") or {})
    data_columns = [c for c in header if c not in ("model", "setting")]
    if "model" not in header or sorted(columns) != sorted(data_columns):
        raise ConfigError(f"{where}: `columns` must name every CSV column but model (and setting): "
                          f"missing {sorted(set(data_columns) - set(columns))}, "
                          f"extra {sorted(set(columns) - set(data_columns))}")
    for column, place in columns.items():
        if place is not None and tables is not None and not _lands(place, tables):
            raise ConfigError(f"{where}: column {column}: {place!r} is no row of the card's tables "
                              f"(<table>/<row label>)")
    settings = {str(k): str(v) for k, v in (entry.get("settings") or {}).items()}
    kinds = {str(k): str(v) for k, v in (entry.get("kinds") or {}).items()}
    bad = sorted(v for v in kinds.values() if v not in KINDS)
    if bad:
        raise ConfigError(f"{where}: kinds: {bad[0]!r} is not one of {', '.join(KINDS)}")
    return PublishedTable(str(entry["table"]), entry["rows"], columns, entry.get("setting"), settings,
                          str(entry["split"]), entry.get("note"), kinds)


def row_labels(card_tables) -> dict[str, set[str] | None]:
    """A card's table -> the labels its rows can have (`pipeline.aggregate.CardTables`): its
    cells, the paper's order of its rows' column (None where the card gives none: unchecked), or
    the table's own name for a single-row table."""
    labels: dict[str, set[str] | None] = {}
    for spec in card_tables.tables:
        if spec.cells:
            labels[spec.name] = set(spec.cells)
        elif spec.rows:
            order = card_tables.row_order.get(spec.rows)
            labels[spec.name] = set(order) if order else None
        else:
            labels[spec.name] = {spec.name}
    return labels


def _lands(place: str, tables: dict[str, set[str] | None]) -> bool:
    table, _, label = place.partition("/")
    if table not in tables:
        return False
    return tables[table] is None or label in tables[table]
