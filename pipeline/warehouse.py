"""Building the DuckDB warehouse from the parquet lake, then the views and aggregates in sql/.

Publishing is incremental. The warehouse records in `_published` the fingerprint (path, size,
mtime_ns) of every file it loaded; the next publish copies the current warehouse to a temporary
file, replaces only the rows of the files whose fingerprint changed (and of the tables filtered
by them: responses by prompts, scores and judgements by responses), recomputes the derived
tables (`model_task_scores`, `paper_tables`) only for the benchmark x model runs those rows
belong to (and `paper_tables_clean`, the paper tables on the items a user's corpus does not
contaminate, for those runs and for the corpora whose scan changed), and swaps the file in. A
reader (`wenheng query`, a notebook) opens either the old file or the new one, never a half-built
database, and DuckDB's single writer is never contended.
The build is whole when there is no warehouse, or when it was built by other code (its layout
hash: this module, the tables' schemas, pipeline/aggregate.py, pipeline/history.py, sql/ and the
cards' tables differ).

At each publish the benchmarks' items, responses and scores are also recorded in the history
(pipeline/history.py: append-only parquet files under data/history/), which the warehouse loads
as `item_history`, `response_history`, `score_history` and `audit_history`.

The lake's files are partitioned by benchmark (and model), or, for the scans of a user's corpora
(`corpus_overlap`, `corpus_quarantine`), by corpus: `partition_columns` says which per table."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import time
import uuid
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import aggregate, history, schema
from pipeline.benchmarks import cards

# warehouse table -> (lake globs relative to the lake dir, schema used when no file exists yet).
# The first glob with files wins: a benchmark-partitioned table is `<asset>/<benchmark>.parquet`
# (a partition of benchmark x model `<asset>/<benchmark>/<model>.parquet`); a file left from the
# single-file layout beside the partitions is not published twice.
BASE_TABLES: dict[str, tuple[tuple[str, ...], pa.Schema]] = {
    "items": (("items/*.parquet", "items.parquet"), schema.ITEMS),
    "quarantine": (("quarantine/*.parquet", "quarantine.parquet"), schema.QUARANTINE),
    "corrections_audit": (("corrections_audit/*.parquet", "corrections_audit.parquet"), schema.CORRECTIONS_AUDIT),
    "dedup_clusters": (("dedup_clusters/*.parquet", "dedup_clusters.parquet"), schema.DEDUP_CLUSTERS),
    "contamination": (("contamination/*.parquet", "contamination.parquet"), schema.CONTAMINATION),
    "item_variants": (("item_variants/*.parquet", "item_variants.parquet"), schema.ITEM_VARIANTS),
    "prompts": (("prompts/*.parquet", "prompts.parquet"), schema.PROMPTS),
    "responses": (("responses/*/*.parquet",), schema.RESPONSES),
    "judgements": (("judgements/*/*.parquet",), schema.JUDGEMENTS),
    "scores": (("scores/*/*.parquet",), schema.SCORES),
    "judge_reliability": (("judge_reliability/*/*.parquet",), schema.JUDGE_RELIABILITY),
    # a user's corpus scanned against every item (pipeline/contamination): one file per corpus
    "corpus_overlap": (("corpus_overlap/*.parquet",), schema.CORPUS_OVERLAP),
    "corpus_quarantine": (("corpus_quarantine/*.parquet",), schema.CORPUS_QUARANTINE),
}
# What the `*` of a partition path stand for, in order: benchmark (and model), unless the table
# says otherwise in TABLE_PARTITIONS.
PARTITION_COLUMNS = ("benchmark", "model")
TABLE_PARTITIONS: dict[str, tuple[str, ...]] = {"corpus_overlap": ("corpus",), "corpus_quarantine": ("corpus",)}


def partition_columns(table: str) -> tuple[str, ...]:
    """What the `*` of the table's partition paths stand for, in order."""
    return TABLE_PARTITIONS.get(table, PARTITION_COLUMNS)


# Partition files outlive the items they answered (a source was corrected, a sample set swapped
# for the real files). Only responses to the current prompts, and their scores, are published.
CURRENT_ONLY = {
    "responses": "SELECT * FROM {src} r WHERE EXISTS (SELECT 1 FROM prompts p WHERE p.item_id = r.item_id"
                 " AND p.variant = r.variant AND p.setting = r.setting AND p.prompt_hash = r.prompt_hash)",
    "scores": "SELECT * FROM {src} s WHERE EXISTS (SELECT 1 FROM responses r WHERE r.item_id = s.item_id"
              " AND r.variant = s.variant AND r.setting = s.setting AND r.model = s.model)",
    "judgements": "SELECT * FROM {src} s WHERE EXISTS (SELECT 1 FROM responses r WHERE r.item_id = s.item_id"
                  " AND r.variant = s.variant AND r.setting = s.setting AND r.model = s.model)",
}
# table -> the table its CURRENT_ONLY filter reads: rows reloaded there are reloaded here too
FILTERED_BY = {"responses": "prompts", "scores": "responses", "judgements": "responses"}
# the tables the derived ones (model_task_scores, paper_tables) are computed from
DERIVED_FROM = ("items", "prompts", "responses", "scores")
# ... and what paper_tables' official rows not asked are read from, besides those
PAPER_DERIVED_FROM = (*DERIVED_FROM, "quarantine", "dedup_clusters")
# paper_tables_clean is computed from the derived runs and this table too
CORPUS_TABLE = "corpus_overlap"

# Bump when the warehouse's own tables change shape; code changes are caught by the layout hash.
LAYOUT_VERSION = "7"
_LAYOUT_SOURCES = [Path(__file__), Path(aggregate.__file__), Path(history.__file__)]

Key = tuple[tuple[str, str], ...]   # (column, value) pairs, partition_columns order; () = whole table


@dataclass(frozen=True)
class Part:
    """One file a table is loaded from, and which rows it holds (its key)."""
    table: str
    path: str
    size: int
    mtime_ns: int
    key: Key


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
    seconds: dict[str, float]               # per phase: copy, load, history, sql, paper_tables,
                                            # paper_tables_clean, swap


def publish(db_path: Path, lake_dir: Path, sql_dir: Path, history_dir: Path | None = None,
            full: bool = False) -> PublishResult:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    history_dir = history_dir or history.default_dir(lake_dir)
    layout = layout_hash(sql_dir)
    # A name of its own (two builders never share one), beside the target (same filesystem, so the
    # swap is a rename: a reader opens either the old file or the new one, never a mix).
    tmp = db_path.with_name(f"{db_path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.building")
    clock = _Clock()
    con, incremental = _open_build(db_path, tmp, layout, full)
    clock.lap("copy")
    if incremental:
        # One checkpoint, at the end (not one more whenever the log passes 16 MB). It writes the
        # reloaded partitions' rows, where DuckDB's dict_fsst analysis is two thirds of its cost
        # (0.08 of 0.12 s for WenMind's) for some 15% less file; a whole build still uses it.
        con.execute("SET checkpoint_threshold = '100GB'")
        con.execute("SET disabled_compression_methods = 'dict_fsst'")
    try:
        if not incremental:
            _create_bookkeeping(con)
        published = _published(con)
        now = dt.datetime.now(dt.UTC)
        reloaded: dict[str, list[Key]] = {}
        for table, (patterns, table_schema) in BASE_TABLES.items():
            if not incremental:
                _create_table(con, table, table_schema)
            parts = lake_parts(lake_dir, table, patterns)
            keys = _changed_keys(table, parts, published.get(table, {}))
            for parent in [FILTERED_BY.get(table)] if FILTERED_BY.get(table) else []:
                keys |= set(reloaded.get(parent, []))
            keys = _normalize(keys, table_schema)
            _reload(con, table, table_schema, parts, keys, published.get(table, {}))
            reloaded[table] = sorted(keys)
        derived = _derived_scope(reloaded)
        paper_scope = _derived_scope(reloaded, PAPER_DERIVED_FROM)
        clock.lap("load")
        # the history as it is on disk, then what this publish adds to it
        _load_history(con, history_dir, published, reloaded, create=not incremental)
        recorded = history.record(con, history_dir, derived, bool(reloaded["corrections_audit"]), now)
        if recorded:
            _load_history(con, history_dir, _published(con), reloaded, create=False)
        clock.lap("history")
        for sql_file in sql_files(sql_dir):
            _run_sql(con, sql_file.read_text(encoding="utf-8"), None if not incremental else derived)
        clock.lap("sql")
        redone = build_paper_tables(con, None if not incremental else paper_scope)
        clock.lap("paper_tables")
        build_clean_paper_tables(con, None if not incremental or paper_scope is None else redone,
                                 None if not incremental else _corpora(reloaded.get(CORPUS_TABLE, [])))
        clock.lap("paper_tables_clean")
        con.execute("DELETE FROM _build")
        con.execute("INSERT INTO _build VALUES (?, ?, ?)", [layout, now, "incremental" if incremental else "full"])
        # tables only: counting a view runs it (score_changes joins the whole history)
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                  for (name,) in con.execute("SELECT table_name FROM information_schema.tables "
                                             "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()}
        con.execute("CHECKPOINT")   # everything in the file itself, no write-ahead log beside it
        con.close()
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, db_path)
        clock.lap("swap")
    except BaseException:
        con.close()
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
        raise
    return PublishResult(counts, "incremental" if incremental else "full",
                         {t: k for t, k in reloaded.items() if k}, recorded, clock.seconds)


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
    for name, table_schema in [*((t, s) for t, (_, s) in BASE_TABLES.items()), *history.TABLES.items()]:
        digest.update(name.encode())
        digest.update(table_schema.serialize().to_pybytes())
    for path in [*_LAYOUT_SOURCES, *sql_files(sql_dir),
                 *(c.folder / "tables.yaml" for c in cards().values())]:
        digest.update(str(path.name).encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:16]


def lake_parts(root: Path, table: str, patterns: Iterable[str]) -> list[Part]:
    """The files a table is loaded from (the first glob that has any), each with its key."""
    for pattern in patterns:
        files = sorted(root.glob(pattern))
        if files:
            wild = pattern.count("*")
            columns = partition_columns(table)
            return [_part(table, f, tuple(zip(columns, f.relative_to(root).with_suffix("").parts[-wild:]
                                              if wild else ())))
                    for f in files]
    return []


def _part(table: str, path: Path, key: Key) -> Part:
    st = path.stat()
    return Part(table, str(path), st.st_size, st.st_mtime_ns, key)


def _open_build(db_path: Path, tmp: Path, layout: str, full: bool) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """The database to build in, `tmp`, and whether the build is incremental: then it is a copy
    of the warehouse, which was built with this `layout` (the copy is checked, not the original:
    one open fewer, and the layout read is that of the rows copied); else a new file."""
    try:
        if not full and db_path.is_file():
            shutil.copyfile(db_path, tmp)
            try:
                con = duckdb.connect(str(tmp))
            except duckdb.Error:   # not a DuckDB file (or another DuckDB's)
                con = None
            if con is not None:
                try:
                    row = con.execute("SELECT layout FROM _build").fetchone()
                except duckdb.Error:   # no _build table: built by an older wenheng
                    row = None
                if row is not None and row[0] == layout:
                    return con, True
                con.close()
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                leftover.unlink(missing_ok=True)
        return duckdb.connect(str(tmp)), False
    except BaseException:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
        raise


def _create_bookkeeping(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE _published (table_name VARCHAR, path VARCHAR, size BIGINT, mtime_ns BIGINT, "
                "key VARCHAR)")
    con.execute("CREATE TABLE _build (layout VARCHAR, built_at TIMESTAMP WITH TIME ZONE, mode VARCHAR)")
    # per benchmark x model run: a digest of the units its paper_tables rows were computed from
    con.execute("CREATE TABLE _paper_inputs (benchmark VARCHAR, model VARCHAR, digest VARCHAR)")


def _published(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Part]]:
    out: dict[str, dict[str, Part]] = {}
    for table, path, size, mtime_ns, key in con.execute("SELECT * FROM _published").fetchall():
        out.setdefault(table, {})[path] = Part(table, path, size, mtime_ns, tuple(map(tuple, json.loads(key))))
    return out


def _load_history(con: duckdb.DuckDBPyConnection, history_dir: Path, published: dict[str, dict[str, Part]],
                  reloaded: dict[str, list[Key]], create: bool) -> None:
    """History files never change once written: only new (or removed) ones are loaded."""
    for table, table_schema in history.TABLES.items():
        if create:
            _create_table(con, table, table_schema)
        parts = [_part(table, f, (("recording", f.stem),)) for f in history.files(history_dir, table)]
        keys = _changed_keys(table, parts, published.get(table, {}))
        _reload(con, table, table_schema, parts, keys, published.get(table, {}))
        reloaded[table] = sorted(set(reloaded.get(table, [])) | keys)


def _changed_keys(table: str, parts: list[Part], before: dict[str, Part]) -> set[Key]:
    """Keys of the files added, changed or removed since the last publish."""
    now = {p.path: p for p in parts}
    changed = {p.key for p in parts if before.get(p.path) != p}
    return changed | {p.key for path, p in before.items() if path not in now}


def _normalize(keys: set[Key], table_schema: pa.Schema) -> set[Key]:
    """Keys cut to the columns the table has (a table without the column is reloaded whole), and
    without those another key already covers."""
    cut = set()
    for key in keys:
        kept = []
        for column, value in key:
            if column not in table_schema.names:
                break
            kept.append((column, value))
        cut.add(tuple(kept))
    return {k for k in cut if not any(k[:n] in cut for n in range(len(k)))}


def _covers(key: Key, part_key: Key) -> bool:
    return part_key[:len(key)] == key


def _where(keys: Iterable[Key], alias: str = "") -> str:
    """SQL for 'the rows of these keys' (literals, so DuckDB prunes row groups with them)."""
    prefix = f"{alias}." if alias else ""
    terms = []
    for key in keys:
        if not key:
            return "true"
        terms.append("(" + " AND ".join(f'{prefix}"{c}" = {_literal(v)}' for c, v in key) + ")")
    return " OR ".join(terms) or "false"


def _literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _reload(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, parts: list[Part],
            keys: set[Key], before: dict[str, Part]) -> None:
    """Replace the rows of `keys` with those of the current files they cover; `_published` follows."""
    if not keys:
        return
    con.execute(f"DELETE FROM {table} WHERE {_where(keys)}")
    gone = [p.path for p in before.values() if any(_covers(k, p.key) for k in keys)]
    if gone:
        con.execute("DELETE FROM _published WHERE table_name = ? AND list_contains(?, path)", [table, gone])
    files = [p for p in parts if any(_covers(k, p.key) for k in keys)]
    for part in files:
        _insert(con, table, table_schema, part)
    if files:   # a few rows: parameters, no frame to register
        con.executemany("INSERT INTO _published VALUES (?, ?, ?, ?, ?)",
                        [(table, p.path, p.size, p.mtime_ns, json.dumps(p.key)) for p in files])


def _create_table(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema) -> None:
    """The table is created from its declared schema, then filled by column name: its types never
    depend on what the files happen to hold (a file written before the lake kept its schema has
    Arrow `null` columns). A declared column missing from every file is left null; a column that
    is not declared is not published."""
    con.register("declared", table_schema.empty_table())
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM declared")
    con.unregister("declared")


def _insert(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, part: Part) -> None:
    """A file's rows: those of its key only (a partition file holds its partition's rows), and for
    responses, scores and judgements only those of the current prompts."""
    present = set(pq.read_schema(part.path).names)
    columns = ", ".join(f'"{name}"' for name in table_schema.names if name in present)
    (own,) = _normalize({part.key}, table_schema)
    source = f"(SELECT {columns} FROM read_parquet(?) WHERE {_where([own])})"
    query = CURRENT_ONLY.get(table, "SELECT * FROM {src}").format(src=source)
    con.execute(f"INSERT INTO {table} BY NAME {query}", [part.path])


# ---- derived tables: what to recompute -----------------------------------------------------------

Scope = dict[str, set[str] | None]   # benchmark -> its models to recompute (None: all of them)


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
    where = _where(keys)
    con.execute(f"DELETE FROM {table} WHERE {where}")
    con.execute(f"INSERT INTO {table} SELECT * FROM ({query}) WHERE {where}")


def sql_files(sql_dir: Path) -> list[Path]:
    """The cross-benchmark SQL (sql/, in name order), then each card's own SQL, if any."""
    return sorted(sql_dir.glob("*.sql")) + [f for c in cards().values() for f in c.sql_files]


# One row per official row of the evaluated splits x model run: what the paper tables are computed
# from. An item asked of a model but not (yet) answered or scored has a null score: it counts in
# n_items, not in n_scored, so coverage shows it. Exactly one score per unit: the judge's where the
# card says its paper uses the judge ($judge_tasks, from `paper_scorer`) and the judge has a row for
# the response (a null one included: an unreadable verdict is not replaced by a rule score), else
# the rule's. Score files written before `kind` existed hold rule rows only. {models} narrows it
# to some models' runs (an incremental publish).
#
# The official rows not asked are units too, unscored, with `not_asked` saying why: the items of
# the evaluated splits (those with prompts) the data-quality policy left out (their quality flags)
# or the duplicate policy (a copy of its cluster's representative, gold included), and the rows
# quarantined at ingestion that the card's layout places in an evaluated split
# (`quarantine_placed`). A run that asked a sample (WENHENG_LIMIT) leaves out items no policy
# explains: then its units are the items asked alone, as the sample is what its rows cover.
# `n_options`, `n_questions`, `n_labels` give each item's chance level (aggregate.unit_chance),
# `merged_rows` how many raw rows its item merged (WYWMT's repeated sources, CP-DUE's AU).
_UNITS_TEMPLATE = """
WITH runs AS (SELECT DISTINCT model, variant, setting FROM responses WHERE benchmark = $benchmark AND {models}),
paper AS (
    SELECT s.* FROM scores s JOIN items i USING (item_id)
    WHERE s.benchmark = $benchmark AND {models}
    QUALIFY row_number() OVER (
        PARTITION BY s.item_id, s.variant, s.setting, s.model
        ORDER BY coalesce(s.kind, 'rule') = CASE WHEN list_contains(CAST($judge_tasks AS VARCHAR[]), i.task)
                                                 THEN 'judge' ELSE 'rule' END DESC,
                 coalesce(s.kind, 'rule') = 'rule' DESC) = 1
),
asked AS (SELECT DISTINCT item_id FROM prompts WHERE benchmark = $benchmark),
evaluated AS (SELECT DISTINCT i.split FROM items i JOIN asked a ON a.item_id = i.item_id),
copies AS (
    SELECT d.item_id FROM dedup_clusters d
    JOIN items m ON m.item_id = d.item_id
    JOIN items c ON c.item_id = d.cluster_id
    WHERE d.benchmark = $benchmark AND NOT d.is_representative AND m.answer_hash IS NOT DISTINCT FROM c.answer_hash
),
unasked AS (
    SELECT i.*,
           CASE WHEN coalesce(json_array_length(i.metadata, '$.quality_flags'), 0) > 0
                THEN 'data-quality (' || array_to_string(CAST(json_extract(i.metadata, '$.quality_flags') AS VARCHAR[]),
                                                         ', ') || ')'
                WHEN i.item_id IN (SELECT item_id FROM copies) THEN 'duplicate' END AS not_asked
    FROM items i
    WHERE i.benchmark = $benchmark AND i.split IN (SELECT split FROM evaluated)
      AND i.item_id NOT IN (SELECT item_id FROM asked)
),
whole AS (SELECT NOT EXISTS (SELECT 1 FROM unasked WHERE not_asked IS NULL) AS yes),
task_info AS (
    SELECT task,
           CASE WHEN count(DISTINCT task_group) = 1 THEN any_value(task_group) END AS task_group,
           CASE WHEN count(DISTINCT domain) = 1 THEN any_value(domain) END AS domain,
           CASE WHEN count(DISTINCT capability) = 1 THEN any_value(capability) END AS capability,
           CASE WHEN count(DISTINCT format) = 1 THEN any_value(format) END AS format
    FROM items WHERE benchmark = $benchmark GROUP BY task
),
left_out AS (
    SELECT item_id AS unit_id, split, task, task_group, domain, capability, format,
           json_extract_string(metadata, '$.group') AS "group", json_extract_string(metadata, '$.part') AS part,
           CASE WHEN coalesce(context, '') <> '' THEN md5(context) END AS context_id,
           coalesce(json_array_length(metadata, '$.merged_rows'), 0) AS merged_rows, not_asked
    FROM unasked WHERE not_asked IS NOT NULL
    UNION ALL
    SELECT q.unit_id, q.split, q.task, t.task_group, t.domain, t.capability, t.format, q."group", q.part,
           NULL AS context_id, 0 AS merged_rows, 'quarantined' AS not_asked
    FROM quarantine_placed q LEFT JOIN task_info t ON t.task = q.task
    WHERE q.benchmark = $benchmark AND q.split IN (SELECT split FROM evaluated)
)
SELECT p.item_id AS unit_id, r.model, p.variant, p.setting, i.split, i.task, i.task_group, i.domain,
       i.capability, json_extract_string(i.metadata, '$.group') AS "group",
       json_extract_string(i.metadata, '$.part') AS part, s.score, s.details,
       CASE WHEN s.kind = 'judge' THEN 'judge ' || s.judge_model || ' ('
                 || coalesce(json_extract_string(s.details, '$.prompt_set'), '?') || ' prompts)'
            WHEN s.item_id IS NOT NULL THEN 'rules' END AS scored_by,
       list_contains(CAST($judge_tasks AS VARCHAR[]), i.task) AS paper_judge,
       CASE WHEN coalesce(i.context, '') <> '' THEN md5(i.context) END AS context_id,
       coalesce(s.kind = 'judge'
                AND starts_with(json_extract_string(s.details, '$.judge.engine.model'), 'bundled:'), false)
           AS demo_judge,
       coalesce(a.max_tokens IS NOT NULL AND (p.max_tokens IS NULL OR a.max_tokens < p.max_tokens), false) AS capped,
       i.format,
       CASE WHEN len(i.choices) > 0 THEN len(i.choices)
            ELSE TRY_CAST(json_extract_string(i.metadata, '$.options_per_question') AS INTEGER) END AS n_options,
       coalesce(json_array_length(i.metadata, '$.questions'), 1) AS n_questions,
       json_array_length(i.metadata, '$.labels') AS n_labels,
       coalesce(json_array_length(i.metadata, '$.merged_rows'), 0) AS merged_rows,
       CAST(NULL AS VARCHAR) AS not_asked
FROM prompts p
JOIN items i USING (item_id)
JOIN runs r ON r.variant = p.variant AND r.setting = p.setting
LEFT JOIN responses a ON a.item_id = p.item_id AND a.variant = p.variant AND a.setting = p.setting
                     AND a.model = r.model
LEFT JOIN paper s ON s.item_id = p.item_id AND s.variant = p.variant AND s.setting = p.setting
                 AND s.model = r.model
WHERE p.benchmark = $benchmark
UNION ALL BY NAME
SELECT l.unit_id, r.model, r.variant, r.setting, l.split, l.task, l.task_group, l.domain, l.capability, l."group",
       l.part, CAST(NULL AS DOUBLE) AS score, CAST(NULL AS VARCHAR) AS details, CAST(NULL AS VARCHAR) AS scored_by,
       coalesce(list_contains(CAST($judge_tasks AS VARCHAR[]), l.task), false) AS paper_judge, l.context_id,
       false AS demo_judge, false AS capped, l.format, CAST(NULL AS INTEGER) AS n_options,
       CAST(NULL AS INTEGER) AS n_questions, CAST(NULL AS INTEGER) AS n_labels, l.merged_rows, l.not_asked
FROM left_out l
CROSS JOIN runs r
WHERE (SELECT yes FROM whole)
"""
UNITS_SQL = _UNITS_TEMPLATE.format(models="true")


def paper_judge_tasks(con: duckdb.DuckDBPyConnection, bench) -> list[str]:
    """The benchmark's tasks whose paper number is the LLM judge's (its card's `paper_scorer`)."""
    tasks = con.execute("SELECT DISTINCT task FROM items WHERE benchmark = ?", [bench.name]).fetchall()
    return sorted(task for (task,) in tasks if bench.paper_scorer_for(task) == "judge")


def build_paper_tables(con: duckdb.DuckDBPyConnection, scope: Scope | None = None) -> list[Key]:
    """`paper_tables` (every row of every card's tables, long form), one view per card table
    (`<benchmark>_<table>`), and `leaderboard`: the rows each card marks as its headline. With a
    scope, only those runs' rows are recomputed: a row depends on its run's units alone (the
    bootstrap weights are seeded per unit id), so this gives the rows a whole build gives; and of
    those, only the runs whose units differ from the ones their rows were computed from (a digest
    of them is kept in `_paper_inputs`): a correction that moves no score recomputes nothing.
    Returns the (benchmark, model) runs whose rows were recomputed."""
    tables = {name: aggregate.load_tables(bench.folder / "tables.yaml") for name, bench in cards().items()}
    build_quarantine_placed(con, tables)
    frames, redone, digests = [], [], []
    for name, bench in cards().items():
        if scope is not None and name not in scope:
            continue
        models = scope[name] if scope is not None and scope[name] is not None else {
            m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE benchmark = ?", [name]).fetchall()}
        params = {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}
        before = {} if scope is None else dict(con.execute(
            "SELECT model, digest FROM _paper_inputs WHERE benchmark = ?", [name]).fetchall())
        if scope is not None and scope[name] is None:
            models |= set(before)   # a model whose responses are gone: its rows go too
        ordered = sorted(models)
        # a few models at a time: one model's units are all its rows need, and memory stays bounded
        for chunk in (ordered[i:i + PAPER_MODELS_AT_ONCE] for i in range(0, len(ordered), PAPER_MODELS_AT_ONCE)):
            now = _units_digests(con, chunk, params)
            chunk = [m for m in chunk if scope is None or now.get(m) != before.get(m)]
            redone += [(("benchmark", name), ("model", m)) for m in chunk]
            digests += [(name, m, now[m]) for m in chunk if m in now]
            if not chunk:
                continue
            units = _units(con, chunk, params)
            if units.empty:
                continue
            frames.append(aggregate.paper_tables(tables[name], name, units))
    with warnings.catch_warnings():
        # all-null columns in some frames (a table with no notes): the types come from PAPER_TABLE_TYPES below
        warnings.simplefilter("ignore", FutureWarning)
        table = (pd.concat(frames, ignore_index=True) if frames
                 else pd.DataFrame(columns=aggregate.PAPER_TABLE_COLUMNS))
    if scope is None:
        con.register("paper_tables_frame", table)
        con.execute(f"CREATE OR REPLACE TABLE paper_tables AS SELECT {PAPER_TABLE_TYPES} FROM paper_tables_frame")
        con.unregister("paper_tables_frame")
    elif redone:
        con.execute(f"DELETE FROM paper_tables WHERE {_where(redone)}")
        con.execute(f"DELETE FROM _paper_inputs WHERE {_where(redone)}")
        if len(table):
            con.register("paper_tables_frame", table)
            con.execute(f"INSERT INTO paper_tables SELECT {PAPER_TABLE_TYPES} FROM paper_tables_frame")
            con.unregister("paper_tables_frame")
    if digests:
        con.executemany("INSERT INTO _paper_inputs VALUES (?, ?, ?)", digests)
    if scope is not None:
        return redone   # the views below are already in the warehouse
    shown = ("model, split, variant, setting, row_label, metric, round(score, 2) AS score, round(ci_low, 2) AS ci_low, "
             "round(ci_high, 2) AS ci_high, round(chance, 2) AS chance, n_scored, n_items, "
             "round(coverage, 4) AS coverage, capped, comparable, scored_by, note")
    for name, card_tables in tables.items():
        for spec in card_tables.tables:
            con.execute(f'CREATE OR REPLACE VIEW "{name}_{spec.name}" AS SELECT {shown} FROM paper_tables '
                        f"WHERE benchmark = '{name}' AND table_name = '{spec.name}' "
                        "ORDER BY split, setting, variant, row_order, metric, model")
    con.execute(f"CREATE OR REPLACE VIEW leaderboard AS SELECT benchmark, table_name, row_order, {shown} "
                "FROM paper_tables WHERE headline ORDER BY benchmark, split, setting, variant, row_order, model")
    con.execute(MODEL_DIFFERENCES_VIEW)
    return redone


# Every two models on the same paper-table row (benchmark, table, row, metric, split, setting,
# variant): A's number minus B's, both with n. Point differences only: the paired-bootstrap
# interval and p-value of each come from `wenheng compare A B` (pipeline/compare.py).
MODEL_DIFFERENCES_VIEW = """
CREATE OR REPLACE VIEW model_differences AS
SELECT a.benchmark, a.table_name, a.row_order, a.row_label, a.metric, a.split, a.setting, a.variant,
       a.model AS model_a, b.model AS model_b, a.score AS score_a, b.score AS score_b, a.score - b.score AS difference,
       a.n_items, a.n_scored AS n_scored_a, b.n_scored AS n_scored_b, a.comparable AND b.comparable AS comparable,
       a.headline
FROM paper_tables a
JOIN paper_tables b
  ON b.benchmark = a.benchmark AND b.table_name = a.table_name AND b.row_label = a.row_label
 AND b.metric = a.metric AND b.split IS NOT DISTINCT FROM a.split AND b.setting IS NOT DISTINCT FROM a.setting
 AND b.variant IS NOT DISTINCT FROM a.variant AND b.model <> a.model
ORDER BY a.benchmark, a.table_name, a.split, a.setting, a.variant, a.row_order, a.metric, a.model, b.model
"""


def _units(con: duckdb.DuckDBPyConnection, models: list[str], params: dict) -> pd.DataFrame:
    """The units of these models' runs of a benchmark, as aggregate.paper_tables takes them."""
    _placed_or_empty(con)
    units = con.execute(_units_sql(models), params).df()
    units["score"] = units["score"].astype(object).where(units["score"].notna(), None)
    units["details"] = [json.loads(d) if isinstance(d, str) else {} for d in units["details"]]
    return units


def _units_sql(models: list[str]) -> str:
    return _UNITS_TEMPLATE.format(models="model IN (" + ", ".join(_literal(m) for m in models) + ")")


def _units_digests(con: duckdb.DuckDBPyConnection, models: list[str], params: dict) -> dict[str, str]:
    """model -> a digest of its units (every column of every row, in any order); models without
    units are left out."""
    _placed_or_empty(con)
    return dict(con.execute(f"SELECT model, count(*) || ':' || sum(hash(u)) FROM ({_units_sql(models)}) u "
                            "GROUP BY model", params).fetchall())


PAPER_MODELS_AT_ONCE = 16
PAPER_TABLE_TYPES = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in {
    "model": "VARCHAR", "variant": "VARCHAR", "setting": "VARCHAR", "split": "VARCHAR", "capped": "BOOLEAN",
    "benchmark": "VARCHAR", "table_name": "VARCHAR", "title": "VARCHAR", "row_order": "BIGINT",
    "row_label": "VARCHAR", "metric": "VARCHAR", "score": "DOUBLE", "ci_low": "DOUBLE", "ci_high": "DOUBLE",
    "n_items": "BIGINT", "n_scored": "BIGINT", "coverage": "DOUBLE", "headline": "BOOLEAN",
    "note": "VARCHAR", "scored_by": "VARCHAR", "comparable": "BOOLEAN", "chance": "DOUBLE"}.items())


# Every row quarantined at ingestion with the split and task (and question group and part) its
# card's `quarantine:` layout places it in (aggregate.place_quarantine): the units SQL counts those
# of the evaluated splits as official rows not asked.
QUARANTINE_PLACED_TYPES = {"benchmark": "VARCHAR", "unit_id": "VARCHAR", "source_file": "VARCHAR",
                           "source_locator": "VARCHAR", "split": "VARCHAR", "task": "VARCHAR", "group": "VARCHAR",
                           "part": "VARCHAR"}


def _placed_or_empty(con: duckdb.DuckDBPyConnection) -> None:
    """A warehouse published before `quarantine_placed` existed (`wenheng compare` before the next
    publish rebuilds it whole): an empty one, for this connection only."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'quarantine_placed'"
                       ).fetchall()[0][0]:
        con.register("quarantine_placed", pd.DataFrame({c: pd.Series([], dtype="string")
                                                        for c in QUARANTINE_PLACED_TYPES}))


def build_quarantine_placed(con: duckdb.DuckDBPyConnection,
                            tables: dict[str, aggregate.CardTables] | None = None) -> None:
    """`quarantine_placed`, from the whole quarantine table (a few rows: rebuilt at every publish)."""
    tables = tables if tables is not None else {
        name: aggregate.load_tables(bench.folder / "tables.yaml") for name, bench in cards().items()}
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
    frame = pd.DataFrame(rows, columns=list(QUARANTINE_PLACED_TYPES)).astype(object)
    columns = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in QUARANTINE_PLACED_TYPES.items())
    con.register("quarantine_placed_frame", frame)
    con.execute(f"CREATE OR REPLACE TABLE quarantine_placed AS SELECT {columns} FROM quarantine_placed_frame")
    con.unregister("quarantine_placed_frame")


# ---- paper tables on the items a corpus does not contain -------------------------------------------

def _corpora(keys: Iterable[Key]) -> set[str] | None:
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
        empty = pd.DataFrame(columns=CLEAN_COLUMNS)
        con.register("paper_tables_clean_frame", empty)
        con.execute(f"CREATE OR REPLACE TABLE paper_tables_clean AS SELECT {CLEAN_TABLE_TYPES} "
                    "FROM paper_tables_clean_frame")
        con.unregister("paper_tables_clean_frame")
    elif not runs and not corpora:
        return
    else:
        terms = ([f"corpus IN ({', '.join(map(_literal, sorted(corpora)))})"] if corpora else []) + (
            [f"({_where(runs)})"] if runs else [])
        con.execute(f"DELETE FROM paper_tables_clean WHERE {' OR '.join(terms)}")
    changed: dict[str, set[str]] = {}
    for key in runs:
        values = dict(key)
        changed.setdefault(values["benchmark"], set()).add(values.get("model", ""))
    # benchmark -> corpus -> the models whose rows to compute (None: all of them)
    todo: dict[str, dict[str, set[str] | None]] = {}
    for corpus, bench in con.execute(f"SELECT DISTINCT corpus, benchmark FROM {CORPUS_TABLE} ORDER BY 1, 2").fetchall():
        if full or corpus in (corpora or set()):
            todo.setdefault(bench, {})[corpus] = None
        elif bench in changed:
            todo.setdefault(bench, {})[corpus] = changed[bench]
    all_cards = cards()
    for name, per_corpus in todo.items():
        bench = all_cards.get(name)
        if bench is None:
            continue
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
            continue
        tables = aggregate.load_tables(bench.folder / "tables.yaml")
        params = {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}
        ordered = sorted(set().union(*computed.values()))
        for chunk in (ordered[i:i + PAPER_MODELS_AT_ONCE] for i in range(0, len(ordered), PAPER_MODELS_AT_ONCE)):
            units = _units(con, chunk, params)
            frames = []
            for corpus, models in computed.items():
                part = units[units["model"].isin(models) & ~units["unit_id"].isin(contaminated[corpus])]
                if len(part):
                    frames.append(aggregate.paper_tables(tables, name, part).assign(corpus=corpus))
            if frames:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)   # all-null columns: typed below
                    frame = pd.concat(frames, ignore_index=True)[CLEAN_COLUMNS]
                con.register("paper_tables_clean_frame", frame)
                con.execute(f"INSERT INTO paper_tables_clean SELECT {CLEAN_TABLE_TYPES} FROM paper_tables_clean_frame")
                con.unregister("paper_tables_clean_frame")
    if full:
        con.execute(CONTAMINATION_EFFECT_VIEW)


CLEAN_COLUMNS = ["corpus", *aggregate.PAPER_TABLE_COLUMNS]
CLEAN_TABLE_TYPES = 'CAST("corpus" AS VARCHAR) AS "corpus", ' + PAPER_TABLE_TYPES
# One row per scanned corpus x paper-table row (benchmark, table, row, metric) x model x split x
# setting x variant: the number on all items and on the corpus's clean items, each with its
# interval and n, and delta = clean - all. A row none of whose items is clean has no clean number
# (n_items_clean 0). Only benchmarks the corpus was scanned against.
CONTAMINATION_EFFECT_VIEW = f"""
CREATE OR REPLACE VIEW contamination_effect AS
WITH covered AS (SELECT DISTINCT corpus, benchmark FROM {CORPUS_TABLE})
SELECT k.corpus, a.benchmark, a.table_name, a.title, a.row_order, a.row_label, a.model, a.split, a.setting,
       a.variant, a.metric,
       a.score AS score_all, a.ci_low AS ci_low_all, a.ci_high AS ci_high_all,
       a.n_items AS n_items_all, a.n_scored AS n_scored_all,
       c.score AS score_clean, c.ci_low AS ci_low_clean, c.ci_high AS ci_high_clean,
       coalesce(c.n_items, 0) AS n_items_clean, coalesce(c.n_scored, 0) AS n_scored_clean,
       c.score - a.score AS delta, a.headline
FROM paper_tables a
JOIN covered k ON k.benchmark = a.benchmark
LEFT JOIN paper_tables_clean c
       ON c.corpus = k.corpus AND c.benchmark = a.benchmark AND c.table_name = a.table_name
      AND c.row_label = a.row_label AND c.metric = a.metric AND c.model = a.model
      AND c.split IS NOT DISTINCT FROM a.split AND c.setting IS NOT DISTINCT FROM a.setting
      AND c.variant IS NOT DISTINCT FROM a.variant
ORDER BY k.corpus, a.benchmark, a.table_name, a.split, a.setting, a.variant, a.row_order, a.metric, a.model
"""


def connect_readonly(db_path: Path) -> duckdb.DuckDBPyConnection:
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True)
