"""Running the graph in-process, in phases that match the jobs:
prepare (one run per requested benchmark) -> evaluate (one run per benchmark x model partition) ->
scan (one run per corpus of data/corpora.yaml, when any) -> publish (one run: contamination across
benchmarks, then the warehouse and its table assets).

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

from pipeline import stopping
from pipeline.paths import RUN_TAG

PAPER_TABLES_PREFIX = "paper_tables_"   # assets/warehouse.py: one table asset per benchmark card
PID_TAG, HOST_TAG = "wenheng/pid", "wenheng/host"


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
                 corpora: list[str] | None = None) -> RunSummary:
    """Materialize the requested benchmarks' item stages, each benchmark x model partition, each
    corpus's overlap with the items, then the warehouse. Other benchmarks' partitions are left as
    they are."""
    import pipeline.definitions  # noqa: F401  (loaded before the freeze below)

    _instance()
    # Dagster's definitions, the instance and the imported modules outlive every step: frozen,
    # they are out of the cyclic garbage collector's reach, so its collections during the steps
    # do not walk that large heap again and again. Unfrozen at the end, so nothing stays
    # uncollectable after the run (native extensions report such objects as leaks at exit).
    gc.freeze()
    try:
        return _run_pipeline(benchmarks, models, selection, log, run_tag, corpora or [])
    finally:
        gc.unfreeze()


def _run_pipeline(benchmarks: list[str], models: list[str], selection: str | None,
                  log: Callable[[str], None], run_tag: str | None, corpora: list[str]) -> RunSummary:
    import dagster as dg

    from assets.contamination import corpora_partitions
    from assets.evaluate import models_partitions
    from assets.sources import benchmark_partitions
    from pipeline.definitions import defs, export_path_defaults

    export_path_defaults()   # the resources read their files through dg.EnvVar
    instance = _instance()
    fail_orphaned_runs(instance, log)
    summary = RunSummary(run_tag=run_tag or new_run_tag())
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), RUN_TAG: summary.run_tag}
    known = set(instance.get_dynamic_partitions(models_partitions.name))
    missing = [m for m in models if m not in known]
    if missing:
        instance.add_dynamic_partitions(models_partitions.name, missing)
    new_corpora = [c for c in corpora if c not in set(instance.get_dynamic_partitions(corpora_partitions.name))]
    if new_corpora:
        instance.add_dynamic_partitions(corpora_partitions.name, new_corpora)
    graph = defs.resolve_asset_graph()
    chosen = (dg.AssetSelection.from_string(selection) if selection else dg.AssetSelection.all()).resolve(graph)
    # Dagster's own console lines (step failures with stack traces) stay in the run history the
    # UI shows; the terminal gets this runner's lines: FAILED, the checks, the error summary.
    run_config = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

    def phase_keys(phase: str) -> set:
        """The chosen assets of one phase, by group: prepare's per benchmark, prepare's across
        benchmarks (contamination), evaluate's, publish's (the warehouse and its table assets)."""
        groups = {"prepare": ("sources", "items"), "prepare_across": ("sources", "items"), "evaluate": ("evaluate",),
                  "scan": ("corpora",), "publish": ("warehouse",)}[phase]
        keys = {key for key in graph.get_all_asset_keys() if graph.get(key).group_name in groups}
        if phase.startswith("prepare"):
            per_benchmark = phase == "prepare"
            keys = {key for key in keys if (graph.get(key).partitions_def == benchmark_partitions) == per_benchmark}
        if phase == "publish":
            # a benchmark's paper-table asset only when it was evaluated: the others did not change
            keys = {key for key in keys if not key.path[0].startswith(PAPER_TABLES_PREFIX)
                    or key.path[0][len(PAPER_TABLES_PREFIX):] in benchmarks}
        return keys & chosen

    def execute(job_name: str, keys: set, partition_key=None) -> bool:
        if not keys:
            return True
        job = defs.resolve_job_def(job_name)
        gc.freeze()   # what earlier runs left alive joins the frozen heap (see run_pipeline)
        result = job.execute_in_process(instance=instance, partition_key=partition_key, asset_selection=list(keys),
                                        run_config=run_config, raise_on_error=False, tags=tags)
        if not result.success:
            stopping.wait(0.3)   # a signal Dagster caught reaches the stop request from a watcher thread
        if stopping.stop_requested():
            run = instance.get_run_by_id(result.run_id)
            if run is not None and run.status != dg.DagsterRunStatus.CANCELED:
                instance.report_run_canceled(run, message=f"stopped by signal {stopping.stop_signal()}")
            summary.stopped = stopping.stop_signal()
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            values = {k: v.value for k, v in mat.metadata.items()}
            summary.materializations.append(
                {"asset": mat.asset_key.to_user_string(), "partition": mat.partition, "metadata": values})
            shown = " ".join(f"{k}={format_value(v)}" for k, v in values.items() if k in _SHOWN)
            where = mat.asset_key.to_user_string() + (f" [{mat.partition}]" if mat.partition else "")
            log(f"  {where} {shown}".rstrip())
        for event in result.all_events:
            if event.event_type_value == "ASSET_CHECK_EVALUATION" and not event.event_specific_data.passed:
                evaluation = event.event_specific_data
                where = evaluation.asset_key.to_user_string() + (f" [{partition_key}]" if partition_key else "")
                log(f"  check {evaluation.check_name} on {where} did not pass")
                meta = {k: v.value for k, v in evaluation.metadata.items()}
                if "error_rate" in meta:
                    summary.failures.append(
                        f"{where}: {meta['errors']} of {meta.get('prompts', '?')} prompts failed "
                        f"({_share(meta['error_rate'])}, allowed {_share(meta['threshold'])}); first errors:\n"
                        + "\n".join(f"    {line}" for line in str(meta.get("first_errors", "")).splitlines()))
        if not result.success and summary.stopped is None:
            for line in _report_failures(result.all_events, job_name, result.run_id, partition_key, summary):
                log(line)
        return result.success

    def stopped() -> bool:
        if stopping.stop_requested():
            summary.ok, summary.stopped = False, stopping.stop_signal()
        return summary.stopped is not None

    def timed(phase: str, started: float) -> None:
        summary.timings[phase] = round(summary.timings.get(phase, 0.0) + time.perf_counter() - started, 3)

    log(f"run {RUN_TAG}={summary.run_tag} (filter on this tag in the Dagster UI)")
    # each phase's assets, once: the graph does not change during a run
    per_benchmark, across, evaluate, scan, publish = (phase_keys(p) for p in ("prepare", "prepare_across",
                                                                              "evaluate", "scan", "publish"))
    started = time.perf_counter()
    for benchmark in benchmarks if per_benchmark else []:
        if stopped():
            return summary
        log(f"prepare: {benchmark}: sources -> items -> dedup -> variants -> prompts")
        summary.ok &= execute("prepare", per_benchmark, benchmark)
    if per_benchmark:
        timed("prepare", started)
    if not summary.ok or stopped():
        return summary
    started = time.perf_counter()
    for model in models if evaluate else []:
        for benchmark in benchmarks:
            if stopped():
                timed("evaluate", started)
                return summary
            log(f"evaluate: {benchmark} x {model}")
            summary.ok &= execute("evaluate", evaluate, dg.MultiPartitionKey({"benchmark": benchmark, "model": model}))
        timed("evaluate", started)
        started = time.perf_counter()
    if stopped():
        return summary
    started = time.perf_counter()
    for corpus in corpora if scan else []:
        if stopped():
            timed("scan", started)
            return summary
        log(f"scan: {corpus}: corpus files -> n-grams -> every benchmark item")
        summary.ok &= execute("scan", scan, corpus)
    if corpora and scan:
        timed("scan", started)
    if stopped():
        return summary
    started = time.perf_counter()
    if across or publish:
        # contamination (across benchmarks) runs in the publish run, before the warehouse that
        # reads it: one run fewer than a run of its own, and it still follows every prepare
        log("publish: " + " -> ".join((["contamination across benchmarks"] if across else [])
                                      + (["warehouse"] if publish else [])))
        summary.ok &= execute("publish", across | publish)
        timed("publish", started)
    return summary


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
        summary.log_file = _append_log(summary.run_tag, details) or summary.log_file
    return lines


def failure_cause(data) -> str:
    """What made a step fail, in one line: a dg.Failure's description; else the exception user
    code raised (unwrapped from Dagster's errors around it), its class name and the first line
    of its message. Never the stack trace: that goes to the run's log file."""
    failure = getattr(data, "user_failure_data", None)
    if failure is not None and failure.description:
        return " ".join(failure.description.split())
    error = getattr(data, "error", None)
    # Dagster wraps the error user code raised: its cause is what the user needs to read
    while error is not None and error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    if error is None:
        return "no error was recorded (see the run in the Dagster UI)"
    name = error.cls_name or "Error"
    text = (error.message or "").strip()
    head, sep, rest = text.partition(":")   # format_exception_only: `module.Class: message`
    if head.rsplit(".", 1)[-1] == name:
        text = rest.strip() if sep else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:   # `1 blocking asset check failed ...:` + what failed
        first = " ".join(lines)[:500]
    return f"{name}: {first}" if first else name


def traceback_text(error) -> str:
    """Dagster's record of an error (SerializableErrorInfo) as Python prints a traceback: the
    first cause first, each exception's stack above its message."""
    chain, joins = [], []
    while error is not None:
        chain.append(error)
        if error.cause is not None:
            joins.append("The above exception was the direct cause of the following exception:")
            error = error.cause
        else:
            joins.append("During handling of the above exception, another exception occurred:")
            error = error.context
    parts = []
    for i, err in enumerate(reversed(chain)):
        if i:
            parts.append(f"\n{joins[len(chain) - 1 - i]}\n\n")
        stack = "".join(err.stack or [])
        parts.append(("Traceback (most recent call last):\n" + stack if stack else "")
                     + (err.message or err.cls_name or "").rstrip() + "\n")
    return "".join(parts)


def _append_log(run_tag: str, blocks: list[str]):
    """Appends to the run's log file; returns its path, or None when it cannot be written (a full
    disk is one reason a step fails)."""
    from pipeline import paths

    path = paths.run_log_file(run_tag)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            out.writelines(f"\n{stamp} {block.rstrip()}\n" for block in blocks)
    except OSError:
        return None
    return path


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


def fail_orphaned_runs(instance, log: Callable[[str], None] = print) -> list[str]:
    """Mark failed the runs left STARTED by a `wenheng run` on this host whose process is gone
    (killed, or the machine went down). Returns their ids."""
    import dagster as dg

    host, marked = socket.gethostname(), []
    for run in instance.get_runs(filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.CANCELING])):
        pid = run.tags.get(PID_TAG)
        if pid is None or run.tags.get(HOST_TAG) != host or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        instance.report_run_failed(run, message=f"the process that ran it (pid {pid}) is gone")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)  # its pool slot, else held forever
        log(f"  run {run.run_id} ({run.job_name}) was left {run.status.value} by pid {pid}, which is gone: "
            "marked failed")
        marked.append(run.run_id)
    return marked


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_SHOWN = {"rows", "items", "quarantined", "prompts", "cache_hits", "prompts_sent", "errors",
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
