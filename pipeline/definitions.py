"""The one Definitions object: assets, resources, jobs, schedule and sensor.

Loaded by `dagster dev -w workspace.yaml` and by `wenheng run` alike."""

from __future__ import annotations

import warnings

import dagster as dg

from assets.evaluate import models_partitions, responses, scores
from assets.items import dedup, item_variants, prompts, standardized_items
from assets.judge import judge_reliability, judgements
from assets.sources import raw_assets
from assets.warehouse import warehouse
from pipeline import paths
from pipeline.config import ConfigError, load_models
from pipeline.sources.ingest import fingerprint
from resources.engines import ModelsResource, SourcesResource, WarehouseResource
from resources.lake import ParquetLakeIOManager

# Output(data_version=...) is marked beta; it is what lets unchanged data leave downstream fresh.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

prepare_job = dg.define_asset_job(
    "prepare", selection=dg.AssetSelection.groups("sources", "items"),
    description="Sources -> items -> dedup -> script variants -> prompts.")
evaluate_job = dg.define_asset_job(
    "evaluate", selection=dg.AssetSelection.assets(responses, judgements, scores, judge_reliability),
    description="One benchmark x model partition: inference through the response cache, the LLM judge "
                "(when models.yaml names one for the benchmark), scoring, the judge's reliability.")
publish_job = dg.define_asset_job(
    "publish", selection=dg.AssetSelection.assets(warehouse),
    description="Load the lake into data/warehouse.duckdb and build sql/ views.")

# Nightly rebuild of the inputs; responses, scores and the warehouse follow through their
# eager automation conditions, and the response cache keeps unchanged prompts free.
nightly_rebuild = dg.ScheduleDefinition(name="nightly_rebuild", job=prepare_job, cron_schedule="0 3 * * *")


@dg.sensor(minimum_interval_seconds=60, description="Adds a model partition for each entry of models.yaml.")
def models_sensor(context: dg.SensorEvaluationContext):
    try:
        names = sorted(load_models(paths.models_file()))
    except ConfigError as exc:
        return dg.SkipReason(str(exc))
    known = set(context.instance.get_dynamic_partitions(models_partitions.name))
    new = [n for n in names if n not in known]
    if not new:
        return dg.SkipReason("every configured model already has partitions")
    return dg.SensorResult(dynamic_partitions_requests=[models_partitions.build_add_request(new)])


@dg.sensor(job=prepare_job, minimum_interval_seconds=60,
           description="Re-runs `prepare` when a source file, the sources file or a corrections file changes; "
                       "responses, scores and the warehouse follow through their automation conditions.")
def source_changes_sensor(context: dg.SensorEvaluationContext):
    try:
        current = fingerprint(paths.sources_file(), paths.corrections_dir())
    except (ConfigError, OSError) as exc:
        return dg.SkipReason(f"cannot read the sources: {exc}")
    if current == context.cursor:
        return dg.SkipReason("no source or correction has changed")
    context.update_cursor(current)
    return dg.RunRequest(run_key=current)


defs = dg.Definitions(
    assets=[*raw_assets, standardized_items, dedup, item_variants, prompts, responses, judgements, scores,
            judge_reliability, warehouse],
    jobs=[prepare_job, evaluate_job, publish_job],
    schedules=[nightly_rebuild],
    sensors=[models_sensor, source_changes_sensor],
    resources={
        "lake": ParquetLakeIOManager(),
        "sources": SourcesResource(),
        "models": ModelsResource(),
        "warehouse_db": WarehouseResource(),
    },
)
