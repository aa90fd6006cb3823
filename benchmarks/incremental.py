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
  automation  the definitions' own sensor and automation conditions, evaluated in this process tick
              by tick (the sensor's run request, then every run the automation conditions request,
              until none is requested); it counts runs and `scores` materializations per partition,
              and leaves out the daemon's polling interval, which is configuration, not work.

    .venv/bin/python benchmarks/incremental.py [--changed 100] [--keep DIR]
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


def cli_build(benchmarks: list[str]) -> tuple[float, bool]:
    from pipeline.runner import run_pipeline

    started = time.perf_counter()
    summary = run_pipeline(benchmarks, ["served"], log=lambda _: None)
    return time.perf_counter() - started, summary.ok


def automation_build() -> tuple[float, int, Counter]:
    """The sensor's request, then the automation conditions' requests, run in this process
    until nothing more is requested. Returns (seconds, runs, scores materializations per partition)."""
    import dagster as dg

    from pipeline.definitions import defs

    instance = dg.DagsterInstance.get()
    started, runs, scored = time.perf_counter(), 0, Counter()
    sensor = defs.resolve_sensor_def("source_changes_sensor")
    cursor = _sensor_cursor(instance)
    with dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs) as context:
        result = sensor(context)
        requests = _run_requests(result)
        _save_sensor_cursor(instance, context.cursor)
    graph = defs.resolve_asset_graph()
    for request in requests:
        runs += _execute(defs, instance, request, scored)
    cursor = None
    while True:
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        if not result.run_requests:
            break
        for request in result.run_requests:
            runs += _execute(defs, instance, request, scored, graph)
    return time.perf_counter() - started, runs, scored


_CURSOR_FILE = "incremental-sensor-cursor.txt"


def _sensor_cursor(instance) -> str | None:
    path = Path(instance.root_directory) / _CURSOR_FILE
    return path.read_text() if path.is_file() else None


def _save_sensor_cursor(instance, cursor: str | None) -> None:
    if cursor is not None:
        (Path(instance.root_directory) / _CURSOR_FILE).write_text(cursor)


def _run_requests(result) -> list:
    import dagster as dg

    if result is None or isinstance(result, dg.SkipReason):
        return []
    if isinstance(result, dg.RunRequest):
        return [result]
    if isinstance(result, dg.SensorResult):
        return list(result.run_requests or [])
    return list(result)


def _execute(defs, instance, request, scored: Counter, graph=None) -> int:
    """One run request executed in process, as the daemon would launch it."""
    import dagster as dg

    if request.job_name:
        job = defs.resolve_job_def(request.job_name)
        selection = request.asset_selection
    else:
        keys = list(request.asset_selection or [])
        job = defs.resolve_implicit_global_asset_job_def() if hasattr(defs, "resolve_implicit_global_asset_job_def") \
            else defs.get_implicit_global_asset_job_def()
        selection = keys
    result = job.execute_in_process(instance=instance, partition_key=request.partition_key,
                                    asset_selection=selection, raise_on_error=False, tags=request.tags)
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key == dg.AssetKey("scores"):
            scored[mat.partition] += 1
    if not result.success:
        print(f"  run {result.run_id} failed", file=sys.stderr)
    return 1


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
    parser.add_argument("--no-automation", action="store_true", help="measure the CLI path only")
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
        full_calls = calls(server)
        print(f"full build (cold)       {seconds:7.1f} s  {full_calls:6d} calls  {'ok' if ok else 'FAILED'}")
        seconds, ok = cli_build(BENCHMARKS)
        full = seconds
        print(f"full build (warm cache) {seconds:7.1f} s  {calls(server) - full_calls:6d} calls  "
              f"{'ok' if ok else 'FAILED'}  <- the baseline each change is compared with")
        if not args.no_automation:
            automation_build()   # the sensor learns the current state: nothing is requested later for it

        import duckdb

        with duckdb.connect(os.environ["WENHENG_WAREHOUSE"], read_only=True) as con:
            picked = con.execute(
                "SELECT item_id, question, answer FROM items WHERE benchmark = 'wenmind' AND split = 'test' "
                "AND answer IS NOT NULL ORDER BY item_id LIMIT 4").fetchall()

        def correct(name: str, item_id: str, field: str, old: str, new: str) -> None:
            import yaml

            entry = {"item_id": item_id, "field": field, "old": old, "new": new,
                     "reason": "benchmark: incremental rebuild", "date": "2026-11-22"}
            (work / "corrections" / f"{name}.yaml").write_text(
                yaml.safe_dump({"corrections": [entry]}, allow_unicode=True), encoding="utf-8")

        # Each change is made twice, to different items (and a second release on other questions):
        # once rebuilt by the CLI, once by the sensor and automation conditions.
        cases = [
            ("one answer correction", 0,
             lambda k: correct(f"answer{k}", picked[k][0], "answer", picked[k][2], picked[k][2] + "。")),
            ("one question correction", 1,
             lambda k: correct(f"question{k}", picked[2 + k][0], "question", picked[2 + k][1],
                               picked[2 + k][1] + "？")),
            (f"new WenMind release, {args.changed} questions changed", args.changed,
             lambda k: (edit_wenmind(work / "wenmind" / "WenMind.json", args.changed, offset=k),
                        write_sources(work, f"v{2 + k}"))),
        ]
        print(f"\n{'change':46s} {'path':10s} {'seconds':>8s} {'vs full':>8s} {'calls':>6s} {'expected':>8s}  runs")
        for label, expected, apply in cases:
            apply(0)
            before = calls(server)
            seconds, ok = cli_build(["wenmind"])
            print(f"{label:46s} {'cli':10s} {seconds:8.1f} {seconds / full:8.1%} {calls(server) - before:6d} "
                  f"{expected:8d}  {'' if ok else 'FAILED'}")
            if args.no_automation:
                continue
            apply(1)
            before = calls(server)
            seconds, runs, scored = automation_build()
            twice = {p: n for p, n in scored.items() if n > 1}
            print(f"{'':46s} {'automation':10s} {seconds:8.1f} {seconds / full:8.1%} {calls(server) - before:6d} "
                  f"{expected:8d}  {runs} runs; scores partitions computed once: "
                  f"{sum(1 for n in scored.values() if n == 1)}, twice or more: {len(twice)}")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
