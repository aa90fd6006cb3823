"""What Dagster itself costs a rebuild: the floor under `perf/incremental.py`.

A one-benchmark rebuild through `wenheng run` is three runs: prepare[benchmark] (6 steps, 8 assets,
4 checks), evaluate[benchmark x model] (5 steps, 2 checks) and publish (3 steps, 1 check). This
script builds the same graph shape (the same partitions definitions, inputs, partition mappings,
data versions, checks, the lake IO manager) with assets that do nothing but pass one-row frames,
on a fresh instance configured as wenheng's (.dagster_home/dagster.yaml), and times those three
runs as pipeline.runner executes them (in process, the garbage collector's long-lived heap
frozen). Whatever a rebuild costs above this figure is wenheng's own work.

    .venv/bin/python perf/dagster_floor.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(lake: str):
    import dagster as dg
    import pandas as pd

    from pipeline import schema
    from resources.lake import ParquetLakeIOManager, lake_schema

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    benchmarks = dg.StaticPartitionsDefinition(["wenmind", "aceval", "wyweb", "fuxi", "cpdue"])
    models = dg.DynamicPartitionsDefinition(name="models")
    pairs = dg.MultiPartitionsDefinition({"benchmark": benchmarks, "model": models})
    by_benchmark = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="benchmark")

    def empty(name: str) -> pd.DataFrame:   # a file with the asset's declared schema and no rows
        return schema.to_frame([], lake_schema(dg.AssetKey(name)))

    def out(name: str):
        return dg.Output(empty(name), data_version=dg.DataVersion("1"), metadata={"rows": 0})

    def check(name, asset, parts=benchmarks):
        return dg.AssetCheckSpec(name, asset=asset, partitions_def=parts)

    common = {"io_manager_key": "lake", "code_version": "1"}

    @dg.asset(partitions_def=benchmarks, check_specs=[check("rows_reconcile", "raw_items")], **common)
    def raw_items():
        yield out("raw_items")
        yield dg.AssetCheckResult(check_name="rows_reconcile", passed=True)

    @dg.multi_asset(outs={n: dg.AssetOut(io_manager_key="lake", code_version="1")
                          for n in ("items", "quarantine", "corrections_audit")},
                    partitions_def=benchmarks, can_subset=False,
                    check_specs=[check("corrections_apply", "corrections_audit"), check("data_quality", "items")])
    def standardized_items(raw_items):
        for name in ("items", "quarantine", "corrections_audit"):
            yield dg.Output(empty(name), output_name=name, data_version=dg.DataVersion("1"))
        yield dg.AssetCheckResult(asset_key="corrections_audit", check_name="corrections_apply", passed=True)
        yield dg.AssetCheckResult(asset_key="items", check_name="data_quality", passed=True)

    @dg.asset(partitions_def=benchmarks, **common)
    def item_signatures(items):
        return out("item_signatures")

    @dg.asset(partitions_def=benchmarks, check_specs=[check("consistent_gold", "dedup_clusters")], **common)
    def dedup_clusters(items, item_signatures):
        yield out("dedup_clusters")
        yield dg.AssetCheckResult(check_name="consistent_gold", passed=True)

    @dg.asset(partitions_def=benchmarks, **common)
    def item_variants(items):
        return out("item_variants")

    @dg.asset(partitions_def=benchmarks, **common)
    def prompts(items, item_variants, dedup_clusters):
        return out("prompts")

    item_ins = {"items": dg.AssetIn("items", partition_mapping=by_benchmark)}

    @dg.asset(partitions_def=pairs, ins=item_ins, **common)
    def model_inputs(items):
        return out("model_inputs")

    @dg.asset(partitions_def=pairs, check_specs=[check("error_rate", "responses", pairs)],
              ins={"prompts": dg.AssetIn("prompts", partition_mapping=by_benchmark)}, **common)
    def responses(prompts, model_inputs):
        yield out("responses")
        yield dg.AssetCheckResult(check_name="error_rate", passed=True)

    @dg.asset(partitions_def=pairs, check_specs=[check("verdict_rate", "judgements", pairs)], ins=item_ins,
              **common)
    def judgements(responses, items):
        yield out("judgements")
        yield dg.AssetCheckResult(check_name="verdict_rate", passed=True)

    @dg.asset(partitions_def=pairs, ins=item_ins, **common)
    def scores(responses, judgements, items):
        return out("scores")

    @dg.asset(partitions_def=pairs, **common)
    def judge_reliability(judgements, scores):
        return out("judge_reliability")

    @dg.asset(deps=["items", "item_signatures"], **common)
    def contamination():
        return out("contamination")

    @dg.asset(deps=["items", "scores", "judgements", contamination], code_version="1",
              check_specs=[dg.AssetCheckSpec("scores_match_responses", asset="warehouse")])
    def warehouse():
        yield dg.MaterializeResult(metadata={"rows": 1})
        yield dg.AssetCheckResult(check_name="scores_match_responses", passed=True)

    @dg.multi_asset(specs=[dg.AssetSpec(name, deps=[warehouse], code_version="1")
                           for name in ("leaderboard", "paper_tables_wenmind")], can_subset=True)
    def score_tables(context):
        for key in context.selected_asset_keys:
            yield dg.MaterializeResult(asset_key=key, metadata={"rows": 1})

    prepare = [raw_items, standardized_items, item_signatures, dedup_clusters, item_variants, prompts]
    evaluate = [model_inputs, responses, judgements, scores, judge_reliability]
    publish = [contamination, warehouse, score_tables]
    defs = dg.Definitions(
        assets=prepare + evaluate + publish,
        jobs=[dg.define_asset_job("prepare", selection=dg.AssetSelection.assets(*prepare)),
              dg.define_asset_job("evaluate", selection=dg.AssetSelection.assets(*evaluate)),
              dg.define_asset_job("publish", selection=dg.AssetSelection.assets(*publish))],
        resources={"lake": ParquetLakeIOManager(lake_dir=lake)})
    return defs, models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wenheng-floor-"))
    try:
        home = work / "dagster_home"
        home.mkdir()
        shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
        import dagster as dg

        defs, models = build(str(work / "lake"))
        instance = dg.DagsterInstance.get()
        instance.add_dynamic_partitions(models.name, ["served"])
        quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
        runs = [("prepare", "wenmind"), ("evaluate", dg.MultiPartitionKey({"benchmark": "wenmind", "model": "served"})),
                ("publish", None)]
        seconds = []
        for _ in range(args.repeat + 1):   # the first is a warm-up (imports, the jobs' first resolution)
            started = time.perf_counter()
            gc.freeze()
            for job, partition in runs:
                result = defs.resolve_job_def(job).execute_in_process(
                    instance=instance, partition_key=partition, run_config=quiet, raise_on_error=True)
                assert result.success
            gc.unfreeze()
            seconds.append(time.perf_counter() - started)
        best, worst = min(seconds[1:]), max(seconds[1:])
        print(f"Dagster's floor for a one-benchmark rebuild (3 runs, 14 steps, 7 checks, no work): "
              f"{best:.2f}-{worst:.2f} s over {args.repeat} repeats (load {os.getloadavg()[0]:.1f}, "
              f"{os.cpu_count()} cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
