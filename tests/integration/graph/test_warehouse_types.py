"""Lake files keep their declared Arrow schema and warehouse columns their declared types, even
where a column holds no value at all (an empty quarantine, a response without error)."""

from __future__ import annotations

import dagster as dg
import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import paths, schema
from pipeline.warehouse import BASE_TABLES, build
from resources.lake import lake_schema, to_arrow

# Every base table of the warehouse, with the schema pipeline/schema.py declares under its name.
DECLARED = {table: getattr(schema, table.upper()) for table in BASE_TABLES}
DUCKDB_TYPES = {
    pa.string(): "VARCHAR", pa.list_(pa.string()): "VARCHAR[]", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
    pa.list_(pa.float64()): "DOUBLE[]", pa.bool_(): "BOOLEAN", pa.timestamp("us", tz="UTC"): "TIMESTAMP WITH TIME ZONE",
}


def duckdb_columns(table_schema: pa.Schema) -> list[tuple[str, str]]:
    return [(f.name, DUCKDB_TYPES[f.type]) for f in table_schema]


def arrow_columns(table_schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in table_schema]


@pytest.fixture(scope="module")
def baseline_run(baseline_build):
    """The session's baseline build (tests/conftest.py), only read here: its folder and its warehouse."""
    con = duckdb.connect(str(baseline_build.root / "warehouse.duckdb"), read_only=True)
    yield baseline_build.root, con
    con.close()


def test_every_base_table_is_declared_in_the_schema_module():
    assert {"items", "quarantine", "corrections_audit", "dedup_clusters", "contamination", "item_variants",
            "prompts", "responses", "scores"} <= set(DECLARED)
    assert {t: s for t, (_, s) in BASE_TABLES.items()} == DECLARED
    assert {t: lake_schema(dg.AssetKey(t)) for t in DECLARED} == DECLARED
    assert lake_schema(dg.AssetKey("raw_wenmind")) == schema.RAW_ROWS
    assert set(DUCKDB_TYPES) >= {f.type for s in DECLARED.values() for f in s}
    with pytest.raises(KeyError, match="BENCHMARKS"):
        lake_schema(dg.AssetKey("benchmarks"))   # a name in pipeline/schema.py that is not a table


def test_lake_files_keep_the_declared_schema(baseline_run):
    lake = baseline_run[0] / "lake"
    files = sorted(lake.rglob("*.parquet"))
    assets = {f.relative_to(lake).parts[0].removesuffix(".parquet") for f in files}
    assert assets >= {"items", "quarantine", "contamination", "responses", "scores"}
    assert any(a.startswith("raw_") for a in assets)   # raw rows: raw_items/<benchmark> (or raw_<benchmark>)
    for f in files:
        asset = f.relative_to(lake).parts[0].removesuffix(".parquet")
        assert arrow_columns(pq.read_schema(f)) == arrow_columns(lake_schema(dg.AssetKey(asset))), f
    assert not [p for p in lake.rglob("*") if p.is_file() and p.suffix != ".parquet"]   # no temp file left


def test_warehouse_columns_have_the_declared_types(baseline_run):
    _, con = baseline_run
    for table, table_schema in DECLARED.items():
        columns = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?"
                              " ORDER BY ordinal_position", [table]).fetchall()
        assert columns == duckdb_columns(table_schema), table


def test_no_column_is_null_typed(baseline_run):
    _, con = baseline_run
    # The baseline engines never fail, so `error` has no value at all: the case that used to turn "NULL".
    assert con.execute("SELECT count(*) > 0 AND count(error) = 0 FROM responses").fetchone()[0]
    untyped = con.execute("""SELECT table_name, column_name FROM information_schema.columns
        WHERE data_type IN ('"NULL"', 'NULL')""").fetchall()
    assert untyped == []


def test_the_warehouse_types_columns_of_untyped_lake_files(workdir):
    """A lake file written before the IO manager kept the schema (all-null columns typed `null`, an
    undeclared column, a declared one missing) still publishes exactly the declared columns."""
    lake = workdir / "lake"
    lake.mkdir()
    pd.DataFrame({"benchmark": [None], "source_file": [None], "source_locator": [None], "reason": [None],
                  "extra": [1]}).to_parquet(lake / "quarantine.parquet", index=False)
    assert pq.read_schema(lake / "quarantine.parquet").field("reason").type == pa.null()
    counts = build(workdir / "warehouse.duckdb", lake, paths.SQL_DIR)
    assert counts["quarantine"] == 1
    con = duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True)
    try:
        columns = con.execute("SELECT column_name, data_type FROM information_schema.columns"
                              " WHERE table_name = 'quarantine' ORDER BY ordinal_position").fetchall()
    finally:
        con.close()
    assert columns == duckdb_columns(schema.QUARANTINE)


def test_a_frame_that_does_not_match_its_schema_is_not_written():
    frame = schema.to_frame([], schema.QUARANTINE)
    assert to_arrow(frame, schema.QUARANTINE).schema.remove_metadata() == schema.QUARANTINE
    with pytest.raises(ValueError, match="not in schema"):
        to_arrow(frame.assign(extra=[]), schema.QUARANTINE)
    with pytest.raises(ValueError, match="missing"):
        to_arrow(frame.drop(columns=["raw"]), schema.QUARANTINE)


def test_every_lake_asset_has_a_schema():
    from pipeline.definitions import defs

    for assets_def in defs.resolve_asset_graph().assets_defs:
        for key in assets_def.keys:
            if assets_def.get_io_manager_key_for_asset_key(key) == "lake":
                assert lake_schema(key) is not None
