"""Benchmark x model partitions in parallel through Dagster's own run queue: the wall time of N
evaluate partitions run one at a time (the `inference` pool's limit at 1) against the same N with
the limit at 2 and 4, each model served by the loopback OpenAI-compatible server with a fixed
latency per request.

    .venv/bin/python perf/parallel.py [--partitions 4] [--limits 1,2,4] [--latency 0.8]
        [--benchmark wyweb] [--concurrency 2]

Everything runs as a parallel deployment does: a temp DAGSTER_HOME holding
deploy/local-parallel/dagster.yaml (queued run coordinator, pools at run granularity),
`dagster-daemon run`, the limit set with `dagster instance concurrency set inference N`, the
partitions submitted with `dagster job backfill -j evaluate`. The wall time is Dagster's own
record: from the first run's creation to the last run's end. Each limit asks models of its own
(`l<limit>-<i>`), so no answer comes from the response cache.

tests/integration/scale/test_parallel_partitions.py drives the same `QueueBench`."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
INSTANCE_YAML = ROOT / "deploy" / "local-parallel" / "dagster.yaml"
PHASE_TAG = "wenheng/bench-phase"

# The code location: wenheng's assets, checks, jobs and resources with the executor
# WENHENG_EXECUTOR names (in_process here: a run's steps share its process), whether or not
# pipeline/definitions.py sets one itself. Its sensors and schedule are left out, and the
# instance's automation daemon is off (INSTANCE_OVERRIDES), so the daemon launches only the
# measured runs.
DEFS_MODULE = """\
import dagster as dg

from assets.evaluate import responses, scores
from assets.judge import judge_reliability, judgements
from pipeline import definitions
from pipeline.executors import executor_from_env


def without_automation(wenheng: dg.Definitions) -> dg.Definitions:
    return dg.Definitions(
        assets=wenheng.assets, asset_checks=wenheng.asset_checks, jobs=wenheng.jobs, resources=wenheng.resources,
        executor=wenheng.executor or executor_from_env([responses, judgements, scores, judge_reliability]))


defs = without_automation(definitions.defs)
"""
INSTANCE_OVERRIDES = """
auto_materialize:
  enabled: false
  use_sensors: false
"""


@dataclass
class Phase:
    limit: int
    partitions: list[str]
    wall_s: float          # first run created -> last run ended
    run_s: list[float]     # each run's own start -> end
    max_in_flight: int     # requests the server held at once


class QueueBench:
    """A temp Dagster deployment on this machine: instance, daemon, and models served by `base_url`."""

    def __init__(self, workdir: Path, base_url: str, model: str, models: list[str], concurrency: int = 2,
                 benchmark: str = "wyweb", sources: Path = ROOT / "data" / "sources.yaml"):
        self.workdir, self.benchmark, self.models = Path(workdir), benchmark, models
        self.home = self.workdir / "dagster_home"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text(INSTANCE_YAML.read_text(encoding="utf-8") + INSTANCE_OVERRIDES,
                                                encoding="utf-8")
        entries = "".join(f"""  {name}:
    engine: openai
    base_url: {base_url}
    model: {model}
    api_key_env: null
    concurrency: {concurrency}
""" for name in models)
        (self.workdir / "models.yaml").write_text(f"models:\n{entries}", encoding="utf-8")
        (self.workdir / "scale_defs.py").write_text(DEFS_MODULE, encoding="utf-8")
        self.workspace = self.workdir / "workspace.yaml"
        self.workspace.write_text(json.dumps({"load_from": [{"python_file": {
            "relative_path": str(self.workdir / "scale_defs.py"), "working_directory": str(ROOT),
            "location_name": "wenheng"}}]}), encoding="utf-8")
        self.env = {**os.environ, "DAGSTER_HOME": str(self.home), "WENHENG_EXECUTOR": "in_process",
                    "WENHENG_MODELS": str(self.workdir / "models.yaml"), "WENHENG_SOURCES": str(sources),
                    "WENHENG_LAKE": str(self.workdir / "lake"), "WENHENG_CACHE": str(self.workdir / "cache"),
                    "WENHENG_WAREHOUSE": str(self.workdir / "warehouse.duckdb")}
        self.daemon: subprocess.Popen | None = None
        self._instance = None

    # -- the deployment ----------------------------------------------------------------------------

    @property
    def instance(self):
        if self._instance is None:
            import dagster as dg
            from dagster._core.instance.ref import InstanceRef

            self._instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))
        return self._instance

    def _cli(self, *args: str, timeout: float = 180) -> str:
        done = subprocess.run([str(BIN / "dagster"), *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"dagster {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return done.stdout

    def start(self) -> None:
        """Add the model partitions, start the daemon and, while it starts, build the prompts."""
        self.instance.add_dynamic_partitions("models", self.models)  # creates the storage before anyone else
        log = open(self.workdir / "daemon.log", "w")  # noqa: SIM115 - closed with the daemon's process
        self.daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(self.workspace)],
                                       env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # its code server and runs share its group
        # the item stages and prompts, the way a user builds them (whatever shape `prepare` has)
        done = subprocess.run([str(BIN / "wenheng"), "run", "--benchmark", self.benchmark, "--no-report",
                               "--select", "group:sources or group:items"],
                              env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-3000:]
            raise RuntimeError(f"wenheng run (prepare) failed ({done.returncode}):\n{output}")
        deadline = time.monotonic() + 120
        while "QUEUED_RUN_COORDINATOR" not in self.instance.get_daemon_heartbeats():
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dagster-daemon did not start; see {self.workdir / 'daemon.log'}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            os.killpg(self.daemon.pid, signal.SIGTERM)
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.daemon.pid, signal.SIGKILL)
                self.daemon.wait()
        if self._instance is not None:
            self._instance.dispose()
            self._instance = None

    def __enter__(self) -> QueueBench:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- one measurement ----------------------------------------------------------------------------

    def run(self, limit: int, models: list[str], timeout: float = 600) -> tuple[list[str], float, list[float]]:
        """Set the inference pool's limit, submit one evaluate partition per model as a backfill,
        wait for every run to succeed; (partitions, wall seconds, each run's seconds)."""
        import dagster as dg

        self._cli("instance", "concurrency", "set", "inference", str(limit))
        partitions = [f"{self.benchmark}|{m}" for m in models]
        phase = f"limit-{limit}-{time.time_ns()}"
        self._cli("job", "backfill", "-w", str(self.workspace), "-j", "evaluate", "--noprompt",
                  "--partitions", ",".join(partitions), "--tags", json.dumps({PHASE_TAG: phase}))
        deadline = time.monotonic() + timeout
        while True:
            records = self.instance.get_run_records(dg.RunsFilter(tags={PHASE_TAG: phase}))
            if len(records) == len(partitions) and all(r.dagster_run.is_finished for r in records):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"runs not finished after {timeout} s: "
                                   f"{[(r.dagster_run.run_id[:8], r.dagster_run.status.value) for r in records]}")
            time.sleep(0.5)
        failed = [r.dagster_run for r in records if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
        if failed:
            raise RuntimeError(f"{len(failed)} runs did not succeed: {[(r.run_id, r.status.value) for r in failed]}")
        created = min(r.create_timestamp.timestamp() for r in records)
        ended = max(r.end_time for r in records)
        return partitions, ended - created, sorted(r.end_time - r.start_time for r in records)


def measure(bench: QueueBench, server, limit: int, models: list[str]) -> Phase:
    server.reset_counters()
    partitions, wall, runs = bench.run(limit, models)
    return Phase(limit, partitions, wall, runs, server.stats()["max_in_flight"])


def main() -> None:
    from pipeline.testing.openai_server import OpenAIServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--limits", default="1,2,4", help="inference pool limits to measure, comma-separated")
    parser.add_argument("--latency", type=float, default=0.8, help="seconds per request at the server")
    parser.add_argument("--benchmark", default="wyweb")
    parser.add_argument("--concurrency", type=int, default=2, help="requests in flight per model")
    args = parser.parse_args()
    limits = [int(x) for x in args.limits.split(",")]
    models = {limit: [f"l{limit}-{i}" for i in range(1, args.partitions + 1)] for limit in limits}
    with tempfile.TemporaryDirectory(prefix="wenheng-parallel-") as tmp, \
            OpenAIServer(latency_s=args.latency) as server, \
            QueueBench(Path(tmp), server.base_url, server.model, [m for ms in models.values() for m in ms],
                       concurrency=args.concurrency, benchmark=args.benchmark) as bench:
        print(f"{args.partitions} partitions of {args.benchmark}, {args.concurrency} requests in flight per model, "
              f"{args.latency} s per request; load average before: {open('/proc/loadavg').read().split()[:3]}")
        first = None
        for limit in limits:
            phase = measure(bench, server, limit, models[limit])
            first = first or phase.wall_s
            print(f"inference pool limit {limit}: {phase.wall_s:6.1f} s wall "
                  f"({first / phase.wall_s:.2f}x the first), runs {min(phase.run_s):.1f}-{max(phase.run_s):.1f} s, "
                  f"at most {phase.max_in_flight} requests in flight", flush=True)
        print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
