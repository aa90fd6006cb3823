"""The one Definitions object: assets, resources, jobs, schedule and sensors.

Loaded by `dagster dev -w workspace.yaml` and by `wenheng run` alike."""

from __future__ import annotations

import os
import warnings

import dagster as dg

from assets.contamination import corpora_partitions, corpus_files, corpus_overlap, item_ngrams
from assets.evaluate import model_inputs, model_settings, models_partitions, responses, scores
from assets.items import contamination, dedup_clusters, item_signatures, item_variants, prompts, standardized_items
from assets.judge import judge_reliability, judge_validity, judgements
from assets.sources import (
    benchmark_corrections,
    benchmark_files,
    dedup_settings,
    index_settings,
    prompt_settings,
    raw_items,
)
from assets.warehouse import score_tables, warehouse
from pipeline import paths
from pipeline.config import ConfigError, load_models
from pipeline.corrections import CorrectionsError
from pipeline.executors import executor_from_env
from pipeline.groups import CORPORA, EVALUATE, ITEMS, SOURCES, WAREHOUSE
from pipeline.settings import Settings
from resources.engines import CorporaResource, ModelsResource, SourcesResource, WarehouseResource
from resources.lake import ParquetLakeIOManager

# Output(data_version=...) is marked beta; it is what lets unchanged data leave downstream fresh.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

# The files the resources use, as environment variables the UI shows by name (dg.EnvVar).
# Their names are pipeline/settings.py's.
PATH_VARIABLES = {Settings.sources.name: paths.sources_file, Settings.models.name: paths.models_file,
                  Settings.corpora.name: paths.corpora_file,
                  Settings.warehouse.name: paths.warehouse_file, Settings.cache.name: paths.cache_dir,
                  Settings.lake.name: paths.lake_dir}


def export_path_defaults() -> None:
    """Each path variable is exported as pipeline.paths resolves it (its value, else its default),
    so the EnvVar-configured resources resolve with no environment set up. Called at import and
    before every run."""
    for name, resolved in PATH_VARIABLES.items():
        os.environ[name] = str(resolved())


export_path_defaults()

ASSETS = [benchmark_files, benchmark_corrections, prompt_settings, dedup_settings, index_settings, raw_items,
          standardized_items, item_signatures, dedup_clusters, contamination, item_variants, prompts, item_ngrams,
          model_settings, model_inputs, responses, judgements, scores, judge_reliability, judge_validity, corpus_files,
          corpus_overlap,
          warehouse, score_tables]


def _in_groups(*groups: str) -> list[dg.AssetsDefinition]:
    return [asset for asset in ASSETS if set(asset.group_names_by_key.values()) & set(groups)]


def _unpartitioned(*groups: str) -> dg.AssetSelection:
    """The assets of `groups` that no partition splits: contamination, which reads every benchmark."""
    return dg.AssetSelection.assets(*(asset for asset in _in_groups(*groups) if asset.partitions_def is None))


# Each job is its groups. A partitioned run materializes the job's assets partitioned as the job is
# (`job_assets`): prepare's item stages per benchmark; contamination (across benchmarks,
# unpartitioned) runs in the publish run, whoever launches it (pipeline/staleness.py).
prepare_job = dg.define_asset_job(
    "prepare", selection=dg.AssetSelection.groups(SOURCES, ITEMS),
    description="One benchmark: sources -> items -> dedup clusters -> script variants -> prompts, and its "
                "contamination n-gram index (item_ngrams); contamination across benchmarks.")
evaluate_job = dg.define_asset_job(
    "evaluate", selection=dg.AssetSelection.groups(EVALUATE),
    description="One benchmark x model partition: inference through the response cache, the LLM judge "
                "(when models.yaml names one for the benchmark), scoring, the judge's reliability.")
scan_job = dg.define_asset_job(
    "scan", selection=dg.AssetSelection.groups(CORPORA),
    description="One corpus of data/corpora.yaml against every benchmark item: corpus_overlap and "
                "corpus_quarantine (only the corpus files that changed are read again).")
publish_job = dg.define_asset_job(
    "publish", selection=dg.AssetSelection.groups(WAREHOUSE) | _unpartitioned(SOURCES, ITEMS),
    description="Contamination across benchmarks; load the lake into data/warehouse.duckdb and build sql/ "
                "views; the leaderboard and each benchmark's paper tables as assets with their scores.")


def job_assets(name: str, partitioned: bool | None = None) -> set[dg.AssetKey]:
    """The assets job `name` selects (pipeline/staleness.py's job_assets, on these definitions)."""
    from pipeline.staleness import job_assets as selected

    return selected(defs, name, partitioned)


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds a model partition for each entry of models.yaml.")
def models_sensor(context: dg.SensorEvaluationContext):
    return _add_partitions(context, models_partitions, lambda: load_models(paths.models_file()),
                           "every configured model already has partitions")


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
           description="Adds a corpus partition for each entry of corpora.yaml.")
def corpora_sensor(context: dg.SensorEvaluationContext):
    from pipeline.contamination.corpora import load_corpora

    return _add_partitions(context, corpora_partitions,
                           lambda: load_corpora(paths.corpora_file(), paths.scanned_corpora_file()),
                           "every configured corpus already has a partition")


def _add_partitions(context: dg.SensorEvaluationContext, partitions: dg.DynamicPartitionsDefinition,
                    configured, nothing_new: str):
    """A partition for each configured name that has none yet; a configuration that does not load
    skips the tick with its one line."""
    try:
        names = sorted(configured())
    except ConfigError as exc:
        return dg.SkipReason(str(exc))
    known = set(context.instance.get_dynamic_partitions(partitions.name))
    new = [n for n in names if n not in known]
    if not new:
        return dg.SkipReason(nothing_new)
    return dg.SensorResult(dynamic_partitions_requests=[partitions.build_add_request(new)])


@dg.sensor(jobs=[prepare_job, evaluate_job, scan_job, publish_job], minimum_interval_seconds=30,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="Launches what is out of date, as `wenheng run` would (pipeline/staleness.py): prepare for "
                       "each benchmark whose files, corrections or configuration changed, then evaluate, scan and "
                       "publish for what that changed; one phase per tick, nothing while any run is in flight.")
def stale_sensor(context: dg.SensorEvaluationContext):
    from pipeline.locking import holder
    from pipeline.run_inputs import Inputs
    from pipeline.staleness import Phases, fail_orphaned_runs, in_flight, next_wave

    held = holder()
    if held:
        return dg.SkipReason(f"a wenheng run is building ({held}); it leaves everything up to date")
    fail_orphaned_runs(context.instance, context.log.info)   # a killed run's leftovers would be waited on forever
    busy = in_flight(context.instance)
    if busy:
        return dg.SkipReason(f"waiting for {len(busy)} run(s) in flight before planning again")
    try:
        benchmarks, models, corpora = _configured(context.instance)
    except (ConfigError, CorrectionsError, OSError) as exc:
        return dg.SkipReason(f"cannot read the configuration: {exc}")
    inputs = Inputs(context.instance, defs)
    wave = next_wave(inputs, Phases.resolve(defs, None), benchmarks, models, corpora)
    if not wave:
        return dg.SkipReason("everything is up to date")
    return [dg.RunRequest(run_key=planned.run_key(inputs), job_name=planned.job, partition_key=planned.partition,
                          asset_selection=sorted(planned.keys), tags=planned.tags()) for planned in wave]


def _configured(instance) -> tuple[list[str], list[str], list[str]]:
    """What `wenheng run` builds with no argument: the benchmarks of the sources file, its models
    and the corpora of corpora.yaml; the models and corpora that have partitions (the sensors above
    add them)."""
    from pipeline.config import load_config
    from pipeline.contamination.corpora import load_corpora

    sources, models = load_config(paths.sources_file(), paths.models_file())
    known_models = set(instance.get_dynamic_partitions(models_partitions.name))
    known_corpora = set(instance.get_dynamic_partitions(corpora_partitions.name))
    corpora = load_corpora(paths.corpora_file())
    return (list(sources), [m for m in models if m in known_models], [c for c in corpora if c in known_corpora])


@dg.schedule(job=prepare_job, cron_schedule="0 3 * * *",
             description="Re-reads every configured benchmark's sources at night (a prepare run each, whatever "
                         "their fingerprints say); what their items change follows through stale_sensor, and the "
                         "response cache keeps unchanged prompts free.")
def nightly_rebuild(context: dg.ScheduleEvaluationContext):
    from pipeline.locking import holder
    from pipeline.run_inputs import Inputs
    from pipeline.staleness import Phases, plan

    if holder():
        return dg.SkipReason("a wenheng run is building; it re-reads the sources itself")
    try:
        benchmarks, _, _ = _configured(context.instance)
    except (ConfigError, CorrectionsError, OSError) as exc:
        return dg.SkipReason(f"cannot read the configuration: {exc}")
    inputs, phases = Inputs(context.instance, defs), Phases.resolve(defs, None)
    stamp = context.scheduled_execution_time.strftime("%Y%m%dT%H%M")
    return [dg.RunRequest(run_key=f"{stamp}:{b}", partition_key=b, asset_selection=sorted(planned.keys),
                          tags=planned.tags())
            for b in benchmarks for planned in [plan(inputs, phases, "prepare", b, force=True)]]


defs = dg.Definitions(
    assets=ASSETS,
    jobs=[prepare_job, evaluate_job, scan_job, publish_job],
    schedules=[nightly_rebuild],
    sensors=[models_sensor, corpora_sensor, stale_sensor],
    # WENHENG_EXECUTOR: in_process (default), multiprocess or k8s (GPUs for the inference-pool steps)
    executor=executor_from_env(_in_groups(EVALUATE)),
    resources={
        "lake": ParquetLakeIOManager(lake_dir=dg.EnvVar(Settings.lake.name)),
        "sources": SourcesResource(sources_file=dg.EnvVar(Settings.sources.name)),
        "models": ModelsResource(models_file=dg.EnvVar(Settings.models.name),
                                 cache_dir=dg.EnvVar(Settings.cache.name)),
        "warehouse_db": WarehouseResource(database=dg.EnvVar(Settings.warehouse.name)),
        "corpora": CorporaResource(corpora_file=dg.EnvVar(Settings.corpora.name)),
        # the Ray engine's scan runs as a Pipes subprocess (assets/contamination.py says why)
        "pipes_subprocess_client": dg.PipesSubprocessClient(),
    },
)
