"""Loading the lake's files (and the history's) into the warehouse's base tables: which files a
table is loaded from and which rows each holds (its key), which changed since the last publish,
and replacing the rows of those. `_published` records every file loaded."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import history, lake_health, schema
from pipeline.warehouse.sqltext import Key, literal, template, where

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
    "judge_validity": (("judge_validity/*/*.parquet",), schema.JUDGE_VALIDITY),
    # a user's corpus scanned against every item (pipeline/contamination): one file per corpus
    "corpus_overlap": (("corpus_overlap/*.parquet",), schema.CORPUS_OVERLAP),
    "corpus_quarantine": (("corpus_quarantine/*.parquet",), schema.CORPUS_QUARANTINE),
    "corpus_reading": (("corpus_reading/*.parquet",), schema.CORPUS_READING),
}
# What the `*` of a partition path stand for, in order: benchmark (and model), unless the table
# says otherwise in TABLE_PARTITIONS.
PARTITION_COLUMNS = ("benchmark", "model")
TABLE_PARTITIONS: dict[str, tuple[str, ...]] = {"corpus_overlap": ("corpus",), "corpus_quarantine": ("corpus",),
                                                "corpus_reading": ("corpus",)}

# Partition files outlive the items they answered (a source was corrected, a sample set swapped
# for the real files). Only responses to the current prompts, and their scores and judgements,
# are published: table -> the filter (sql/templates/) its files' rows go through, and the table
# that filter reads (rows reloaded there are reloaded here too).
CURRENT_ONLY = {"responses": "of_current_prompts", "scores": "of_current_responses",
                "judgements": "of_current_responses"}
FILTERED_BY = {"responses": "prompts", "scores": "responses", "judgements": "responses"}
# the partition columns each filter matches on (its rows' own with the filtering table's): a file's
# values of those cut the filtering table before the match, which then reads a part of it
MATCHED_ON = {"responses": (), "scores": ("model",), "judgements": ("model",)}


def partition_columns(table: str) -> tuple[str, ...]:
    """What the `*` of the table's partition paths stand for, in order."""
    return TABLE_PARTITIONS.get(table, PARTITION_COLUMNS)


@dataclass(frozen=True)
class Part:
    """One file a table is loaded from, and which rows it holds (its key)."""
    table: str
    path: str
    size: int
    mtime_ns: int
    key: Key


def lake_parts(root: Path, table: str, patterns: Iterable[str]) -> list[Part]:
    """The files a table is loaded from (the first glob that has any), each with its key."""
    for pattern in patterns:
        files = sorted(root.glob(pattern))
        if files:
            wild = pattern.count("*")
            columns = partition_columns(table)
            return [part(table, f, tuple(zip(columns, f.relative_to(root).with_suffix("").parts[-wild:]
                                             if wild else ())))
                    for f in files]
    return []


def part(table: str, path: Path, key: Key) -> Part:
    st = path.stat()
    return Part(table, str(path), st.st_size, st.st_mtime_ns, key)


def create_table(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema) -> None:
    """The table is created from its declared schema, then filled by column name: its types never
    depend on what the files happen to hold (a file written before the lake kept its schema has
    Arrow `null` columns). A declared column missing from every file is left null (or takes its
    schema.LOAD_DEFAULTS value); a column that is not declared is not published."""
    con.register("declared", table_schema.empty_table())
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM declared")
    con.unregister("declared")


def create_bookkeeping(con: duckdb.DuckDBPyConnection) -> None:
    for table, table_schema in schema.BOOKKEEPING.items():
        create_table(con, table, table_schema)


def published(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Part]]:
    """table -> path -> the file as the last publish loaded it."""
    out: dict[str, dict[str, Part]] = {}
    for table, path, size, mtime_ns, key in con.execute("SELECT * FROM _published").fetchall():
        out.setdefault(table, {})[path] = Part(table, path, size, mtime_ns, tuple(map(tuple, json.loads(key))))
    return out


def load_lake(con: duckdb.DuckDBPyConnection, lake_dir: Path, before: dict[str, dict[str, Part]],
              create: bool) -> dict[str, list[Key]]:
    """Every base table's changed files reloaded (all of them into new tables with `create`):
    table -> the keys whose rows were replaced."""
    reloaded: dict[str, list[Key]] = {}
    for table, (patterns, table_schema) in BASE_TABLES.items():
        if create:
            create_table(con, table, table_schema)
        parts = lake_parts(lake_dir, table, patterns)
        keys = changed_keys(parts, before.get(table, {}))
        if table in FILTERED_BY:
            keys |= set(reloaded.get(FILTERED_BY[table], []))
        keys = normalize(keys, table_schema)
        reload(con, table, table_schema, parts, keys, before.get(table, {}))
        reloaded[table] = sorted(keys)
    return reloaded


def load_history(con: duckdb.DuckDBPyConnection, history_dir: Path, before: dict[str, dict[str, Part]],
                 reloaded: dict[str, list[Key]], create: bool) -> list[str]:
    """History files never change once written: only new (or removed) ones are loaded, each
    checked first (lake_health.lake_damage: its digest, or every row of an older file). One damaged
    on disk cannot be recomputed either: it is set aside (`<name>.damaged`) and the warehouse is
    built without it. Returns one line per such file."""
    said = []
    for table, table_schema in schema.HISTORY_TABLES.items():
        if create:
            create_table(con, table, table_schema)
        parts = []
        for p in (part(table, f, (("recording", f.stem),)) for f in history.files(history_dir, table)):
            damage = None if before.get(table, {}).get(p.path) == p else lake_health.lake_damage(Path(p.path), True)
            if damage is None:
                parts.append(p)
                continue
            aside = lake_health.set_aside(Path(p.path))
            said.append(f"history file {p.path} is damaged ({damage}): kept as {aside.name}; the warehouse is "
                        f"built without its {table} snapshot (recording {Path(p.path).stem})")
        keys = changed_keys(parts, before.get(table, {}))
        reload(con, table, table_schema, parts, keys, before.get(table, {}))
        reloaded[table] = sorted(set(reloaded.get(table, [])) | keys)
    return said


def changed_keys(parts: list[Part], before: dict[str, Part]) -> set[Key]:
    """Keys of the files added, changed or removed since the last publish."""
    now = {p.path: p for p in parts}
    changed = {p.key for p in parts if before.get(p.path) != p}
    return changed | {p.key for path, p in before.items() if path not in now}


def normalize(keys: set[Key], table_schema: pa.Schema) -> set[Key]:
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


def reload(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, parts: list[Part],
           keys: set[Key], before: dict[str, Part]) -> None:
    """Replace the rows of `keys` with those of the current files they cover; `_published` follows."""
    if not keys:
        return
    con.execute(f"DELETE FROM {table} WHERE {where(keys)}")
    gone = [p.path for p in before.values() if any(_covers(k, p.key) for k in keys)]
    if gone:
        con.execute("DELETE FROM _published WHERE table_name = ? AND list_contains(?, path)", [table, gone])
    files = [p for p in parts if any(_covers(k, p.key) for k in keys)]
    _insert_many(con, table, table_schema, files)
    if files:   # a few rows: parameters, no frame to register
        con.executemany("INSERT INTO _published VALUES (?, ?, ?, ?, ?)",
                        [(table, p.path, p.size, p.mtime_ns, json.dumps(p.key)) for p in files])


def _insert_many(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, files: list[Part]) -> None:
    """The files' rows (as `_insert` takes each file's), in one statement per set of files with the
    same columns and key columns: one scan of many files, not a statement per file."""
    batches: dict[tuple, list[Part]] = {}
    for one in files:
        (own,) = normalize({one.key}, table_schema)
        present = tuple(sorted(pq.read_schema(one.path).names))
        batches.setdefault((present, tuple(c for c, _ in own)), []).append(one)
    for (present, key_columns), batch in batches.items():
        if len(batch) == 1:
            _insert(con, table, table_schema, batch[0])
            continue
        # each file's rows of its own key only: the scan joined with (file, key values)
        pairs = ", ".join("(" + ", ".join(literal(v) for v in [one.path, *(v for _, v in normalize(
            {one.key}, table_schema).pop())]) + ")" for one in batch)
        names = ["_file", *(f"_k{i}" for i in range(len(key_columns)))]
        on = " AND ".join(["f.filename = k._file", *(f'f."{c}" = k._k{i}' for i, c in enumerate(key_columns))])
        scan = (f"(SELECT f.* EXCLUDE (filename) FROM read_parquet(?, filename = true, union_by_name = true) f "
                f"JOIN (VALUES {pairs}) k({', '.join(names)}) ON {on})")
        cuts = {_cut(table, one.key) for one in batch} if table in CURRENT_ONLY else set()
        # a few partitions: the filtering table's rows of those; many: all of it (one hash table)
        _insert_query(con, table, table_schema, set(present), scan, where(cuts) if len(cuts) <= 8 else "true",
                      [[one.path for one in batch]])


def _insert_query(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, present: set[str],
                  scan: str, key: str, params: list) -> None:
    defaults = schema.LOAD_DEFAULTS.get(table, {})
    columns = []
    for name in table_schema.names:
        if name in defaults:
            value = literal(defaults[name])
            columns.append(f'coalesce("{name}", {value}) AS "{name}"' if name in present else f'{value} AS "{name}"')
        elif name in present:
            columns.append(f'"{name}"')
    source = f"(SELECT {', '.join(columns)} FROM {scan})"
    query = template(CURRENT_ONLY[table], src=source, key=key) if table in CURRENT_ONLY else f"SELECT * FROM {source}"
    con.execute(f"INSERT INTO {table} BY NAME {query}", params)


def _insert(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, one: Part) -> None:
    """A file's rows: those of its key only (a partition file holds its partition's rows), and for
    responses, scores and judgements only those of the current prompts; a column the file lacks
    or leaves null takes its schema.LOAD_DEFAULTS value, if it has one."""
    present = set(pq.read_schema(one.path).names)
    (own,) = normalize({one.key}, table_schema)
    cut = _cut(table, one.key) if table in CURRENT_ONLY else ()
    _insert_query(con, table, table_schema, present, f"read_parquet(?) WHERE {where([own])}", where([cut]),
                  [one.path])


def _cut(table: str, key: Key) -> Key:
    """The part of a file's key its filter matches on anyway (MATCHED_ON)."""
    return tuple((c, v) for c, v in key if c in MATCHED_ON[table])
