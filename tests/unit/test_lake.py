"""The parquet lake IO manager: one file per partition with the declared schema, one or many
partitions loaded (missing ones skipped where the input allows it)."""

import dagster as dg
import pyarrow.parquet as pq

from pipeline import schema
from resources.lake import ParquetLakeIOManager, partition_file

PARTS = dg.StaticPartitionsDefinition(["aceval", "wenmind", "wyweb"])


def _quarantined(benchmark: str) -> list[dict]:
    return [{"benchmark": benchmark, "source_file": f"{benchmark}.jsonl", "source_locator": str(i), "reason": "bad",
             "raw": "{}"} for i in range(2)]


@dg.asset(partitions_def=PARTS, io_manager_key="lake")
def quarantine(context: dg.AssetExecutionContext):
    return schema.to_frame(_quarantined(context.partition_key), schema.QUARANTINE)


@dg.asset(io_manager_key="lake", ins={"quarantine": dg.AssetIn(metadata={"allow_missing_partitions": True})})
def contamination(quarantine: dict):
    assert sorted(quarantine) == ["aceval", "wenmind"]          # wyweb was never written
    assert all(schema.records(frame) == _quarantined(key) for key, frame in quarantine.items())
    return schema.to_frame([], schema.CONTAMINATION)


@dg.asset(partitions_def=PARTS, io_manager_key="lake")
def dedup_clusters(context: dg.AssetExecutionContext, quarantine):
    assert schema.records(quarantine) == _quarantined(context.partition_key)
    return schema.to_frame([], schema.DEDUP_CLUSTERS)


def test_partitions_are_written_and_read_back(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    resources = {"lake": ParquetLakeIOManager(lake_dir=str(tmp_path))}
    for key in ("aceval", "wenmind"):
        assert dg.materialize([quarantine], partition_key=key, resources=resources, instance=instance).success
    assert dg.materialize([quarantine.to_source_asset(), contamination], resources=resources,
                          instance=instance).success
    result = dg.materialize([quarantine.to_source_asset(), dedup_clusters], partition_key="wenmind",
                            resources=resources, instance=instance)
    assert result.success
    written = pq.read_table(partition_file(tmp_path, "quarantine", "wenmind"))
    assert written.schema.remove_metadata() == schema.QUARANTINE and written.num_rows == 2
    assert pq.read_table(tmp_path / "contamination.parquet").schema.remove_metadata() == schema.CONTAMINATION
    materialization = result.asset_materializations_for_node("dedup_clusters")[0]
    assert materialization.metadata["path"].value == str(partition_file(tmp_path, "dedup_clusters", "wenmind"))
    assert materialization.metadata["rows"].value == 0


def test_a_missing_partition_is_an_error_unless_allowed(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    resources = {"lake": ParquetLakeIOManager(lake_dir=str(tmp_path))}
    result = dg.materialize([quarantine.to_source_asset(), dedup_clusters], partition_key="wyweb",
                            resources=resources, instance=instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "materialize quarantine first" in str(failure.event_specific_data.error)


def test_a_written_frame_is_not_also_kept_in_the_run_result(tmp_path):
    """execute_in_process keeps each step's output for its result until the run ends; the lake
    drops that copy once the file is written (resources/lake.py `_drop_captured`). If Dagster
    renames what it keeps, this fails instead of the memory quietly growing back."""
    instance = dg.DagsterInstance.ephemeral()
    resources = {"lake": ParquetLakeIOManager(lake_dir=str(tmp_path))}
    result = dg.materialize([quarantine], partition_key="aceval", resources=resources, instance=instance)
    assert result.success
    assert result.output_for_node("quarantine") is None
    assert schema.records(pq.read_table(partition_file(tmp_path, "quarantine", "aceval")).to_pandas()) \
        == _quarantined("aceval")
