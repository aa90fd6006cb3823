"""Publishing: a copy of the warehouse (or a new file) in which the changed lake files are
reloaded, the history recorded, sql/ run and the paper tables recomputed, then swapped in."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline import aggregate, history, lake_health, schema
from pipeline.benchmarks import cards
from pipeline.warehouse import files, load, sqltext
from pipeline.warehouse.contamination import CORPUS_TABLE, build_clean_paper_tables, corpora_of
from pipeline.warehouse.paper_tables import Scope, build_paper_tables
from pipeline.warehouse.sqltext import Key, where

# the tables the derived ones (model_task_scores, paper_tables) are computed from
DERIVED_FROM = ("items", "prompts", "responses", "scores")
# ... and what paper_tables' official rows not asked are read from, besides those
PAPER_DERIVED_FROM = (*DERIVED_FROM, "quarantine", "dedup_clusters")

# Bump when the warehouse's own tables change shape; code changes are caught by the layout hash.
LAYOUT_VERSION = "7"
_LAYOUT_SOURCES = [*sorted(Path(__file__).parent.glob("*.py")), *sorted(Path(aggregate.__file__).parent.glob("*.py")),
                   Path(history.__file__)]


def build(db_path: Path, lake_dir: Path, sql_dir: Path, history_dir: Path | None = None,
          full: bool = False) -> dict[str, int]:
    """Publish the lake (and the history under `history_dir`, default `<lake>/../history`) to
    `db_path`, incrementally when the warehouse there was built by this code (`full` forces a
    whole build). Returns row counts per table."""
    return publish(db_path, lake_dir, sql_dir, history_dir, full).counts


@dataclass
class PublishResult:
    counts: dict[str, int]
    mode: str                               # full | incremental
    reloaded: dict[str, list[Key]]          # table -> keys whose rows were replaced
    recorded: list[str]                     # history files written
    set_aside: list[str]                    # one line per damaged history file moved aside
    seconds: dict[str, float]               # per phase: copy, load, history, sql, paper_tables,
                                            # paper_tables_clean, swap


def publish(db_path: Path, lake_dir: Path, sql_dir: Path, history_dir: Path | None = None,
            full: bool = False) -> PublishResult:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    history_dir = history_dir or history.default_dir(lake_dir)
    layout = layout_hash(sql_dir)
    tmp = files.building(db_path)
    clock = _Clock()
    con, incremental = _open_build(db_path, tmp, layout, full)
    limit_mb = memory_limit_mb(sum(f.stat().st_size for folder in (lake_dir, history_dir) if folder.is_dir()
                                   for f in folder.rglob("*.parquet")))
    if limit_mb is not None:
        con.execute(f"SET memory_limit = '{limit_mb}MB'")
    clock.lap("copy")
    if incremental:
        # One checkpoint, at the end (not one more whenever the log passes 16 MB). It writes the
        # reloaded partitions' rows, where DuckDB's dict_fsst analysis is two thirds of its cost
        # (0.08 of 0.12 s for WenMind's) for some 15% less file; a whole build still uses it.
        con.execute("SET checkpoint_threshold = '100GB'")
        con.execute("SET disabled_compression_methods = 'dict_fsst'")
    mode = "incremental" if incremental else "full"
    try:
        now = dt.datetime.now(dt.UTC)
        reloaded, recorded, set_aside = _load(con, lake_dir, history_dir, incremental, now, clock)
        _derive(con, sql_dir, reloaded, incremental, clock)
        con.execute("DELETE FROM _build")
        con.execute("INSERT INTO _build VALUES (?, ?, ?)", [layout, now, mode])
        # tables only: counting a view runs it (score_changes joins the whole history)
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                  for (name,) in con.execute("SELECT table_name FROM information_schema.tables "
                                             "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()}
        con.execute("CHECKPOINT")   # everything in the file itself, no write-ahead log beside it
        con.close()
        files.swap_in(tmp, db_path)
        clock.lap("swap")
    except BaseException:
        con.close()
        files.discard(tmp)
        raise
    return PublishResult(counts, mode, {t: k for t, k in reloaded.items() if k}, recorded, set_aside, clock.seconds)


def _load(con: duckdb.DuckDBPyConnection, lake_dir: Path, history_dir: Path, incremental: bool,
          now: dt.datetime, clock: _Clock) -> tuple[dict[str, list[Key]], list[str], list[str]]:
    """The lake's changed files, then the history as it is on disk and what this publish adds to
    it: (table -> the keys reloaded, the history files written, the damaged ones set aside)."""
    if not incremental:
        load.create_bookkeeping(con)
    published = load.published(con)
    reloaded = load.load_lake(con, lake_dir, published, create=not incremental)
    clock.lap("load")
    set_aside = load.load_history(con, history_dir, published, reloaded, create=not incremental)
    recorded = history.record(con, history_dir, _derived_scope(reloaded), bool(reloaded["corrections_audit"]), now)
    if recorded:
        load.load_history(con, history_dir, load.published(con), reloaded, create=False)
    clock.lap("history")
    return reloaded, recorded, set_aside


def _derive(con: duckdb.DuckDBPyConnection, sql_dir: Path, reloaded: dict[str, list[Key]], incremental: bool,
            clock: _Clock) -> None:
    """sql/ and the cards' SQL, then the paper tables: in an incremental build for the runs (and
    corpora) whose rows changed only."""
    derived = _derived_scope(reloaded) if incremental else None
    paper_scope = _derived_scope(reloaded, PAPER_DERIVED_FROM) if incremental else None
    for sql_file in sql_files(sql_dir):
        _run_sql(con, sql_file.read_text(encoding="utf-8"), derived)
    clock.lap("sql")
    redone = build_paper_tables(con, paper_scope)
    clock.lap("paper_tables")
    build_clean_paper_tables(con, redone if paper_scope is not None else None,
                             corpora_of(reloaded.get(CORPUS_TABLE, [])) if incremental else None)
    clock.lap("paper_tables_clean")


class _Clock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(now - self._last, 3)
        self._last = now


def layout_hash(sql_dir: Path) -> str:
    """What the warehouse's shape depends on besides the lake: this code, the tables' declared
    schemas (not the rest of pipeline/schema.py, whose edits change no table) and the SQL and
    tables it runs. A warehouse built with another hash is rebuilt whole."""
    digest = hashlib.sha256(LAYOUT_VERSION.encode())
    declared = {**{t: s for t, (_, s) in load.BASE_TABLES.items()}, **schema.HISTORY_TABLES, **schema.BOOKKEEPING,
                "paper_tables": schema.PAPER_TABLES, "paper_tables_clean": schema.PAPER_TABLES_CLEAN,
                "quarantine_placed": schema.QUARANTINE_PLACED, "published_scores": schema.PUBLISHED_SCORES}
    for name, table_schema in declared.items():
        digest.update(name.encode())
        digest.update(table_schema.serialize().to_pybytes())
    digest.update(json.dumps(schema.LOAD_DEFAULTS, sort_keys=True).encode())
    for path in [*_LAYOUT_SOURCES, *sql_files(sql_dir), *sqltext.sources(),
                 *(c.folder / name for c in cards().values() for name in ("tables.yaml", "published.yaml"))]:
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:16]


SMALL_LIMIT_MB = 100   # the least DuckDB is given; 32 MB fails (a build's temp tables must fit)


def memory_limit_mb(input_bytes: int) -> int | None:
    """DuckDB's memory_limit for a build from `input_bytes` of lake and history files: four times
    them, at least 100 MB; None (DuckDB's default, 80% of RAM) from 1 GB up. A small warehouse is
    many small tables, and DuckDB keeps their blocks cached up to its limit: some 40 MB of a
    2,000-question run's peak, blocks it writes out or reads back at no cost worth measuring. A
    large build is left as it was."""
    limit = max(SMALL_LIMIT_MB, 4 * input_bytes // 2**20)
    return limit if limit < 1024 else None


def _open_build(db_path: Path, tmp: Path, layout: str, full: bool) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """The database to build in, `tmp`, and whether the build is incremental: then it is a copy
    of the warehouse, which was built with this `layout` (the copy is checked, not the original:
    one open fewer, and the layout read is that of the rows copied); else a new file."""
    if lake_health.warehouse_damage(db_path):
        lake_health.set_aside(db_path)   # built whole below; the damaged file is kept to be examined
    try:
        if not full and db_path.is_file():
            shutil.copyfile(db_path, tmp)
            con = _built_with(tmp, layout)
            if con is not None:
                return con, True
            files.discard(tmp)
        return duckdb.connect(str(tmp)), False
    except BaseException:
        files.discard(tmp)
        raise


def _built_with(path: Path, layout: str) -> duckdb.DuckDBPyConnection | None:
    """The database at `path`, open, if it was built with this `layout`."""
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error:   # not a DuckDB file (or another DuckDB's)
        return None
    try:
        row = con.execute("SELECT layout FROM _build").fetchone()
    except duckdb.Error:   # no _build table: built by an older wenheng
        row = None
    if row is not None and row[0] == layout:
        return con
    con.close()
    return None


# ---- derived tables: what to recompute -----------------------------------------------------------

def _derived_scope(reloaded: dict[str, list[Key]], tables: tuple[str, ...] = DERIVED_FROM) -> Scope | None:
    """The benchmark x model runs whose derived rows (computed from `tables`) must be recomputed;
    None: all of them."""
    scope: Scope = {}
    for table in tables:
        for key in reloaded.get(table, []):
            values = dict(key)
            if "benchmark" not in values:
                return None
            bench = values["benchmark"]
            if "model" not in values:
                scope[bench] = None
            elif scope.get(bench, set()) is not None:
                scope.setdefault(bench, set()).add(values["model"])
    return scope


def scope_keys(scope: Scope) -> list[Key]:
    keys: list[Key] = []
    for bench, models in sorted(scope.items()):
        if models is None:
            keys.append((("benchmark", bench),))
        else:
            keys += [(("benchmark", bench), ("model", m)) for m in sorted(models)]
    return keys


_TABLE_STATEMENT = re.compile(r"^\s*CREATE\s+OR\s+REPLACE\s+TABLE\s+(\w+)\s+AS\s+(.*?);?\s*$",
                              re.IGNORECASE | re.DOTALL)


def _run_sql(con: duckdb.DuckDBPyConnection, text: str, scope: Scope | None) -> None:
    """A sql/ file. A `CREATE OR REPLACE TABLE t AS <query>` is, in an incremental publish,
    recomputed for the changed runs only (its rows deleted, then inserted again from the query
    filtered to them); views are cheap and created again."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    match = _TABLE_STATEMENT.match(body)
    if scope is None or not match:
        con.execute(text)
        return
    if not scope:
        return
    table, query = match.groups()
    columns = {c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                                         [table]).fetchall()}
    keys = [tuple((c, v) for c, v in key if c in columns) for key in scope_keys(scope)]
    condition = where(keys)
    con.execute(f"DELETE FROM {table} WHERE {condition}")
    con.execute(f"INSERT INTO {table} SELECT * FROM ({query}) WHERE {condition}")


def sql_files(sql_dir: Path) -> list[Path]:
    """The cross-benchmark SQL (sql/, in name order), then each card's own SQL, if any."""
    return sorted(sql_dir.glob("*.sql")) + [f for c in cards().values() for f in c.sql_files]
