"""What a correction or a new upstream release costs, against a full build.

A full build of WenMind (the real file), AC-EVAL and the public WYWEB snapshot (from ../shared/upstream
or $WENHENG_UPSTREAM) plus wenheng's Fùxì and CP-DUE samples, answered by an OpenAI-compatible
endpoint with zero latency (the loopback server), so what is measured is wenheng's own work, not
a model's. Then three changes, each rebuilt from a warm state, counting the endpoint's calls:

  1. one answer correction      -> expect 0 calls (the prompt did not change)
  2. one question correction    -> expect 1 call
  3. a new WenMind release with N changed questions -> expect N calls

Each change is rebuilt twice:
  cli         `wenheng run --benchmark wenmind` (pipeline.runner.run_pipeline with the changed benchmark)
  daemon      the definitions' own stale_sensor, evaluated in this process tick by tick (each tick's
              run requests executed with their tags before the next tick, as the daemon launches them,
              until none is requested); it counts runs and `scores` materializations per partition,
              and leaves out the daemon's polling interval, which is configuration, not work.
After each CLI rebuild it prints what Dagster's own stale rule (the UI's "unsynced") still calls
stale: where the two staleness rules disagree.

    .venv/bin/python perf/incremental.py [--changed 100] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
UPSTREAM = Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream"))
BENCHMARKS = ["wenmind", "aceval", "wyweb", "fuxi", "cpdue"]


def write_sources(work: Path, wenmind_version: str) -> Path:
    samples = ROOT / "data" / "samples"
    text = f"""duplicates: flag
benchmarks:
  wenmind: {{path: {work / 'wenmind' / 'WenMind.json'}, version: {wenmind_version}}}
  aceval: {{path: {UPSTREAM / 'aceval'}, version: public}}
  wyweb: {{path: {UPSTREAM / 'wyweb'}, version: public}}
  fuxi: {{path: {samples / 'fuxi'}, version: sample-1}}
  cpdue: {{path: {samples / 'cpdue'}, version: sample-1}}
"""
    path = work / "sources.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def write_models(work: Path, server) -> Path:
    path = work / "models.yaml"
    path.write_text(f"""models:
  served:
    engine: openai
    base_url: {server.base_url}
    model: {server.model}
    api_key_env: null
    chat: true
    concurrency: 32
""", encoding="utf-8")
    return path


def calls(server) -> int:
    return sum(server.successes.values())


PHASES: dict[str, float] = {}
RUNS: Counter = Counter()   # the last CLI build's Dagster runs, per job


def cli_build(benchmarks: list[str]) -> tuple[float, bool]:
    """`wenheng run --benchmark ...`; the runner's seconds per phase are kept in PHASES, the Dagster
    runs it launched (per job) in RUNS."""
    import dagster as dg

    from pipeline.paths import RUN_TAG
    from pipeline.runner import run_pipeline

    started = time.perf_counter()
    summary = run_pipeline(benchmarks, ["served"], log=lambda _: None)
    seconds = time.perf_counter() - started
    PHASES.clear()
    PHASES.update(getattr(summary, "timings", {}) or {})
    RUNS.clear()
    for run in dg.DagsterInstance.get().get_runs(filters=dg.RunsFilter(tags={RUN_TAG: summary.run_tag})):
        RUNS[run.job_name] += 1
        if run.job_name == "evaluate" and dg.AssetKey("responses") not in (run.asset_selection or ()):
            RUNS["evaluate without a responses step"] += 1
    return seconds, summary.ok


def phases() -> str:
    runs = ", ".join(f"{job} {n}" for job, n in sorted(RUNS.items()))
    launched = sum(n for job, n in RUNS.items() if job != "evaluate without a responses step")
    return ", ".join(f"{k} {v:.1f}" for k, v in PHASES.items()) + f"; {launched} runs: {runs}"


QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def daemon_build(state: dict) -> tuple[float, int, Counter]:
    """The stale sensor's ticks, each tick's runs executed before the next, as the daemon's runs
    would be, until a tick requests nothing (a run key is launched once, as the daemon does).
    Returns (seconds, runs, scores materializations per partition). `state` keeps the run keys used."""
    import dagster as dg

    from pipeline.definitions import defs

    instance = dg.DagsterInstance.get()
    used = state.setdefault("run keys", set())
    started, runs, scored = time.perf_counter(), 0, Counter()
    sensor = defs.resolve_sensor_def("stale_sensor")
    for _ in range(20):
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
        requests = [r for r in (result if isinstance(result, list) else []) if r.run_key not in used]
        if not requests:
            break
        for request in requests:
            used.add(request.run_key)
            runs += _execute(defs, instance, request.job_name, request.partition_key, request.asset_selection,
                             scored, request.tags)
    return time.perf_counter() - started, runs, scored


def first_tick() -> int:
    """The runs the daemon's first tick would launch now (after a `wenheng run`: none)."""
    import dagster as dg

    from pipeline.definitions import defs

    result = defs.resolve_sensor_def("stale_sensor")(
        dg.build_sensor_context(instance=dg.DagsterInstance.get(), definitions=defs))
    return len(result) if isinstance(result, list) else 0


def _execute(defs, instance, job_name: str, partition, selection, scored: Counter, tags: dict) -> int:
    """One run, executed in this process as the daemon would launch it."""
    import dagster as dg

    from assets.evaluate import benchmark_x_model

    if job_name == "evaluate" and isinstance(partition, str):
        partition = benchmark_x_model.get_partition_key_from_str(partition)
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, partition_key=partition, asset_selection=list(selection) if selection else None,
        run_config=QUIET, raise_on_error=False, tags=tags)
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == dg.AssetKey("scores"):
            scored[mat.partition] += 1
    if not result.success:
        print(f"  {job_name} [{partition}] failed", file=sys.stderr)
    return 1


def dagster_stale() -> str:
    """What the Dagster UI would badge 'unsynced' now (pipeline.staleness.unsynced), while wenheng's
    plan has just called everything up to date; "n/a" when Dagster's internal resolver moved."""
    try:
        import dagster as dg

        from pipeline.definitions import defs
        from pipeline.staleness import unsynced

        total, stale = unsynced(dg.DagsterInstance.get(), defs)
    except Exception as error:  # noqa: BLE001 - a measurement, not a feature
        return f"n/a ({type(error).__name__})"
    return f"{len(stale)} of {total}" + (f" ({', '.join(stale)})" if stale else "")


def edit_wenmind(path: Path, n_changed: int, offset: int = 0) -> list[str]:
    """A new release: n questions (spread over the file; `offset` picks another n) get a revision
    mark appended. Returns their ids."""
    data = json.loads(path.read_text(encoding="utf-8"))
    changed = []
    step = max(2, len(data) // n_changed)
    for row in data[offset::step][:n_changed]:
        row["question"] = row["question"] + "（修订）"
        changed.append(str(row["id"]))
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changed", type=int, default=100, help="changed questions in the new release")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temp folder)")
    parser.add_argument("--no-daemon", action="store_true", help="measure the CLI path only")
    parser.add_argument("--repeat", type=int, default=1,
                        help="make each change this many times (to other items), to see the spread")
    args = parser.parse_args()
    wenmind_file = UPSTREAM / "wenmind" / "WenMind_ver1.json"
    if not wenmind_file.is_file() or not (UPSTREAM / "aceval").is_dir():
        print(f"incremental: the real benchmark files are not under {UPSTREAM}", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="wenheng-incremental-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "wenmind").mkdir(exist_ok=True)
    shutil.copy(wenmind_file, work / "wenmind" / "WenMind.json")
    (work / "corrections").mkdir(exist_ok=True)
    (work / "dagster_home").mkdir(exist_ok=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", work / "dagster_home" / "dagster.yaml")
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache"),
                      ("WENHENG_CORRECTIONS", "corrections")]:
        os.environ[name] = str(work / sub)

    from pipeline.testing.openai_server import OpenAIServer

    with OpenAIServer(latency_s=0.0) as server:
        os.environ["WENHENG_SOURCES"] = str(write_sources(work, "v1"))
        os.environ["WENHENG_MODELS"] = str(write_models(work, server))
        print(f"work dir {work}; load average {os.getloadavg()[0]:.1f}")

        seconds, ok = cli_build(BENCHMARKS)
        full_calls, cold = calls(server), seconds
        print(f"full build (cold)       {seconds:7.1f} s  {full_calls:6d} calls  {'ok' if ok else 'FAILED'}  "
              f"<- from nothing: every item prepared, every prompt sent ({phases()})")
        seconds, ok = cli_build(BENCHMARKS)
        full = seconds
        print(f"full build (warm cache) {seconds:7.1f} s  {calls(server) - full_calls:6d} calls  "
              f"{'ok' if ok else 'FAILED'}  <- the same inputs again: only what is out of date runs, every answer from "
              f"the cache ({phases()})")
        state: dict = {}
        if not args.no_daemon:
            print(f"daemon's first tick after it   {first_tick():6d} runs  <- the CLI's runs are the daemon's history")

        import duckdb

        with duckdb.connect(os.environ["WENHENG_WAREHOUSE"], read_only=True) as con:
            picked = con.execute(
                "SELECT item_id, question, answer FROM items WHERE benchmark = 'wenmind' AND split = 'test' "
                f"AND answer IS NOT NULL ORDER BY item_id LIMIT {4 * args.repeat}").fetchall()

        def correct(name: str, item_id: str, field: str, old: str, new: str) -> None:
            import yaml

            entry = {"item_id": item_id, "field": field, "old": old, "new": new,
                     "reason": "benchmark: incremental rebuild", "date": "2026-11-22"}
            (work / "corrections" / f"{name}.yaml").write_text(
                yaml.safe_dump({"corrections": [entry]}, allow_unicode=True), encoding="utf-8")

        # Each change is made twice per repeat, to different items (and a release on other questions):
        # once rebuilt by the CLI (k even), once by the daemon's stale_sensor (k odd).
        q = 2 * args.repeat   # the question corrections' items follow the answer corrections' ones
        cases = [
            ("one answer correction", 0,
             lambda k: correct(f"answer{k}", picked[k][0], "answer", picked[k][2], picked[k][2] + "。")),
            ("one question correction", 1,
             lambda k: correct(f"question{k}", picked[q + k][0], "question", picked[q + k][1],
                               picked[q + k][1] + "？")),
            (f"new WenMind release, {args.changed} questions changed", args.changed,
             lambda k: (edit_wenmind(work / "wenmind" / "WenMind.json", args.changed, offset=k),
                        write_sources(work, f"v{2 + k}"))),
        ]
        print(f"\n{'change':46s} {'path':10s} {'seconds':>8s} {'vs cold':>8s} {'vs warm':>8s} {'calls':>6s} "
              f"{'expected':>8s}  runs")
        for (label, expected, apply), r in ((case, r) for case in cases for r in range(args.repeat)):
            apply(2 * r)
            before = calls(server)
            seconds, ok = cli_build(["wenmind"])
            print(f"{label:46s} {'cli':10s} {seconds:8.1f} {seconds / cold:8.1%} {seconds / full:8.1%} "
                  f"{calls(server) - before:6d} "
                  f"{expected:8d}  {'' if ok else 'FAILED'} ({phases()})")
            print(f"{'':46s} {'':10s} Dagster's own stale rule after it: {dagster_stale()}")
            if args.no_daemon:
                continue
            tick = first_tick()   # the CLI's runs are history for the daemon, not work for it
            apply(2 * r + 1)
            before = calls(server)
            seconds, runs, scored = daemon_build(state)
            twice = {p: n for p, n in scored.items() if n > 1}
            print(f"{'':46s} {'daemon':10s} {seconds:8.1f} {seconds / cold:8.1%} {seconds / full:8.1%} "
                  f"{calls(server) - before:6d} "
                  f"{expected:8d}  {runs} runs; scores partitions computed once: "
                  f"{sum(1 for n in scored.values() if n == 1)}, twice or more: {len(twice)}; the daemon's tick "
                  f"after the CLI's rebuild: {tick} runs")
        if not args.no_daemon:
            before = calls(server)
            seconds, ok = cli_build(BENCHMARKS)
            print(f"\nwenheng run after the daemon's last runs: {seconds:.1f} s, {calls(server) - before} calls "
                  f"({phases()})")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
