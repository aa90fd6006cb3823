"""Benchmark x model partitions run in parallel through Dagster's own machinery: a temp instance
with deploy/local-parallel/dagster.yaml (queued run coordinator, pools at run granularity), a
`dagster-daemon` started here, the partitions submitted with `dagster job backfill`, the
`inference` pool's limit set with `dagster instance concurrency set`. Four partitions of an
OpenAI-compatible model (the loopback server, a fixed latency per request) run one at a time with
the limit at 1, then side by side with the limit at 4."""

from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT

from pipeline.testing.openai_server import OpenAIServer

PER_MODEL_CONCURRENCY = 2


def _bench_module():
    spec = importlib.util.spec_from_file_location("wenheng_parallel_bench", ROOT / "perf" / "parallel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_run_queue_runs_partitions_side_by_side(tmp_path):
    bench = _bench_module()
    sequential_models = [f"one-{i}" for i in range(1, 5)]
    parallel_models = [f"four-{i}" for i in range(1, 5)]   # models of their own: nothing from the cache
    # wyweb's samples: 40 prompts, 2 in flight, 0.5 s each -> about 10 s of waiting per partition,
    # against some 5 s of CPU per run (a process, imports, four steps), which a machine of 2 shared
    # cores stretches when four runs start at once: limit 1 takes 4 x (10 + 5) s or more, limit 4
    # at most 10 + 4 x 5 s on one free core, under the 0.7 asked below
    with OpenAIServer(latency_s=0.5) as server, \
            bench.QueueBench(tmp_path, server.base_url, server.model, sequential_models + parallel_models,
                             concurrency=PER_MODEL_CONCURRENCY, benchmark="wyweb") as deployment:
        load_before = open("/proc/loadavg").read().split()[:3]
        one = bench.measure(deployment, server, 1, sequential_models)
        answered_one = sum(server.successes.values())
        four = bench.measure(deployment, server, 4, parallel_models)
        answered_four = sum(server.successes.values())
    print(f"\n4 partitions, inference pool limit 1: {one.wall_s:.1f} s wall (runs {min(one.run_s):.1f}-"
          f"{max(one.run_s):.1f} s); limit 4: {four.wall_s:.1f} s wall (runs {min(four.run_s):.1f}-"
          f"{max(four.run_s):.1f} s): {four.wall_s / one.wall_s:.2f}x; load average {load_before} -> "
          f"{open('/proc/loadavg').read().split()[:3]}")
    # the same prompts were sent in both phases, each answered once (the runs succeeded: no error rows)
    assert answered_one == answered_four > 0 and answered_one % 4 == 0
    # limit 1: one run at a time, so never more requests in flight than one model sends
    assert one.max_in_flight <= PER_MODEL_CONCURRENCY
    # limit 4: the runs overlapped at the server, and the wall time shows it
    assert four.max_in_flight > PER_MODEL_CONCURRENCY
    assert four.wall_s < 0.7 * one.wall_s
