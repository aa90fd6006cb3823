"""Building the DuckDB warehouse from the parquet lake, then the views and aggregates in sql/.

The warehouse is rebuilt into a temporary file and swapped in, so a reader (`wenheng query`,
a notebook) never sees a half-built database and DuckDB's single writer is never contended."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import aggregate, schema
from pipeline.benchmarks import cards

# warehouse table -> (lake glob relative to the lake dir, schema used when no file exists yet)
BASE_TABLES: dict[str, tuple[str, pa.Schema]] = {
    "items": ("items.parquet", schema.ITEMS),
    "quarantine": ("quarantine.parquet", schema.QUARANTINE),
    "corrections_audit": ("corrections_audit.parquet", schema.CORRECTIONS_AUDIT),
    "dedup_clusters": ("dedup_clusters.parquet", schema.DEDUP_CLUSTERS),
    "contamination": ("contamination.parquet", schema.CONTAMINATION),
    "item_variants": ("item_variants.parquet", schema.ITEM_VARIANTS),
    "prompts": ("prompts.parquet", schema.PROMPTS),
    "responses": ("responses/*/*.parquet", schema.RESPONSES),
    "judgements": ("judgements/*/*.parquet", schema.JUDGEMENTS),
    "scores": ("scores/*/*.parquet", schema.SCORES),
    "judge_reliability": ("judge_reliability/*/*.parquet", schema.JUDGE_RELIABILITY),
}

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


def build(db_path: Path, lake_dir: Path, sql_dir: Path) -> dict[str, int]:
    """Returns row counts per table and view."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own (two builders never share one), beside the target (same filesystem, so the
    # swap is a rename: a reader opens either the old file or the new one, never a mix).
    tmp = db_path.with_name(f"{db_path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.building")
    con = duckdb.connect(str(tmp))
    try:
        for table, (pattern, table_schema) in BASE_TABLES.items():
            _load_table(con, table, table_schema, sorted(str(p) for p in lake_dir.glob(pattern)))
        for sql_file in sql_files(sql_dir):
            con.execute(sql_file.read_text(encoding="utf-8"))
        build_paper_tables(con)
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                  for (name,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()}
        con.execute("CHECKPOINT")   # everything in the file itself, no write-ahead log beside it
        con.close()
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, db_path)
    except BaseException:
        con.close()
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
        raise
    return counts


def sql_files(sql_dir: Path) -> list[Path]:
    """The cross-benchmark SQL (sql/, in name order), then each card's own SQL, if any."""
    return sorted(sql_dir.glob("*.sql")) + [f for c in cards().values() for f in c.sql_files]


# One row per evaluated item (or unit) x model run: what the paper tables are computed from. An
# item asked of a model but not (yet) answered or scored has a null score: it counts in n_items,
# not in n_scored, so coverage shows it. Exactly one score per unit: the judge's where the card
# says its paper uses the judge ($judge_tasks, from `paper_scorer`) and the judge has a row for
# the response (a null one included: an unreadable verdict is not replaced by a rule score), else
# the rule's. Score files written before `kind` existed hold rule rows only.
UNITS_SQL = """
WITH runs AS (SELECT DISTINCT model, variant, setting FROM responses WHERE benchmark = $benchmark),
paper AS (
    SELECT s.* FROM scores s JOIN items i USING (item_id)
    WHERE s.benchmark = $benchmark
    QUALIFY row_number() OVER (
        PARTITION BY s.item_id, s.variant, s.setting, s.model
        ORDER BY coalesce(s.kind, 'rule') = CASE WHEN list_contains(CAST($judge_tasks AS VARCHAR[]), i.task)
                                                 THEN 'judge' ELSE 'rule' END DESC,
                 coalesce(s.kind, 'rule') = 'rule' DESC) = 1
)
SELECT p.item_id AS unit_id, r.model, p.variant, p.setting, i.split, i.task, i.task_group, i.domain,
       i.capability, json_extract_string(i.metadata, '$.group') AS "group",
       json_extract_string(i.metadata, '$.part') AS part, s.score, s.details,
       coalesce(a.max_tokens IS NOT NULL AND (p.max_tokens IS NULL OR a.max_tokens < p.max_tokens), false) AS capped
FROM prompts p
JOIN items i USING (item_id)
JOIN runs r ON r.variant = p.variant AND r.setting = p.setting
LEFT JOIN responses a ON a.item_id = p.item_id AND a.variant = p.variant AND a.setting = p.setting
                     AND a.model = r.model
LEFT JOIN paper s ON s.item_id = p.item_id AND s.variant = p.variant AND s.setting = p.setting
                 AND s.model = r.model
WHERE p.benchmark = $benchmark
"""


def paper_judge_tasks(con: duckdb.DuckDBPyConnection, bench) -> list[str]:
    """The benchmark's tasks whose paper number is the LLM judge's (its card's `paper_scorer`)."""
    tasks = con.execute("SELECT DISTINCT task FROM items WHERE benchmark = ?", [bench.name]).fetchall()
    return sorted(task for (task,) in tasks if bench.paper_scorer_for(task) == "judge")


def build_paper_tables(con: duckdb.DuckDBPyConnection) -> None:
    """`paper_tables` (every row of every card's tables, long form), one view per card table
    (`<benchmark>_<table>`), and `leaderboard`: the rows each card marks as its headline."""
    tables = {name: aggregate.load_tables(bench.folder / "tables.yaml") for name, bench in cards().items()}
    frames = []
    for name, bench in cards().items():
        units = con.execute(UNITS_SQL, {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}).df()
        if units.empty:
            continue
        units["score"] = units["score"].astype(object).where(units["score"].notna(), None)
        units["details"] = [json.loads(d) if isinstance(d, str) else {} for d in units["details"]]
        frames.append(aggregate.paper_tables(tables[name], name, units))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=aggregate.PAPER_TABLE_COLUMNS)
    con.register("paper_tables_frame", table)
    con.execute(f"CREATE OR REPLACE TABLE paper_tables AS SELECT {PAPER_TABLE_TYPES} FROM paper_tables_frame")
    con.unregister("paper_tables_frame")
    shown = ("model, split, variant, setting, row_label, metric, round(score, 2) AS score, round(ci_low, 2) AS ci_low, "
             "round(ci_high, 2) AS ci_high, n_scored, n_items, round(coverage, 4) AS coverage, capped, note")
    for name, card_tables in tables.items():
        for spec in card_tables.tables:
            con.execute(f'CREATE OR REPLACE VIEW "{name}_{spec.name}" AS SELECT {shown} FROM paper_tables '
                        f"WHERE benchmark = '{name}' AND table_name = '{spec.name}' "
                        "ORDER BY split, setting, variant, row_order, metric, model")
    con.execute(f"CREATE OR REPLACE VIEW leaderboard AS SELECT benchmark, table_name, row_order, {shown} "
                "FROM paper_tables WHERE headline ORDER BY benchmark, split, setting, variant, row_order, model")


PAPER_TABLE_TYPES = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in {
    "model": "VARCHAR", "variant": "VARCHAR", "setting": "VARCHAR", "split": "VARCHAR", "capped": "BOOLEAN",
    "benchmark": "VARCHAR", "table_name": "VARCHAR", "title": "VARCHAR", "row_order": "BIGINT",
    "row_label": "VARCHAR", "metric": "VARCHAR", "score": "DOUBLE", "ci_low": "DOUBLE", "ci_high": "DOUBLE",
    "n_items": "BIGINT", "n_scored": "BIGINT", "coverage": "DOUBLE", "headline": "BOOLEAN",
    "note": "VARCHAR"}.items())


def _load_table(con: duckdb.DuckDBPyConnection, table: str, table_schema: pa.Schema, files: list[str]) -> None:
    """The table is created from its declared schema, then filled by column name: its types never
    depend on what the files happen to hold (a file written before the lake kept its schema has
    Arrow `null` columns). A declared column missing from every file is left null; a column that is
    not declared is not published."""
    con.register("declared", table_schema.empty_table())
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM declared")
    con.unregister("declared")
    if not files:
        return
    present = set().union(*(pq.read_schema(f).names for f in files))
    columns = ", ".join(f'"{name}"' for name in table_schema.names if name in present)
    source = f"(SELECT {columns} FROM read_parquet(?, union_by_name=true))"
    query = CURRENT_ONLY.get(table, "SELECT * FROM {src}").format(src=source)
    con.execute(f"INSERT INTO {table} BY NAME {query}", [files])


def connect_readonly(db_path: Path) -> duckdb.DuckDBPyConnection:
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True)
