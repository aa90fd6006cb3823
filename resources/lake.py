"""Parquet IO manager: an unpartitioned asset is `<asset>.parquet` under the lake dir, a
benchmark partition `<asset>/<benchmark>.parquet` and a benchmark x model partition
`<asset>/<benchmark>/<model>.parquet`. The warehouse reads the same
files with DuckDB, so nothing is stored twice.

Every file is written with its table's declared Arrow schema (pipeline/schema.py), never with the
types pandas would infer: an empty or all-null column stays `string`, `int64`, ... instead of
Arrow `null` (which DuckDB reads as type "NULL").

Built on Dagster's UPathIOManager, which already lays a multi-partition out as one directory per
dimension in dimension-name order (`benchmark/model`) and loads one or many upstream partitions;
this class adds the schema, atomic writes and the row count. (The base class's per-file debug
lines are events the run would store; the instance's `python_log_level: INFO` keeps them out.)"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from pipeline import paths

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from upath import UPath

RAW_PREFIX = "raw_"   # raw_items holds schema.RAW_ROWS


def _is_frame(_context, value) -> bool:
    pandas = sys.modules.get("pandas")   # not imported yet: nothing is a DataFrame
    return pandas is not None and isinstance(value, pandas.DataFrame)


# What a lake asset passes and is passed: a pandas DataFrame. A Dagster type of its own, not the
# annotation `pd.DataFrame`, because Dagster resolves the assets' annotations as the definitions
# load, and pandas costs 0.35 s of start-up.
Frame = dg.DagsterType(name="DataFrame", type_check_fn=_is_frame,
                       description="A pandas DataFrame, stored as a Parquet file of the lake.")


def partition_file(lake_dir: Path, asset: str, *partition: str) -> Path:
    """Where the lake keeps one partition of an asset (the layout UPathIOManager writes):
    `items/aceval.parquet`, `responses/aceval/oracle.parquet`."""
    return lake_dir.joinpath(asset, *partition[:-1], f"{partition[-1]}{ParquetLake.extension}")


def lake_schema(asset_key: dg.AssetKey) -> pa.Schema:
    """The Arrow schema an asset's lake files are written with: the table of the same name in
    pipeline/schema.py (items -> ITEMS, corrections_audit -> CORRECTIONS_AUDIT, ...)."""
    import pyarrow as pa

    from pipeline import schema

    name = asset_key.path[-1]
    if name.startswith(RAW_PREFIX):
        return schema.RAW_ROWS
    declared = getattr(schema, name.upper(), None)
    if not isinstance(declared, pa.Schema):
        raise KeyError(f"asset {asset_key.to_user_string()} has no lake schema: pipeline/schema.py must "
                       f"define {name.upper()} (a pyarrow schema)")
    return declared


def to_arrow(frame: pd.DataFrame, table_schema: pa.Schema) -> pa.Table:
    """A frame -> an Arrow table with exactly `table_schema`; a missing or extra column is an error
    (pyarrow would silently drop an extra one)."""
    import pyarrow as pa

    missing = [n for n in table_schema.names if n not in frame.columns]
    extra = [c for c in frame.columns if c not in table_schema.names]
    if missing or extra:
        raise ValueError(f"frame does not match its schema: missing {missing}, not in schema {extra}")
    return pa.Table.from_pandas(frame, schema=table_schema, preserve_index=False)


class ParquetLake(dg.UPathIOManager):
    extension = ".parquet"

    def dump_to_path(self, context: dg.OutputContext, obj: pd.DataFrame | None, path: UPath) -> None:
        if obj is None:
            return
        from pipeline.lake_health import write_table

        table = to_arrow(obj, lake_schema(context.asset_key))
        # Written beside the target under a name no other writer uses (and the warehouse's
        # `*.parquet` globs skip), then renamed over it: a crash never leaves a half-written file.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        try:
            with tmp.open("wb") as f:
                write_table(table, f)   # with its digest in the footer: damage is found (pipeline/lake_health.py)
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _drop_captured(context)

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: materialize {context.asset_key.to_user_string()} first")
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pandas()

    def get_metadata(self, context: dg.OutputContext, obj: pd.DataFrame | None) -> dict[str, dg.MetadataValue]:
        if obj is None:
            return {}
        columns = [dg.TableColumn(f.name, str(f.type)) for f in lake_schema(context.asset_key)]
        return {"rows": dg.MetadataValue.int(len(obj)),
                "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns=columns))}


def _drop_captured(context: dg.OutputContext) -> None:
    """execute_in_process (how `wenheng run` runs each phase) keeps every step's output in memory
    for its result until the run ends: a prepare run would hold all of its stages' frames at once
    (some 45 MB for AC-EVAL), and longer, as Dagster keeps the first step context that built an
    asset check result alive for the process's lifetime. The runner never reads those outputs and
    the frame is in the lake now: the result keeps None for it."""
    try:
        capture = context.step_context.output_capture
    except dg.DagsterInvariantViolationError:   # a context built outside a run (tests)
        return
    for handle in [h for h in capture or () if h.step_key == context.step_key and h.output_name == context.name]:
        capture[handle] = None


class ParquetLakeIOManager(dg.ConfigurableIOManagerFactory):
    """Files live under data/lake (or WENHENG_LAKE), where the warehouse build reads them."""

    lake_dir: str = ""   # empty: data/lake (or WENHENG_LAKE)

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetLake:
        # imported here: 0.08 s of start-up, needed only once a run starts
        from upath import UPath

        return ParquetLake(base_path=UPath(Path(self.lake_dir).expanduser().resolve() if self.lake_dir
                                           else paths.lake_dir()))
