"""The units of a benchmark's model runs (sql/templates/units.sql): one row per official row of
the evaluated splits x model run, what the paper tables are computed from; and
`quarantine_placed`, the quarantined rows that count among them."""

from __future__ import annotations

import json

import duckdb
import pandas as pd

from pipeline import aggregate, schema
from pipeline.benchmarks import cards
from pipeline.warehouse.sqltext import casts, literal, template

# Every model's runs (parameters $benchmark and $judge_tasks), as `wenheng compare` reads them.
UNITS_SQL = template("units", models="true")
# Models whose units are read (and paper rows computed) at once: memory stays bounded.
PAPER_MODELS_AT_ONCE = 16


def units_sql(models: list[str]) -> str:
    return template("units", models="model IN (" + ", ".join(literal(m) for m in models) + ")")


def chunks(models: list[str]) -> list[list[str]]:
    """`models` a few at a time (PAPER_MODELS_AT_ONCE)."""
    return [models[i:i + PAPER_MODELS_AT_ONCE] for i in range(0, len(models), PAPER_MODELS_AT_ONCE)]


def units(con: duckdb.DuckDBPyConnection, models: list[str], params: dict) -> pd.DataFrame:
    """The units of these models' runs of a benchmark, as aggregate.paper_tables takes them."""
    placed_or_empty(con)
    return _frame(con.execute(units_sql(models), params).df())


def kept_units(con: duckdb.DuckDBPyConnection, models: list[str], params: dict) -> dict[str, str]:
    """The units of these models' runs computed once, into the temporary table `_kept_units`:
    returns a digest of each model's units (every column of every row, in any order), and `kept`
    reads the units of some of them."""
    placed_or_empty(con)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _kept_units AS {units_sql(models)}", params)
    return dict(con.execute("SELECT model, count(*) || ':' || sum(hash(u)) FROM _kept_units u GROUP BY model")
                .fetchall())


def kept(con: duckdb.DuckDBPyConnection, models: list[str]) -> pd.DataFrame:
    """units(con, models, params) of models among those kept_units last kept."""
    return _frame(con.execute("SELECT * FROM _kept_units WHERE list_contains(?, model)", [models]).df())


def drop_kept(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DROP TABLE IF EXISTS _kept_units")


def _frame(frame: pd.DataFrame) -> pd.DataFrame:
    frame["score"] = frame["score"].astype(object).where(frame["score"].notna(), None)
    frame["details"] = [json.loads(d) if isinstance(d, str) else {} for d in frame["details"]]
    return frame


def paper_judge_tasks(con: duckdb.DuckDBPyConnection, bench) -> list[str]:
    """The benchmark's tasks whose paper number is the LLM judge's (its card's `paper_scorer`)."""
    tasks = con.execute("SELECT DISTINCT task FROM items WHERE benchmark = ?", [bench.name]).fetchall()
    return sorted(task for (task,) in tasks if bench.paper_scorer_for(task) == "judge")


def placed_or_empty(con: duckdb.DuckDBPyConnection) -> None:
    """A warehouse published before `quarantine_placed` existed (`wenheng compare` before the next
    publish rebuilds it whole): an empty one, for this connection only."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'quarantine_placed'"
                       ).fetchall()[0][0]:
        con.register("quarantine_placed", pd.DataFrame({c: pd.Series([], dtype="string")
                                                        for c in schema.QUARANTINE_PLACED.names}))


def build_quarantine_placed(con: duckdb.DuckDBPyConnection,
                            tables: dict[str, aggregate.CardTables] | None = None) -> None:
    """`quarantine_placed`, from the whole quarantine table (a few rows: rebuilt at every publish):
    the units SQL counts those of the evaluated splits as official rows not asked."""
    tables = tables if tables is not None else {
        name: bench.tables for name, bench in cards().items()}
    rows: list[dict] = []
    for name, card_tables in tables.items():
        if not card_tables.quarantine:
            continue
        quarantined = con.execute("SELECT benchmark, source_file, source_locator, raw FROM quarantine "
                                  "WHERE benchmark = ?", [name]).df()
        if quarantined.empty:
            continue
        tasks = {t for (t,) in con.execute("SELECT DISTINCT task FROM items WHERE benchmark = ? AND task IS NOT NULL",
                                           [name]).fetchall()} | aggregate.declared_tasks(card_tables)
        records = quarantined.astype(object).where(quarantined.notna(), None).to_dict("records")
        rows += aggregate.place_quarantine(card_tables.quarantine, records, tasks)
    frame = pd.DataFrame(rows, columns=schema.QUARANTINE_PLACED.names).astype(object)
    con.register("quarantine_placed_frame", frame)
    con.execute(f"CREATE OR REPLACE TABLE quarantine_placed AS SELECT {casts(schema.QUARANTINE_PLACED)} "
                "FROM quarantine_placed_frame")
    con.unregister("quarantine_placed_frame")
