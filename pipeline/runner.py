"""Running the graph in-process, in phases that are the jobs of pipeline/definitions.py (each
phase materializes what its job selects, within `--select`):
prepare (one run per requested benchmark) -> evaluate (one run per benchmark x model partition) ->
scan (one run per corpus of data/corpora.yaml, when any) -> publish (one run: contamination across
benchmarks, then the warehouse and its table assets).

No run is launched with nothing to do: a benchmark's prepare run, a partition's evaluate run, a
corpus's scan run and the publish run are left out when what their assets are computed from is
what it was when they were last materialized, and an evaluate or publish run holds only the
assets whose inputs changed (a corrected gold re-scores without asking the model again). run_inputs.py
says what counts as an input.

Runs go into the Dagster instance at $DAGSTER_HOME, so `dagster dev` shows them afterwards; every
run of one `run_pipeline` call carries the tag `wenheng/run=<id>` (filter on it in the UI's run
list). Partitions of one model run back to back in this process, so a local model loads once.

On a stop request (pipeline.stopping: SIGINT/SIGTERM in `wenheng run`) no further partition or
publish is launched and the run that was stopped is marked canceled. Each run is tagged with this
process's pid, so a run left STARTED by a killed process is marked failed at the next start."""

from __future__ import annotations

import datetime as dt
import gc
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import memory, stopping
from pipeline.failures import append_log, failure_cause, traceback_text
from pipeline.paths import HOST_TAG, PID_TAG, RUN_TAG
from pipeline.run_inputs import Inputs
from pipeline.staleness import Phases, Planned, fail_orphaned_runs, partitions, plan, wait_for_runs


def _share(x: float) -> str:
    """A share as a percentage that never rounds onto the other side of a limit (5.3%, not 5%)."""
    text = f"{100 * x:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


@dataclass
class RunSummary:
    ok: bool = True
    # one entry per materialization: asset, partition, metadata values
    materializations: list[dict[str, Any]] = field(default_factory=list)
    # one line per failed check or step: what failed, with the first errors and their counts
    failures: list[str] = field(default_factory=list)
    stopped: int | None = None   # the signal that stopped the run, if one did
    run_tag: str = ""            # the value of the wenheng/run tag every Dagster run of this call carries
    timings: dict[str, float] = field(default_factory=dict)   # phase (prepare, evaluate, publish) -> seconds
    log_file: Path | None = None  # the run's log file (pipeline.paths.run_log_file), once a failure is written to it
    up_to_date: list[str] = field(default_factory=list)  # `job [partition]` left alone: nothing in it to do

    def metadata(self, asset: str, partition: str | None = None) -> dict[str, Any]:
        for m in reversed(self.materializations):
            if m["asset"] == asset and m["partition"] == partition:
                return m["metadata"]
        raise KeyError(f"{asset} [{partition}] was not materialized")


def new_run_tag() -> str:
    """A value for the wenheng/run tag: the UTC start time, readable and sortable, plus a few
    random characters so two invocations in the same second differ."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_pipeline(benchmarks: list[str], models: list[str], selection: str | None = None,
                 log: Callable[[str], None] = print, run_tag: str | None = None,
                 corpora: list[str] | None = None, force: bool = False) -> RunSummary:
    """Materialize the requested benchmarks' item stages, each benchmark x model partition, each
    corpus's overlap with the items, then the warehouse. Other benchmarks' partitions are left as
    they are; so is every asset whose inputs did not change since it was built, unless `force`."""
    import pipeline.definitions  # noqa: F401  (loaded before the freeze below)
    from pipeline.engines.registry import keep_engines

    _instance()
    # Dagster's definitions, the instance and the imported modules outlive every step: frozen,
    # they are out of the cyclic garbage collector's reach, so its collections during the steps
    # do not walk that large heap again and again. Unfrozen at the end, so nothing stays
    # uncollectable after the run (native extensions report such objects as leaks at exit).
    gc.freeze()
    try:
        with keep_engines():   # a model stays loaded from one partition's run to the next
            return _run_pipeline(benchmarks, models, selection, log, run_tag, corpora or [], force)
    finally:
        gc.unfreeze()


def _run_pipeline(benchmarks: list[str], models: list[str], selection: str | None,
                  log: Callable[[str], None], run_tag: str | None, corpora: list[str], force: bool) -> RunSummary:
    """The phases in order; each returns whether the next may start (a failed prepare and a
    stop request end the call; a failed evaluate partition does not)."""
    from pipeline.definitions import defs, export_path_defaults

    export_path_defaults()   # the resources read their files through dg.EnvVar
    run = _Execution.start(log, run_tag, models, corpora)
    run.force = force
    phases = Phases.resolve(defs, selection)
    log(f"run {RUN_TAG}={run.summary.run_tag} (filter on this tag in the Dagster UI)")
    # what the daemon or the UI launched is finished first: this plan must see what it writes
    wait_for_runs(run.instance, log, run.stopped, own_pid=os.getpid())
    if _prepare(run, phases, benchmarks) and _evaluate(run, phases, benchmarks, models) and _scan(run, phases, corpora):
        _publish(run, phases)
    return run.summary


def _prepare(run: _Execution, phases: Phases, benchmarks: list[str]) -> bool:
    """A prepare run per benchmark, unless its item stages are up to date (Inputs.prepare)."""
    if phases.prepare:
        started = time.perf_counter()
        for benchmark in benchmarks:
            if run.stopped():
                return False
            planned = run.todo(phases, "prepare", benchmark)
            if not planned.keys:
                run.log(f"prepare: {benchmark}: up to date (its sources, corrections, configuration and code "
                        "are those of its last build)")
                continue
            run.log(f"prepare: {benchmark}: sources -> items -> dedup -> variants -> prompts")
            run.summary.ok &= run.execute(planned)
        memory.release_converters()
        run.timed("prepare", started)
    return run.summary.ok and not run.stopped()


def _evaluate(run: _Execution, phases: Phases, benchmarks: list[str], models: list[str]) -> bool:
    """An evaluate run per benchmark x model partition, model by model (a local model loads once),
    with only the assets whose inputs changed (Inputs.evaluate); none when nothing did."""
    started = time.perf_counter()
    for partition in partitions("evaluate", benchmarks, models, []) if phases.evaluate else []:
        if run.stopped():
            run.timed("evaluate", started)
            return False
        benchmark, model = partition.keys_by_dimension["benchmark"], partition.keys_by_dimension["model"]
        planned = run.todo(phases, "evaluate", partition)
        if not planned.keys:
            run.log(f"evaluate: {benchmark} x {model}: up to date (its prompts, items, model and code are "
                    "those of its last run)")
            continue
        fresh = sorted(key.to_user_string() for key in phases.evaluate - planned.keys)
        run.log(f"evaluate: {benchmark} x {model}" + (f" ({', '.join(fresh)} up to date)" if fresh else ""))
        run.summary.ok &= run.execute(planned)
    run.timed("evaluate", started)
    return not run.stopped()


def _scan(run: _Execution, phases: Phases, corpora: list[str]) -> bool:
    """A scan run per corpus, unless its entry, its files and the items are those of its last scan
    (Inputs.scan); the scan itself reads only the corpus files that changed."""
    started = time.perf_counter()
    for corpus in corpora if phases.scan else []:
        if run.stopped():
            run.timed("scan", started)
            return False
        planned = run.todo(phases, "scan", corpus)
        if not planned.keys:
            run.log(f"scan: {corpus}: up to date (its entry, its files and the items are those of its last scan)")
            continue
        run.log(f"scan: {corpus}: corpus files -> n-grams -> every benchmark item")
        run.summary.ok &= run.execute(planned)
    if corpora and phases.scan:
        run.timed("scan", started)
    return not run.stopped()


def _publish(run: _Execution, phases: Phases) -> None:
    """One run: contamination (across benchmarks) and the warehouse with its table assets, those
    of them that something upstream changed since they were last built (Inputs.publish).
    Contamination runs here, before the warehouse that reads it: one run fewer than a run of its
    own, and it still follows every prepare."""
    if not phases.publish:
        return
    started = time.perf_counter()
    planned = run.todo(phases, "publish", None)
    if not planned.keys:
        run.log("publish: up to date (nothing it reads has been materialized since it was last built)")
    else:
        run.log("publish: " + " -> ".join((["contamination across benchmarks"] if planned.keys & phases.across else [])
                                          + (["warehouse"] if planned.keys - phases.across else [])))
        run.summary.ok &= run.execute(planned)
    run.timed("publish", started)


# Dagster's own console lines (step failures with stack traces) stay in the run history the UI
# shows; the terminal gets this runner's lines: FAILED, the checks, the error summary.
_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class _Execution:
    """What every Dagster run of one run_pipeline call shares: the instance, the tags, the
    summary, the log, and what is known of each asset's inputs (`inputs`)."""

    def __init__(self, instance, summary: RunSummary, log: Callable[[str], None]):
        from pipeline.definitions import defs

        self.instance, self.summary, self.log = instance, summary, log
        self.tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), RUN_TAG: summary.run_tag}
        self.inputs = Inputs(instance, defs)
        self.force = False   # every asset runs, whatever its inputs (`wenheng run --force`)

    @classmethod
    def start(cls, log: Callable[[str], None], run_tag: str | None, models: list[str],
              corpora: list[str]) -> _Execution:
        """The instance, with the runs a killed process left marked failed and a partition for
        each model and corpus asked for."""
        from assets.contamination import corpora_partitions
        from assets.evaluate import models_partitions

        instance = _instance()
        fail_orphaned_runs(instance, log)
        for dynamic, names in ((models_partitions, models), (corpora_partitions, corpora)):
            known = set(instance.get_dynamic_partitions(dynamic.name))
            missing = [name for name in names if name not in known]
            if missing:
                instance.add_dynamic_partitions(dynamic.name, missing)
        return cls(instance, RunSummary(run_tag=run_tag or new_run_tag()), log)

    def stopped(self) -> bool:
        if stopping.stop_requested():
            self.summary.ok, self.summary.stopped = False, stopping.stop_signal()
        return self.summary.stopped is not None

    def timed(self, phase: str, started: float) -> None:
        self.summary.timings[phase] = round(self.summary.timings.get(phase, 0.0) + time.perf_counter() - started, 3)

    def todo(self, phases: Phases, job_name: str, partition_key) -> Planned:
        """The run `job_name` needs for the partition (pipeline/staleness.py's plan, as the sensor
        makes it), its damaged outputs said; none to do: the summary lists it as up to date."""
        planned = plan(self.inputs, phases, job_name, partition_key, force=self.force)
        for line in self.inputs.findings:   # damaged outputs the plan found: they run again
            self.log(line)
        self.inputs.findings.clear()
        if not planned.keys:
            self.summary.up_to_date.append(job_name + (f" [{partition_key}]" if partition_key else ""))
        return planned

    def execute(self, planned: Planned) -> bool:
        """One Dagster run of what `planned` has to do, tagged with what each of its assets is
        computed from (INPUTS_TAG); its materializations, failed checks and failed steps go to the
        summary and the log."""
        from pipeline.definitions import defs

        job_name, partition_key = planned.job, planned.partition
        job = defs.resolve_job_def(job_name)
        gc.freeze()   # what earlier runs left alive joins the frozen heap (see run_pipeline)
        result = job.execute_in_process(instance=self.instance, partition_key=partition_key,
                                        asset_selection=list(planned.keys), run_config=_RUN_CONFIG,
                                        raise_on_error=False, tags={**self.tags, **planned.tags()})
        if not result.success:
            stopping.wait(0.3)   # a signal Dagster caught reaches the stop request from a watcher thread
        if stopping.stop_requested():
            self._cancel(result.run_id)
        self._record(result, partition_key)
        if not result.success and self.summary.stopped is None:
            for line in _report_failures(result.all_events, job_name, result.run_id, partition_key, self.summary):
                self.log(line)
        success = result.success
        del result
        memory.release()
        return success

    def _cancel(self, run_id: str) -> None:
        import dagster as dg

        run = self.instance.get_run_by_id(run_id)
        if run is not None and run.status != dg.DagsterRunStatus.CANCELED:
            self.instance.report_run_canceled(run, message=f"stopped by signal {stopping.stop_signal()}")
        self.summary.stopped = stopping.stop_signal()

    def _record(self, result, partition_key) -> None:
        """Each materialization (summary and one line) and each failed check (one line; a failed
        error-rate check also a summary failure with its first errors)."""
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            values = {k: v.value for k, v in mat.metadata.items()}
            self.summary.materializations.append(
                {"asset": mat.asset_key.to_user_string(), "partition": mat.partition, "metadata": values})
            shown = " ".join(f"{k}={format_value(v)}" for k, v in values.items() if k in _SHOWN)
            where = mat.asset_key.to_user_string() + (f" [{mat.partition}]" if mat.partition else "")
            self.log(f"  {where} {shown}".rstrip())
        for event in result.all_events:
            if event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed:
                evaluation = event.event_specific_data
                where = evaluation.asset_key.to_user_string() + (f" [{partition_key}]" if partition_key else "")
                self.log(f"  check {evaluation.check_name} on {where} did not pass")
                meta = {k: v.value for k, v in evaluation.metadata.items()}
                if "error_rate" in meta:
                    self.summary.failures.append(
                        f"{where}: {meta['errors']} of {meta.get('prompts', '?')} prompts failed "
                        f"({_share(meta['error_rate'])}, allowed {_share(meta['threshold'])}); first errors:\n"
                        + "\n".join(f"    {line}" for line in str(meta.get("first_errors", "")).splitlines()))


def _report_failures(events, job_name: str, run_id: str, partition_key, summary: RunSummary) -> list[str]:
    """One terminal line per failed step (`  FAILED responses [wenmind|m]: OSError: ...`); the
    full tracebacks go to the run's log file (summary.log_file). A run that failed outside any
    step (its executor, a resource) gets one line for the run."""
    failed = [e for e in events if e.event_type_value == "STEP_FAILURE"]
    if not failed:
        failed = [e for e in events if e.event_type_value == "PIPELINE_FAILURE"]
    where = f" [{partition_key}]" if partition_key else ""
    lines, details = [], []
    for event in failed:
        name = event.step_key or f"{job_name} run"
        lines.append(f"  FAILED {name}{where}: {failure_cause(event.event_specific_data)}")
        error = getattr(event.event_specific_data, "error", None)
        details.append(f"=== {name}{where} failed (Dagster run {run_id}, job {job_name}) ===\n"
                       + (traceback_text(error) if error is not None else lines[-1].strip()))
    if details:
        summary.log_file = append_log(summary.run_tag, details) or summary.log_file
    return lines


_INSTANCES: dict[str, Any] = {}


def _instance():
    """The Dagster instance at $DAGSTER_HOME, opened once per process: opening it checks every
    storage's schema (~0.6 s), which a process that runs the pipeline again (a notebook, the
    benchmarks) need not pay twice."""
    import dagster as dg

    home = os.path.realpath(os.environ.get("DAGSTER_HOME") or ".")
    if home not in _INSTANCES:
        _INSTANCES[home] = dg.DagsterInstance.get()
    return _INSTANCES[home]


def format_value(value: Any) -> str:
    """A metadata value for a terminal line: whole numbers as they are, other floats to three
    decimals without trailing zeros (0.8333 -> 0.833, 1.0000000000000002 -> 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
        return f'"{text}"' if not text or any(ch.isspace() for ch in text) else text
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        text = f"{value:.3f}".rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    return str(value)


_SHOWN = {"damaged history", "rows", "items", "quarantined", "prompts", "cache_hits", "prompts_sent", "errors",
          "output_tokens_per_s", "scored", "item_mean_rule_score", "pairs", "judged", "judge_calls_sent", "unparseable",
          "files scanned", "files reused", "files quarantined", "MB", "contaminated", "too short"}


def check_selection(selection: str) -> None:
    """`--select` must name at least one asset: a selection that matches none (a mistyped key)
    would run nothing and exit 0. Raises ValueError with one line."""
    import dagster as dg

    from pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    try:
        chosen = dg.AssetSelection.from_string(selection).resolve(graph)
    except Exception as exc:  # noqa: BLE001 - Dagster's parse and lookup errors, each one line here
        raise ValueError(f"--select {selection!r}: {str(exc).splitlines()[0]}") from None
    if not chosen:
        known = sorted(key.to_user_string() for key in graph.get_all_asset_keys())
        raise ValueError(f"--select {selection!r} matches no asset; expected e.g. 'key:items+' or "
                         f"'group:sources' (assets: {', '.join(known[:12])}{', ...' if len(known) > 12 else ''})")
