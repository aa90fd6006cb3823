"""Running the graph in-process, in three phases that match the three jobs:
prepare (unpartitioned) -> evaluate (one run per benchmark x model partition) -> publish.

Runs go into the Dagster instance at $DAGSTER_HOME, so `dagster dev` shows them afterwards.
Partitions of one model run back to back in this process, so a local model loads once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunSummary:
    ok: bool = True
    # one entry per materialization: asset, partition, metadata values
    materializations: list[dict[str, Any]] = field(default_factory=list)

    def metadata(self, asset: str, partition: str | None = None) -> dict[str, Any]:
        for m in reversed(self.materializations):
            if m["asset"] == asset and m["partition"] == partition:
                return m["metadata"]
        raise KeyError(f"{asset} [{partition}] was not materialized")


def run_pipeline(benchmarks: list[str], models: list[str], selection: str | None = None,
                 log: Callable[[str], None] = print) -> RunSummary:
    import dagster as dg

    from assets.evaluate import models_partitions
    from pipeline.definitions import defs

    instance = dg.DagsterInstance.get()
    known = set(instance.get_dynamic_partitions(models_partitions.name))
    missing = [m for m in models if m not in known]
    if missing:
        instance.add_dynamic_partitions(models_partitions.name, missing)
    graph = defs.resolve_asset_graph()
    chosen = (dg.AssetSelection.from_string(selection) if selection else dg.AssetSelection.all()).resolve(graph)
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    summary = RunSummary()

    def execute(job_name: str, partition_key=None) -> bool:
        job = defs.resolve_job_def(job_name)
        keys = chosen & {k for k in graph.get_all_asset_keys()
                         if job_name == "prepare" and k.path[0] not in (*EVALUATE_ASSETS, "warehouse")
                         or job_name == "evaluate" and k.path[0] in EVALUATE_ASSETS
                         or job_name == "publish" and k.path[0] == "warehouse"}
        if not keys:
            return True
        result = job.execute_in_process(instance=instance, partition_key=partition_key, asset_selection=list(keys),
                                        run_config=run_config, raise_on_error=False)
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            values = {k: v.value for k, v in mat.metadata.items()}
            summary.materializations.append(
                {"asset": mat.asset_key.to_user_string(), "partition": mat.partition, "metadata": values})
            shown = {k: v for k, v in values.items() if k in _SHOWN}
            log(f"  {mat.asset_key.to_user_string()}{' [' + mat.partition + ']' if mat.partition else ''} {shown}")
        for event in result.all_events:
            if event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed:
                evaluation = event.event_specific_data
                log(f"  check {evaluation.check_name} on {evaluation.asset_key.to_user_string()} did not pass")
        if not result.success:
            for event in result.all_events:
                if event.is_failure:
                    log(f"  FAILED: {event.message}")
        return result.success

    log("prepare: sources -> items -> dedup -> variants -> prompts")
    summary.ok = execute("prepare")
    if not summary.ok:
        return summary
    for model in models:
        for benchmark in benchmarks:
            log(f"evaluate: {benchmark} x {model}")
            summary.ok &= execute("evaluate", dg.MultiPartitionKey({"benchmark": benchmark, "model": model}))
    log("publish: warehouse")
    summary.ok &= execute("publish")
    return summary


_SHOWN = {"rows", "items", "quarantined", "prompts", "cache_hits", "prompts_sent", "errors",
          "output_tokens_per_s", "scored", "mean_score", "pairs", "judged", "judge_calls_sent", "unparseable"}
# The partitioned assets of the evaluate job, in the order they run.
EVALUATE_ASSETS = ("responses", "judgements", "scores", "judge_reliability")
