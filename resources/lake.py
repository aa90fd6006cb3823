"""Parquet IO manager: each asset is one parquet file under the lake dir; a partition of a
benchmark x model asset is `<asset>/<benchmark>/<model>.parquet`. The warehouse reads the same
files with DuckDB, so nothing is stored twice."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq

from pipeline import paths


class ParquetLakeIOManager(dg.ConfigurableIOManager):
    """Files live under data/lake (or WENHENG_LAKE), where the warehouse build reads them."""

    def _root(self) -> Path:
        return paths.lake_dir()

    def _path(self, asset_key: dg.AssetKey, partition_key: str | None) -> Path:
        name = "/".join(asset_key.path)
        if partition_key is None:
            return self._root() / f"{name}.parquet"
        parts = partition_key.split("|")   # multi-partition keys: "benchmark|model"
        return self._root() / name / Path(*parts[:-1]) / f"{parts[-1]}.parquet"

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        key = context.asset_partition_key if context.has_asset_partitions else None
        path = self._path(context.asset_key, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        obj.to_parquet(tmp, index=False)
        tmp.replace(path)   # atomic: a crash never leaves a half-written file behind
        context.add_output_metadata({"rows": len(obj), "path": dg.MetadataValue.path(str(path))})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        key = context.asset_partition_key if context.has_asset_partitions else None
        path = self._path(context.asset_key, key)
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: materialize {context.asset_key.to_user_string()} first")
        return pq.read_table(path).to_pandas()
