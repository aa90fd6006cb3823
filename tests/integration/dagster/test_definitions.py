"""The code location loads, and the Dagster boundary stays where the design puts it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import dagster as dg
from conftest import ROOT, write_yaml

from pipeline.definitions import defs, job_assets, models_sensor
from pipeline.groups import CORPORA, EVALUATE, ITEMS, SOURCES, WAREHOUSE

# the Definitions object, the in-process runner, what is stale (run_inputs, staleness), and the
# executor the definitions are built with; pipes_job.py is the Ray scan's Dagster Pipes entry
# point (the external side: dagster_pipes only)
DAGSTER_MODULES = {"pipeline/definitions.py", "pipeline/runner.py", "pipeline/run_inputs.py", "pipeline/staleness.py",
                   "pipeline/executors.py", "pipeline/contamination/pipes_job.py"}


def item_stages() -> list[str]:
    """What one prepare run materializes: the prepare job's assets partitioned by benchmark."""
    return sorted(key.to_user_string() for key in job_assets("prepare", partitioned=True))


def test_definitions_load_with_every_stage():
    dg.Definitions.validate_loadable(defs)   # every asset, check, job, schedule and sensor renders
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert {"raw_items", "items", "prompts"} <= set(item_stages())
    assert {*item_stages(), "contamination", "responses", "scores", "warehouse"} <= keys
    for job in ("prepare", "evaluate", "publish"):
        assert defs.resolve_job_def(job)
    assert defs.resolve_schedule_def("nightly_rebuild")


def test_each_job_is_its_groups():
    """A job's assets are its groups' (pipeline/groups.py): prepare's item stages, of which those
    no benchmark partitions (contamination) also run with publish; every asset is in a job, but the
    one observed rather than built."""
    graph = defs.resolve_asset_graph()

    def grouped(*groups: str) -> set[dg.AssetKey]:
        """The groups' assets that a run materializes (not model_settings: observed, not built)."""
        return {key for key in graph.materializable_asset_keys if graph.get(key).group_name in groups}

    assert {key.to_user_string() for key in graph.external_asset_keys} == {
        "benchmark_files", "benchmark_corrections", "prompt_settings", "dedup_settings", "index_settings",
        "model_settings", "corpus_files"}   # configuration, observed

    assert job_assets("prepare") == grouped(SOURCES, ITEMS)
    assert job_assets("evaluate") == grouped(EVALUATE) == job_assets("evaluate", partitioned=True)
    assert job_assets("scan") == grouped(CORPORA)
    across = job_assets("prepare", partitioned=False)
    assert {key.to_user_string() for key in across} == {"contamination"}
    assert job_assets("publish") == grouped(WAREHOUSE) | across
    assert set().union(*(job_assets(job) for job in ("prepare", "evaluate", "scan", "publish"))) == \
        set(graph.materializable_asset_keys)


def test_item_stages_are_partitioned_by_benchmark():
    """One partition per benchmark card for every item stage, the checks included; contamination
    (across benchmarks) reads them all; benchmark x model assets read their benchmark's partition."""
    from pipeline import benchmarks

    graph = defs.resolve_asset_graph()
    for name in item_stages():
        assert graph.get(dg.AssetKey(name)).partitions_def.get_partition_keys() == list(benchmarks.names()), name
    assert graph.get(dg.AssetKey("contamination")).partitions_def is None
    checks = {key.name: graph.get(key).partitions_def for key in graph.asset_check_keys}
    for name in ("rows_reconcile", "data_quality", "corrections_apply", "consistent_gold"):
        assert checks[name] == graph.get(dg.AssetKey("raw_items")).partitions_def, name
    for name in ("error_rate", "verdict_rate"):
        assert checks[name] == graph.get(dg.AssetKey("responses")).partitions_def, name
    for child, parent in (("responses", "prompts"), ("model_inputs", "items"), ("scores", "items")):
        mapping = graph.get_partition_mapping(dg.AssetKey(child), dg.AssetKey(parent))
        assert isinstance(mapping, dg.MultiToSingleDimensionPartitionMapping) and \
            mapping.partition_dimension_name == "benchmark", (child, parent)
    # the responses read the items only through what the model reads: a corrected gold leaves a
    # served model's responses fresh by Dagster's stale rule (pipeline.inference.model_inputs);
    # and models.yaml's entry, observed as data
    responses = graph.get(dg.AssetKey("responses"))
    assert {k.to_user_string() for k in responses.parent_keys} == {"prompts", "model_inputs", "model_settings"}
    assert graph.get(dg.AssetKey("model_inputs")).partitions_def == responses.partitions_def


def test_sensors_run_by_default_and_resources_name_their_variables():
    """A new model gets partitions and changed data flows on without anyone switching a sensor on;
    the UI shows which environment variable each resource's file comes from."""
    sensors = {s.name: s for s in defs.resolve_sensor_defs()} if hasattr(defs, "resolve_sensor_defs") else \
        {s.name: s for s in defs.get_repository_def().sensor_defs}
    assert sensors["models_sensor"].default_status == dg.DefaultSensorStatus.RUNNING
    # one system decides what is stale (pipeline/staleness.py): no automation condition beside it
    assert not [s for s in sensors.values() if isinstance(s, dg.AutomationConditionSensorDefinition)]
    graph = defs.resolve_asset_graph()
    assert not [key for key in graph.get_all_asset_keys() if graph.get(key).automation_condition is not None]
    # what the README's "Automation is on from the start" paragraph promises, read from the README
    readme = " ".join((Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8").split())
    promise = readme[readme.index("Automation is on from the start"):][:2000]
    for name in ("models_sensor", "stale_sensor", "corpora_sensor"):
        assert sensors[name].default_status == dg.DefaultSensorStatus.RUNNING, name
        assert f"`{name}`" in promise, f"the README's automation paragraph does not name {name}"
    schedules = {s.name: s for s in defs.get_repository_def().schedule_defs}
    nightly_on = schedules["nightly_rebuild"].default_status == dg.DefaultScheduleStatus.RUNNING
    assert ("`nightly_rebuild` schedule (off until you turn it on)" in promise) == (not nightly_on)
    named = {(res, field): value for res, fields in {
        "sources": ["sources_file"], "models": ["models_file", "cache_dir"], "warehouse_db": ["database"],
        "lake": ["lake_dir"]}.items() for field in fields for value in [getattr(defs.resources[res], field)]}
    assert all(isinstance(v, dg.EnvVar) for v in named.values()), {k: type(v) for k, v in named.items()}
    assert {v.env_var_name for v in named.values()} == {"WENHENG_SOURCES", "WENHENG_MODELS", "WENHENG_CACHE",
                                                "WENHENG_WAREHOUSE", "WENHENG_LAKE"}


def test_lineage_reads_left_to_right():
    """Edges say what each asset is made from: benchmark_files -> raw_items -> items and
    quarantine, benchmark_corrections -> items -> corrections_audit; the warehouse hangs off the assets nothing else leads to, and still has
    every table it loads upstream of it."""
    from pipeline.warehouse import BASE_TABLES

    graph = defs.resolve_asset_graph()

    def parents(name: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}

    def upstream(names: set[str]) -> set[str]:
        seen, todo = set(), list(names)
        while todo:
            for parent in parents(todo.pop()) - seen:
                seen.add(parent)
                todo.append(parent)
        return seen

    assert parents("items") == {"raw_items", "benchmark_corrections"} and parents("quarantine") == {"raw_items"}
    assert parents("raw_items") == {"benchmark_files"}
    assert parents("corrections_audit") == {"items"}
    assert parents("contamination") == parents("dedup_clusters") == {"items", "item_signatures", "dedup_settings"}
    # the settings each stage reads are its inputs, observed as data: not folded into code versions
    assert parents("item_signatures") == {"items", "dedup_settings"}
    assert parents("prompts") == {"items", "item_variants", "dedup_clusters", "prompt_settings"}
    assert parents("item_variants") == {"items", "prompt_settings"}
    assert parents("item_ngrams") == {"items", "index_settings"}
    deps = parents("warehouse")
    assert set(BASE_TABLES) <= deps | upstream(deps)
    assert not any(dep in upstream(deps - {dep}) for dep in deps)   # none implied by another


def test_domain_logic_does_not_import_dagster():
    offenders = []
    for path in (ROOT / "pipeline").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        if any(name.split(".")[0].startswith("dagster") for name in names) and rel not in DAGSTER_MODULES:
            offenders.append(rel)
    assert not offenders


def test_models_sensor_adds_a_partition_per_configured_model(workdir, monkeypatch):
    models = write_yaml(workdir / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")
    monkeypatch.setenv("WENHENG_MODELS", str(models))
    with dg.instance_for_test() as instance:
        result = models_sensor(dg.build_sensor_context(instance=instance))
        (request,) = result.dynamic_partitions_requests
        assert list(request.partition_keys) == ["oracle"]


def test_stale_sensor_plans_what_wenheng_run_would_and_waits_for_any_builder(workdir, monkeypatch):
    """On an empty instance: a prepare run per configured benchmark, each with the fingerprints it
    is planned from and a key of its own; nothing while a run is in flight or a `wenheng run`
    holds the lake."""
    from pipeline import locking
    from pipeline.config import load_sources
    from pipeline.definitions import stale_sensor
    from pipeline.run_inputs import INPUTS_TAG

    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    with dg.instance_for_test() as instance:
        requests = stale_sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert sorted(r.partition_key for r in requests) == sorted(load_sources(ROOT / "data" / "sources.yaml"))
        assert {r.job_name for r in requests} == {"prepare"}
        assert all(json.loads(r.tags[INPUTS_TAG]) for r in requests)
        assert len({r.run_key for r in requests}) == len(requests)
        with locking.hold(), monkeypatch.context() as patch:
            # this process holds the lock: the sensor (another process under the daemon) reads it
            patch.setattr(locking.os, "getpid", lambda: -1)
            held = stale_sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert isinstance(held, dg.SkipReason) and "wenheng run" in held.skip_message
        prepare = defs.resolve_job_def("prepare")
        instance.create_run_for_job(job_def=prepare, status=dg.DagsterRunStatus.STARTED,
                                    tags={"dagster/partition": "wyweb"})
        busy = stale_sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        assert isinstance(busy, dg.SkipReason) and "in flight" in busy.skip_message


def test_nightly_rebuild_asks_a_prepare_run_per_benchmark(workdir, monkeypatch):
    import datetime as dt

    from pipeline.config import load_sources
    from pipeline.definitions import nightly_rebuild

    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(instance=instance, scheduled_execution_time=dt.datetime(2026, 11, 22, 3, 0),
                                            repository_def=defs.get_repository_def())
        requests = list(nightly_rebuild.evaluate_tick(context).run_requests)
    assert [r.partition_key for r in requests] == list(load_sources(ROOT / "data" / "sources.yaml"))
    assert len({r.run_key for r in requests}) == len(requests)


def test_runs_nothing_will_finish_are_failed_and_the_wait_for_the_rest_is_bounded():
    """A `wenheng run` killed between creating a run and starting it leaves it NOT_STARTED; a UI
    launch whose launcher died leaves one too. Both are failed at the next start, each in one line;
    a run that is alive is waited on, at most the limit, then named."""
    import socket
    import time

    import pytest

    from pipeline.paths import HOST_TAG, PID_TAG
    from pipeline.staleness import NEVER_STARTED_S, RunsInFlight, fail_orphaned_runs, in_flight, wait_for_runs

    dead = 2 ** 22 + 12345   # above the default pid_max: no process has it
    prepare = defs.resolve_job_def("prepare")
    with dg.instance_for_test() as instance:
        def run(status, **tags):
            return instance.create_run_for_job(job_def=prepare, status=status, tags=tags).run_id

        killed = run(dg.DagsterRunStatus.NOT_STARTED, **{PID_TAG: str(dead), HOST_TAG: socket.gethostname()})
        running = run(dg.DagsterRunStatus.STARTED, **{PID_TAG: str(dead), HOST_TAG: socket.gethostname()})
        launched = run(dg.DagsterRunStatus.NOT_STARTED)   # from the UI: no wenheng pid
        elsewhere = run(dg.DagsterRunStatus.STARTED)      # the daemon's, running
        said: list[str] = []
        assert sorted(fail_orphaned_runs(instance, said.append)) == sorted([killed, running])
        assert len(said) == 2 and all("gone: marked failed" in line for line in said)
        later = time.time() + NEVER_STARTED_S + 1
        assert fail_orphaned_runs(instance, said.append, now=later) == [launched]
        assert "launcher is gone" in said[-1]
        assert {r.run_id for r in in_flight(instance)} == {elsewhere}
        with pytest.raises(RunsInFlight, match=rf"1 run launched elsewhere still in flight after 0 s: prepare \({elsewhere[:8]}\)"):
            wait_for_runs(instance, said.append, lambda: False, every_s=0.01, limit_s=0.0)
