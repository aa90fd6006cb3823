"""`paper_tables_clean`: the paper tables again on the items a user's corpus does not contaminate,
and the view `contamination_effect` (sql/derived/paper_tables_clean.sql) over both."""

from __future__ import annotations

from collections.abc import Iterable

import duckdb
import pandas as pd

from pipeline import aggregate, schema
from pipeline.benchmarks import cards
from pipeline.warehouse.paper_tables import frame_of
from pipeline.warehouse.sqltext import Key, casts, literal, run_derived, where
from pipeline.warehouse.units import chunks, paper_judge_tasks, units

# paper_tables_clean is computed from the derived runs and this table too
CORPUS_TABLE = "corpus_overlap"
CLEAN_COLUMNS = schema.PAPER_TABLES_CLEAN.names
CLEAN_TABLE_TYPES = casts(schema.PAPER_TABLES_CLEAN)

Todo = dict[str, dict[str, set[str] | None]]   # benchmark -> corpus -> the models to compute (None: all)


def corpora_of(keys: Iterable[Key]) -> set[str] | None:
    """The corpora whose corpus_overlap rows were reloaded; None: the whole table was."""
    out: set[str] = set()
    for key in keys:
        values = dict(key)
        if "corpus" not in values:
            return None
        out.add(values["corpus"])
    return out


def build_clean_paper_tables(con: duckdb.DuckDBPyConnection, runs: Iterable[Key] | None = None,
                             corpora: set[str] | None = None) -> None:
    """`paper_tables_clean`: every card's paper tables again, per scanned corpus, on the units
    whose item that corpus does not contaminate (an item too short to check stays in: no evidence
    of contamination; so does an item the corpus was not scanned against, for a benchmark it was).
    The same aggregate.paper_tables on the same unit ids, so the bootstrap weights, and the
    intervals, are paired with `paper_tables`' rows. A benchmark the corpus was not scanned against
    has no rows. Then the view `contamination_effect`: each paper-table row, all items vs clean.

    `runs`: the (benchmark, model) runs whose units changed, `corpora` the corpora whose overlap
    rows did: only their rows are recomputed (None: everything is). Where a corpus contaminates no
    item of a benchmark, its rows are `paper_tables`' own, copied."""
    full = runs is None or corpora is None
    runs = [] if runs is None else list(runs)
    if full:
        _write(con, frame_of([], schema.PAPER_TABLES_CLEAN), create=True)
    elif not runs and not corpora:
        return
    else:
        terms = ([f"corpus IN ({', '.join(map(literal, sorted(corpora)))})"] if corpora else []) + (
            [f"({where(runs)})"] if runs else [])
        con.execute(f"DELETE FROM paper_tables_clean WHERE {' OR '.join(terms)}")
    all_cards = cards()
    for name, per_corpus in _todo(con, full, runs, corpora).items():
        if name in all_cards:
            _benchmark_rows(con, name, all_cards[name], per_corpus)
    if full:
        run_derived(con, "paper_tables_clean")


def _todo(con: duckdb.DuckDBPyConnection, full: bool, runs: list[Key], corpora: set[str] | None) -> Todo:
    """Per benchmark and corpus scanned against it, the models whose rows to compute: all of them
    for a corpus whose rows changed (or in a full build), else those of the changed runs."""
    changed: dict[str, set[str]] = {}
    for key in runs:
        values = dict(key)
        changed.setdefault(values["benchmark"], set()).add(values.get("model", ""))
    todo: Todo = {}
    for corpus, bench in con.execute(f"SELECT DISTINCT corpus, benchmark FROM {CORPUS_TABLE} ORDER BY 1, 2").fetchall():
        if full or corpus in (corpora or set()):
            todo.setdefault(bench, {})[corpus] = None
        elif bench in changed:
            todo.setdefault(bench, {})[corpus] = changed[bench]
    return todo


def _benchmark_rows(con: duckdb.DuckDBPyConnection, name: str, bench, per_corpus: dict[str, set[str] | None]) -> None:
    """One benchmark's clean rows, per corpus: `paper_tables`' own where the corpus contaminates
    none of its items, else computed on the clean units."""
    present = {m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE benchmark = ?",
                                         [name]).fetchall()}
    wanted = {c: present if models is None else models & present for c, models in per_corpus.items()}
    contaminated = {c: {i for (i,) in con.execute(
        f"SELECT item_id FROM {CORPUS_TABLE} WHERE corpus = ? AND benchmark = ? AND contaminated",
        [c, name]).fetchall()} for c in wanted}
    for corpus, models in wanted.items():
        if models and not contaminated[corpus]:   # nothing to leave out: the full tables' rows
            con.execute("INSERT INTO paper_tables_clean BY NAME SELECT ? AS corpus, * FROM paper_tables "
                        "WHERE benchmark = ? AND list_contains(?, model)", [corpus, name, sorted(models)])
    computed = {c: m for c, m in wanted.items() if m and contaminated[c]}
    if not computed:
        return
    tables = bench.tables
    params = {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}
    for chunk in chunks(sorted(set().union(*computed.values()))):
        found = units(con, chunk, params)
        frames = []
        for corpus, models in computed.items():
            clean = found[found["model"].isin(models) & ~found["unit_id"].isin(contaminated[corpus])]
            if len(clean):
                frames.append(aggregate.paper_tables(tables, name, clean).assign(corpus=corpus))
        if frames:
            _write(con, frame_of(frames, schema.PAPER_TABLES_CLEAN), create=False)


def _write(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, create: bool) -> None:
    """Rows into paper_tables_clean, typed as declared (`create`: a new table of them)."""
    con.register("paper_tables_clean_frame", frame)
    try:
        into = "CREATE OR REPLACE TABLE paper_tables_clean AS" if create else "INSERT INTO paper_tables_clean"
        con.execute(f"{into} SELECT {CLEAN_TABLE_TYPES} FROM paper_tables_clean_frame")
    finally:
        con.unregister("paper_tables_clean_frame")
