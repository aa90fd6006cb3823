"""Building the DuckDB warehouse from the parquet lake, then the views and aggregates in sql/.

The warehouse is rebuilt into a temporary file and swapped in, so a reader (`wenheng query`,
a notebook) never sees a half-built database and DuckDB's single writer is never contended."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import schema

# warehouse table -> (lake glob relative to the lake dir, schema used when no file exists yet)
BASE_TABLES: dict[str, tuple[str, pa.Schema]] = {
    "items": ("items.parquet", schema.ITEMS),
    "quarantine": ("quarantine.parquet", schema.QUARANTINE),
    "corrections_audit": ("corrections_audit.parquet", schema.CORRECTIONS_AUDIT),
    "dedup_clusters": ("dedup_clusters.parquet", schema.DEDUP_CLUSTERS),
    "contamination": ("contamination.parquet", schema.CONTAMINATION),
    "item_variants": ("item_variants.parquet", schema.ITEM_VARIANTS),
    "responses": ("responses/*/*.parquet", schema.RESPONSES),
    "scores": ("scores/*/*.parquet", schema.SCORES),
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
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_parquet(?, union_by_name=true)", [files])
            else:
                con.register("empty_table", table_schema.empty_table())
                con.execute(f"CREATE TABLE {table} AS SELECT * FROM empty_table")
                con.unregister("empty_table")
        for sql_file in sorted(sql_dir.glob("*.sql")):
            con.execute(sql_file.read_text(encoding="utf-8"))
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                  for (name,) in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()}
    finally:
        con.close()
    os.replace(tmp, db_path)
    return counts


def connect_readonly(db_path: Path) -> duckdb.DuckDBPyConnection:
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True)
