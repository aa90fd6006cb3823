"""`paper_tables`: every row of every card's tables, long form (aggregate.paper_tables on each
run's units), the views over it (sql/derived/paper_tables.sql) and one view per card table."""

from __future__ import annotations

import warnings

import duckdb
import pandas as pd
import pyarrow as pa

from pipeline import aggregate, schema
from pipeline.benchmarks import cards
from pipeline.warehouse.sqltext import Key, casts, identifier, literal, run_derived, template, where
from pipeline.warehouse.units import build_quarantine_placed, chunks, drop_kept, kept, kept_units, paper_judge_tasks

Scope = dict[str, set[str] | None]   # benchmark -> its models to recompute (None: all of them)

PAPER_TABLE_TYPES = casts(schema.PAPER_TABLES)


def card_tables() -> dict[str, aggregate.CardTables]:
    return {name: bench.tables for name, bench in cards().items()}


def build_paper_tables(con: duckdb.DuckDBPyConnection, scope: Scope | None = None) -> list[Key]:
    """`paper_tables` (every row of every card's tables, long form), one view per card table
    (`<benchmark>_<table>`), and `leaderboard`: the rows each card marks as its headline. With a
    scope, only those runs' rows are recomputed: a row depends on its run's units alone (the
    bootstrap weights are seeded per unit id), so this gives the rows a whole build gives; and of
    those, only the runs whose units differ from the ones their rows were computed from (a digest
    of them is kept in `_paper_inputs`): a correction that moves no score recomputes nothing.
    Returns the (benchmark, model) runs whose rows were recomputed."""
    tables = card_tables()
    build_quarantine_placed(con, tables)
    frames, redone, digests = [], [], []
    for name, bench in cards().items():
        if scope is None or name in scope:
            rows = _benchmark_rows(con, name, bench, tables[name], None if scope is None else scope[name],
                                   whole=scope is None)
            frames += rows[0]
            redone += rows[1]
            digests += rows[2]
    _store(con, frame_of(frames, schema.PAPER_TABLES), scope is None, redone, digests)
    if scope is None:   # else the views are already in the warehouse (and the published rows: code)
        _store_published(con)
        _create_views(con, tables)
    return redone


def _benchmark_rows(con: duckdb.DuckDBPyConnection, name: str, bench, tables: aggregate.CardTables,
                    models: set[str] | None, whole: bool) -> tuple[list[pd.DataFrame], list[Key], list[tuple]]:
    """One benchmark's paper rows of `models` (None: all its models), each run's only if its units
    changed unless the build is `whole`: (frames, the runs recomputed, their units' digests)."""
    params = {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}
    before = {} if whole else dict(con.execute("SELECT model, digest FROM _paper_inputs WHERE benchmark = ?",
                                               [name]).fetchall())
    if models is None:   # and a model whose responses are gone: its rows go too
        models = {m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE benchmark = ?",
                                            [name]).fetchall()} | set(before)
    frames, redone, digests = [], [], []
    # a few models at a time: one model's units are all its rows need, and memory stays bounded
    # (the units computed once: their digests, then those of the runs to recompute read back)
    try:
        for chunk in chunks(sorted(models)):
            now = kept_units(con, chunk, params)
            chunk = [m for m in chunk if whole or now.get(m) != before.get(m)]
            redone += [(("benchmark", name), ("model", m)) for m in chunk]
            digests += [(name, m, now[m]) for m in chunk if m in now]
            found = kept(con, chunk) if chunk else None
            if found is not None and not found.empty:
                frames.append(aggregate.paper_tables(tables, name, found))
    finally:
        drop_kept(con)
    return frames, redone, digests


def frame_of(frames: list[pd.DataFrame], table_schema: pa.Schema) -> pd.DataFrame:
    """The frames as one, with the table's columns (an empty one without frames)."""
    with warnings.catch_warnings():
        # all-null columns in some frames (a table with no notes): the types come from the casts
        warnings.simplefilter("ignore", FutureWarning)
        if not frames:
            return pd.DataFrame(columns=table_schema.names)
        return pd.concat(frames, ignore_index=True)[table_schema.names]


def _store(con: duckdb.DuckDBPyConnection, table: pd.DataFrame, whole: bool, redone: list[Key],
           digests: list[tuple]) -> None:
    """The rows into `paper_tables` (a new table when `whole`, else in place of the redone runs'),
    and the digests of their units into `_paper_inputs`."""
    con.register("paper_tables_frame", table)
    try:
        if whole:
            con.execute(f"CREATE OR REPLACE TABLE paper_tables AS SELECT {PAPER_TABLE_TYPES} FROM paper_tables_frame")
        elif redone:
            con.execute(f"DELETE FROM paper_tables WHERE {where(redone)}")
            con.execute(f"DELETE FROM _paper_inputs WHERE {where(redone)}")
            if len(table):
                con.execute(f"INSERT INTO paper_tables SELECT {PAPER_TABLE_TYPES} FROM paper_tables_frame")
    finally:
        con.unregister("paper_tables_frame")
    if digests:
        con.executemany("INSERT INTO _paper_inputs VALUES (?, ?, ?)", digests)


def _store_published(con: duckdb.DuckDBPyConnection) -> None:
    """`published_scores`: every card's published.yaml rows (they change with the code only, so a
    whole build is when they are written)."""
    frames = [bench.published.rows(name) for name, bench in cards().items() if bench.published is not None]
    con.register("published_frame", frame_of([f for f in frames if not f.empty], schema.PUBLISHED_SCORES))
    try:
        con.execute(f"CREATE OR REPLACE TABLE published_scores AS SELECT {casts(schema.PUBLISHED_SCORES)} "
                    "FROM published_frame")
    finally:
        con.unregister("published_frame")


def published_scores(con: duckdb.DuckDBPyConnection) -> pd.DataFrame | None:
    """The papers' own model rows, or None in a warehouse built before they were kept."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'published_scores'"
                       ).fetchone()[0]:
        return None
    return con.execute("SELECT * FROM published_scores").df()


def _create_views(con: duckdb.DuckDBPyConnection, tables: dict[str, aggregate.CardTables]) -> None:
    run_derived(con, "paper_tables")
    for name, card in tables.items():
        for spec in card.tables:
            con.execute(template("card_table_view", view=identifier(f"{name}_{spec.name}"),
                                 benchmark=literal(name), table_name=literal(spec.name)))
