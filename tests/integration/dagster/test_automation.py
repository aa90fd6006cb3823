"""Declarative automation against a real instance: after one benchmark's items change, each of its
partitions downstream is requested exactly once, and no other benchmark's partition at all.

Ticks are evaluated with `dg.evaluate_automation_conditions` (what the automation sensor runs),
and what a tick requests is executed before the next tick, as the daemon's runs would be."""

from __future__ import annotations

import shutil
from collections import Counter

import dagster as dg
import pytest
from conftest import ROOT, write_yaml

from pipeline.runner import run_pipeline

MODELS = """
models:
  oracle: {engine: baseline, strategy: oracle}
  random: {engine: baseline, strategy: random, seed: 0}
"""
BENCHMARKS = ["aceval", "wyweb"]
EVALUATE = ("responses", "judgements", "scores", "judge_reliability")


@pytest.fixture
def built(workdir, monkeypatch):
    """AC-EVAL and WYWEB samples (copied, so the test can edit them) built once with two baselines."""
    samples = workdir / "samples"
    for name in BENCHMARKS:
        shutil.copytree(ROOT / "data" / "samples" / name, samples / name)
    sources = write_yaml(workdir / "sources.yaml", "benchmarks:\n"
                         f"  aceval: {{path: {samples / 'aceval'}, version: v1, evaluate: [dev]}}\n"
                         f"  wyweb: {{path: {samples / 'wyweb'}, version: v1}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", MODELS)))
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(workdir / "corrections"))
    assert run_pipeline(BENCHMARKS, ["oracle", "random"], log=lambda _: None).ok
    return samples


def _execute(defs, instance, requested: dict[dg.AssetKey, set]) -> None:
    """Run what a tick requested: one run per partition key, as the automation sensor launches them."""
    from assets.evaluate import benchmark_x_model

    by_partition: dict = {}
    for key, partitions in requested.items():
        for partition in partitions:
            by_partition.setdefault(partition, set()).add(key)
    graph = defs.resolve_asset_graph()
    jobs = {"sources": "prepare", "items": "prepare", "evaluate": "evaluate", "warehouse": "publish"}
    for partition, keys in by_partition.items():
        names = {k.path[0] for k in keys}
        (job,) = {jobs[graph.get(k).group_name] for k in keys}
        partition_key = benchmark_x_model.get_partition_key_from_str(partition) if job == "evaluate" else partition
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance, partition_key=partition_key, asset_selection=list(keys), raise_on_error=False)
        assert result.success, f"{job} {partition} {sorted(names)}"


def _ticks(defs, instance, cursor, most: int = 6) -> tuple[Counter, int, object]:
    """Evaluate ticks (running what each requests) until one requests nothing. Returns how often
    each (asset, partition) was requested, the number of ticks that requested something, and the cursor."""
    requests: Counter = Counter()
    busy = 0
    for _ in range(most):
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        requested = {key: set(result.get_requested_partitions(key)) for key in defs.resolve_all_asset_keys()}
        requested = {key: parts for key, parts in requested.items() if parts}
        if not requested:
            return requests, busy, cursor
        busy += 1
        requests.update((key.to_user_string(), partition) for key, parts in requested.items() for partition in parts)
        _execute(defs, instance, requested)
    raise AssertionError(f"automation still requesting after {most} ticks: {requests}")


def _requested(defs, result) -> dict[dg.AssetKey, set]:
    parts = {key: set(result.get_requested_partitions(key)) for key in defs.resolve_all_asset_keys()}
    return {key: p for key, p in parts.items() if p}


def test_a_changed_benchmark_recomputes_its_partitions_once(built):
    """A tick lands while the prepare run is part-way (items written, prompts still to come), as
    the daemon's ticks do during a long prepare: nothing downstream may start on the new items
    with the old prompts and responses, and once prompts are written each partition runs once.
    (With plain eager() conditions, judgements, scores and judge_reliability ran at that tick and
    again after responses: twice per change.)"""
    from pipeline.definitions import defs, job_assets

    instance = dg.DagsterInstance.get()
    # settle: the first tick only records where things stand
    quiet, _, cursor = _ticks(defs, instance, None)
    assert quiet == Counter()

    # a new upstream version of one AC-EVAL question; the source sensor runs prepare for aceval alone
    dev = built / "aceval" / "dev" / "historical_facts.csv"
    dev.write_text(dev.read_text(encoding="utf-8").replace("秦始皇统一六国后", "秦统一六国后"), encoding="utf-8")
    prepare = defs.resolve_job_def("prepare")
    first = [dg.AssetKey(n) for n in ("raw_items", "items", "quarantine", "corrections_audit")]
    rest = [key for key in job_assets("prepare", partitioned=True) if key not in first]
    pending = instance.create_run_for_job(job_def=prepare, asset_selection=frozenset(rest),
                                          tags={"dagster/partition": "aceval"})   # planned, not written yet
    assert prepare.execute_in_process(instance=instance, partition_key="aceval", asset_selection=first).success
    mid = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    early = _requested(defs, mid)
    assert {key.to_user_string() for key in early} <= {"contamination"}, early   # nothing on old prompts
    _execute(defs, instance, early)
    assert prepare.execute_in_process(instance=instance, partition_key="aceval", asset_selection=rest).success
    instance.report_run_canceled(instance.get_run_by_id(pending.run_id))

    later, ticks, cursor = _ticks(defs, instance, mid.cursor)
    requests = later + Counter((key.to_user_string(), p) for key, parts in early.items() for p in parts)
    evaluated = {(asset, p) for asset, p in requests if asset in EVALUATE}
    assert evaluated == {(asset, f"aceval|{m}") for asset in EVALUATE for m in ("oracle", "random")}
    assert all(requests[key] == 1 for key in evaluated), requests   # each once, never twice
    assert not [key for key in requests if key[1] and "wyweb" in key[1]]
    assert requests[("contamination", None)] == 1
    # published once, with the new scores (not once on the new side reports and again after)
    assert requests[("warehouse", None)] == 1 and requests[("leaderboard", None)] == 1, requests
    # and then nothing more: the next tick is quiet
    again, _, _ = _ticks(defs, instance, cursor)
    assert again == Counter()
    print(f"\nautomation after one benchmark changed: {ticks + 1} ticks, requested {dict(requests)}")


def test_an_unchanged_rebuild_requests_nothing_downstream(built):
    """Rebuilding wyweb's item stages with the same files yields the same data versions: its
    responses and scores are not requested again (the response cache would make them cheap, but
    nothing needs to run at all)."""
    from pipeline.definitions import defs, job_assets

    instance = dg.DagsterInstance.get()
    _, _, cursor = _ticks(defs, instance, None)
    assert defs.resolve_job_def("prepare").execute_in_process(
        instance=instance, partition_key="wyweb", asset_selection=list(job_assets("prepare", partitioned=True))).success
    requests, _, _ = _ticks(defs, instance, cursor)
    assert requests.keys() <= {("warehouse", None)}, requests   # the same data: no partition, no contamination
