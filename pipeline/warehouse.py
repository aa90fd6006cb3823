"""Building the DuckDB warehouse from the parquet lake, then the views and aggregates in sql/.

The warehouse is rebuilt into a temporary file and swapped in, so a reader (`wenheng query`,
a notebook) never sees a half-built database and DuckDB's single writer is never contended."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import schema
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
    "scores": ("scores/*/*.parquet", schema.SCORES),
}

# Partition files outlive the items they answered (a source was corrected, a sample set swapped
# for the real files). Only responses to the current prompts, and their scores, are published.
CURRENT_ONLY = {
    "responses": "SELECT * FROM {src} r WHERE EXISTS (SELECT 1 FROM prompts p WHERE p.item_id = r.item_id"
                 " AND p.variant = r.variant AND p.setting = r.setting AND p.prompt_hash = r.prompt_hash)",
    "scores": "SELECT * FROM {src} s WHERE EXISTS (SELECT 1 FROM responses r WHERE r.item_id = s.item_id"
              " AND r.variant = s.variant AND r.setting = s.setting AND r.model = s.model)",
}


def build(db_path: Path, lake_dir: Path, sql_dir: Path) -> dict[str, int]:
    """Returns row counts per table and view."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_name(db_path.name + ".building")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        for table, (pattern, table_schema) in BASE_TABLES.items():
            files = sorted(str(p) for p in lake_dir.glob(pattern))
            if files:
                source = "read_parquet(?, union_by_name=true)"
                query = CURRENT_ONLY.get(table, "SELECT * FROM {src}").format(src=source)
                con.execute(f"CREATE TABLE {table} AS {query}", [files])
            else:
                con.register("empty_table", table_schema.empty_table())
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM empty_table")
                con.unregister("empty_table")
        for sql_file in sql_files(sql_dir):
            con.execute(sql_file.read_text(encoding="utf-8"))
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                  for (name,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()}
    finally:
        con.close()
    os.replace(tmp, db_path)
    return counts


def sql_files(sql_dir: Path) -> list[Path]:
    """The cross-benchmark SQL (sql/, in name order), then each card's own aggregation SQL."""
    return sorted(sql_dir.glob("*.sql")) + [f for c in cards().values() for f in c.sql_files]


def connect_readonly(db_path: Path) -> duckdb.DuckDBPyConnection:
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True)
