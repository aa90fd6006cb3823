"""What is stale, decided once for every launcher: `wenheng run` (pipeline/runner.py), the
`stale_sensor` under the daemon (pipeline/definitions.py) and the nightly schedule all ask this
module, and it asks run_inputs.py what each asset is computed from.

A launcher plans in the jobs' order: prepare (per benchmark) -> evaluate (per benchmark x model) ->
scan (per corpus) -> publish. `wenheng run` runs the phases one after the other in its process;
the sensor launches the first phase that has something to do (`next_wave`) and waits, tick after
tick, until the daemon has run it, then plans again. Every run, from either launcher, carries the
fingerprints it was planned from (the `wenheng/inputs` tag), so what one launcher built is up to
date for the other: after a `wenheng run` the sensor's next tick launches nothing, and a
`wenheng run` after the daemon's runs says "up to date".

`unsynced` asks Dagster's own stale rule (what the UI badges "unsynced") the same question, to
check that the two agree.

They never work at the same time: the sensor launches nothing while a `wenheng run` holds the lake
(pipeline/locking.py) or any run is in flight, and `wenheng run` first waits for the runs in
flight (`wait_for_runs`)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.run_inputs import INPUTS_TAG, Inputs

PHASES = ("prepare", "evaluate", "scan", "publish")
# a run in one of these states may still write what the next plan reads
IN_FLIGHT = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


@dataclass(frozen=True)
class Phases:
    """The chosen assets of each phase, from the jobs' own selections (pipeline/definitions.py):
    prepare's per benchmark, evaluate's, scan's, publish's (with `across`: the item stages that
    read every benchmark, contamination, which run there, before the warehouse that reads them)."""
    prepare: frozenset
    evaluate: frozenset
    scan: frozenset
    publish: frozenset
    across: frozenset

    @classmethod
    def resolve(cls, defs, selection: str | None) -> Phases:
        """Every paper-table asset is published, also after a run of one benchmark: the others'
        read the warehouse that run rebuilt, and a launcher that left them out would leave the
        other launcher a publish to do."""
        import dagster as dg

        graph = defs.resolve_asset_graph()
        chosen = (dg.AssetSelection.from_string(selection) if selection else dg.AssetSelection.all()).resolve(graph)
        publish = job_assets(defs, "publish") & chosen
        return cls(prepare=frozenset(job_assets(defs, "prepare", partitioned=True) & chosen),
                   evaluate=frozenset(job_assets(defs, "evaluate") & chosen),
                   scan=frozenset(job_assets(defs, "scan") & chosen),
                   publish=frozenset(publish), across=frozenset(publish & job_assets(defs, "prepare")))

    def of(self, job: str) -> frozenset:
        return getattr(self, job)


def job_assets(defs, name: str, partitioned: bool | None = None) -> set:
    """The assets job `name` selects: its group selection, resolved on the asset graph.
    partitioned=True: only those partitioned as the job is (what one partitioned run of it
    materializes: prepare's item stages of one benchmark); False: only the others."""
    job = defs.resolve_job_def(name)
    keys = set(job.asset_layer.selected_asset_keys)
    if partitioned is None:
        return keys
    graph = defs.resolve_asset_graph()
    return {key for key in keys if (graph.get(key).partitions_def == job.partitions_def) == partitioned}


@dataclass(frozen=True)
class Planned:
    """One run to launch: its job, its partition, the assets with something to do and the
    fingerprint of what each asset of the job is computed from now."""
    job: str
    partition: Any            # a benchmark, a corpus, a MultiPartitionKey (benchmark x model) or None
    keys: frozenset
    prints: dict

    def tags(self) -> dict[str, str]:
        return {INPUTS_TAG: json.dumps({key.to_user_string(): value for key, value in self.prints.items()
                                        if key in self.keys}, sort_keys=True)}

    def run_key(self, inputs: Inputs) -> str:
        """What the state changes to (the fingerprints) and from (the latest materialization of
        each asset): a revert to an earlier state is a new key, a failed run is not retried
        until something changes."""
        latest = sorted((key.to_user_string(), getattr(inputs.latest(key, self.partition), "storage_id", None))
                        for key in self.keys)
        digest = hashlib.sha256(json.dumps([self.tags(), latest], sort_keys=True).encode()).hexdigest()[:16]
        return f"{self.job}:{self.partition or '-'}:{digest}"


def partitions(job: str, benchmarks: list[str], models: list[str], corpora: list[str]) -> list:
    """A job's partitions in the order `wenheng run` runs them (evaluate: model by model, so a
    local model loads once)."""
    import dagster as dg

    if job == "prepare":
        return list(benchmarks)
    if job == "evaluate":
        return [dg.MultiPartitionKey({"benchmark": b, "model": m}) for m in models for b in benchmarks]
    return list(corpora) if job == "scan" else [None]


def plan(inputs: Inputs, phases: Phases, job: str, partition, force: bool = False) -> Planned:
    """One partition of one job: which of its assets have something to do (none: up to date)."""
    keys = phases.of(job)
    if job == "prepare":
        prints = inputs.prepare(partition, keys)
    elif job == "evaluate":
        prints = inputs.evaluate(partition.keys_by_dimension["benchmark"], partition.keys_by_dimension["model"], keys)
    elif job == "scan":
        prints = inputs.scan(partition, keys)
    else:
        prints = inputs.publish(keys)
    todo = frozenset(keys) if force else frozenset(keys) - inputs.up_to_date(keys, partition, prints)
    # whole or not at all: a multi-asset that cannot be split (the items' standardization, a scan)
    # runs every asset of it
    graph = inputs.defs.resolve_asset_graph()
    todo |= {k for key in todo for k in graph.get_execution_set_asset_and_check_keys(key) if k in keys}
    return Planned(job, partition, frozenset(todo), prints)


def next_wave(inputs: Inputs, phases: Phases, benchmarks: list[str], models: list[str],
              corpora: list[str]) -> list[Planned]:
    """The runs of the first phase that has something to do; none when everything is up to date."""
    for job in PHASES:
        if not phases.of(job):
            continue
        wave = [p for p in (plan(inputs, phases, job, part) for part in partitions(job, benchmarks, models, corpora))
                if p.keys]
        if wave:
            return wave
    return []


def in_flight(instance, exclude_pid: int | None = None) -> list:
    """The runs that may still write: running, or queued while a daemon is alive to start them
    (a queue left by a stopped `dg dev` would be waited on forever); launched by anyone but
    `exclude_pid`."""
    import dagster as dg

    from pipeline.paths import PID_TAG

    statuses = [s for s in IN_FLIGHT if s != "QUEUED" or daemon_alive(instance)]
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus(s) for s in statuses]))
    return [run for run in runs if exclude_pid is None or run.tags.get(PID_TAG) != str(exclude_pid)]


def daemon_alive(instance, within_s: float = 120.0) -> bool:
    """Whether a Dagster daemon has sent a heartbeat lately."""
    try:
        beats = instance.get_daemon_heartbeats()
    except Exception:  # noqa: BLE001 - an instance without daemon storage: no daemon
        return False
    return any(time.time() - beat.timestamp < within_s for beat in beats.values())


# A run launched elsewhere (the UI, the daemon) that has not started this long after its creation
# never will: its launcher is gone (Dagster's own run monitoring fails a STARTING run the same way)
NEVER_STARTED_S = 300.0


def fail_orphaned_runs(instance, log: Callable[[str], None] = print, now: float | None = None) -> list[str]:
    """Mark failed the runs nothing will finish, each said in one line: those a `wenheng run` on
    this host left NOT_STARTED, STARTING, STARTED or CANCELING and whose process is gone (killed
    between creating a run and starting it, or while it ran, or the machine went down), and those
    launched elsewhere still NOT_STARTED NEVER_STARTED_S after their creation. Returns their ids.
    Left in flight, each would make every later run wait for it (pipeline/staleness.py)."""
    import socket

    import dagster as dg

    from pipeline.locking import alive
    from pipeline.paths import HOST_TAG, PID_TAG

    host, marked, now = socket.gethostname(), [], time.time() if now is None else now
    statuses = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                dg.DagsterRunStatus.CANCELING]
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=statuses)):
        run, pid = record.dagster_run, record.dagster_run.tags.get(PID_TAG)
        if pid is not None:
            if run.tags.get(HOST_TAG) != host or int(pid) == os.getpid() or alive(int(pid)):
                continue
            why = f"by pid {pid}, which is gone"
        elif (run.status == dg.DagsterRunStatus.NOT_STARTED
              and now - record.create_timestamp.timestamp() > NEVER_STARTED_S):
            why = f"since {record.create_timestamp:%Y-%m-%d %H:%M} UTC (its launcher is gone)"
        else:
            continue
        instance.report_run_failed(run, message=f"left {run.status.value} {why}")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)  # its pool slot, else held forever
        log(f"  run {run.run_id} ({run.job_name}) was left {run.status.value} {why}: marked failed")
        marked.append(run.run_id)
    return marked


class RunsInFlight(RuntimeError):
    """Runs launched elsewhere were still in flight when the wait for them ran out."""


WAIT_ENV = "WENHENG_WAIT_FOR_RUNS_S"   # how long `wenheng run` waits for runs launched elsewhere


def wait_for_runs(instance, log: Callable[[str], None], stopped: Callable[[], bool],
                  every_s: float = 1.0, own_pid: int | None = None, limit_s: float | None = None) -> None:
    """Until no run launched elsewhere (the daemon, the UI) is in flight: what they write is what
    this plan must see, and running the same partition twice at once would only do it twice. At
    most `limit_s` (${WENHENG_WAIT_FOR_RUNS_S}, default an hour): then RunsInFlight, naming them."""
    if limit_s is None:
        from pipeline.settings import settings

        limit_s = settings().wait_for_runs_s
    said, started = 0, time.monotonic()
    while not stopped():
        runs = in_flight(instance, exclude_pid=own_pid)
        if not runs:
            return
        names = ", ".join(f"{r.job_name}" + (f" [{r.tags.get('dagster/partition')}]"
                                              if r.tags.get("dagster/partition") else "") + f" ({r.run_id[:8]})"
                          for r in runs[:4]) + (", ..." if len(runs) > 4 else "")
        if time.monotonic() - started >= limit_s:
            raise RunsInFlight(
                f"{len(runs)} run{'s' * (len(runs) > 1)} launched elsewhere still in flight after {limit_s:.0f} s: "
                f"{names}; let them finish, or terminate them in the Dagster UI (Runs), then run again "
                f"(${WAIT_ENV} sets the wait)")
        if len(runs) != said:
            log(f"waiting for {len(runs)} run{'s' * (len(runs) > 1)} launched elsewhere (the daemon or the UI): "
                f"{names}; at most {limit_s:.0f} s (${WAIT_ENV}); to stop waiting, terminate "
                f"{'them' if len(runs) > 1 else 'it'} in the Dagster UI (Runs)")
            said = len(runs)
        time.sleep(every_s)


def unsynced(instance, defs) -> tuple[int, list[str]]:
    """What the Dagster UI badges "unsynced": (the materialized asset partitions, those that
    Dagster's own stale rule, code versions and the data versions of each partition's inputs, calls
    stale, as 'asset [partition]'). After a plan that called everything up to date, the list is
    empty when this module and Dagster agree (tests/integration/dagster/test_one_truth.py,
    perf/incremental.py). It reads Dagster's internal resolver, the one the UI's GraphQL uses
    (Dagster is pinned in pyproject.toml)."""
    import dagster as dg
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._time import get_current_datetime

    graph = defs.resolve_asset_graph()
    view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                          instance=instance, asset_graph=graph)
    resolver = CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)
    total, stale = 0, []
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        part_def = graph.get(key).partitions_def
        for part in [None] if part_def is None else sorted(instance.get_materialized_partitions(key)):
            total += 1
            if isinstance(part_def, dg.MultiPartitionsDefinition):
                part = part_def.get_partition_key_from_str(part)
            if resolver.get_status(key, part) != StaleStatus.FRESH:
                stale.append(key.to_user_string() + (f" [{part}]" if part else ""))
    return total, stale
