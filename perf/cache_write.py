"""What the response cache costs per call: client CPU of OpenAIEngine alone against the same engine
behind `run_with_cache` (cache lookup, engine, every answer stored), on an instant loopback
server (pipeline/testing/openai_server.py, in its own process, so its CPU is not counted).

    .venv/bin/python perf/cache_write.py [--calls 2000] [--concurrency 32] [--rounds 15]
        [--baseline REV]

The paths run turn about, round after round, each on prompts of its own (nothing is a cache
hit), each cached round on a fresh cache file, each round starting one path further on (so no
path always runs right after the same one): the engine alone; `run_with_cache`; the baseline,
`run_with_cache` of an earlier revision's pipeline/engines/cache.py loaded from git (default: the
last one before answers were batched; HEAD while the change is not committed), skipped when git
cannot give it; and the reference, the store as it was before batching written out here (the
engine with one autocommit INSERT per answer on the event loop's thread, `dataclasses.asdict` +
execute, plus the progress line), which needs no git. Figures are CPU ms per call (process time:
every thread of this process, the SQLite writer's included), the median over the rounds with the
range after it, and each path's ratio to the engine alone: the median of the ratios within each
round, with their interquartile range. The ratio is the figure to compare across runs: on a
shared machine the load moves every path's CPU per call by 10-20% from one round to the next,
and pairing within a round takes most of that out; the load average is printed with it. What is
timed is `run_with_cache` itself: opening the cache and closing it (its last WAL checkpoint) are
not, and each round's cache file starts empty, so its B-tree is small (a cache of many thousand
answers costs more per row: more distinct pages written per batch)."""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))

from baseline import before_introducing, git, module_at  # noqa: E402  (perf/baseline.py)


def _server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "pipeline.testing.openai_server", "--latency", str(latency)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    port = int(process.stdout.readline().split()[1])
    return process, f"http://127.0.0.1:{port}/v1"


def baseline_cache(revision: str | None):
    """run_with_cache of `revision`'s pipeline/engines/cache.py, loaded from git into a module of
    its own, and the revision; (None, why) when git cannot give it or it is today's file."""
    path = "pipeline/engines/cache.py"
    try:
        revision = revision or before_introducing("class AnswerWriter", path) or "HEAD"
        if git("show", f"{revision}:{path}") == (ROOT / path).read_text(encoding="utf-8"):
            return None, f"{revision}'s file is today's"
        return module_at(revision, path, "baseline_cache"), revision
    except (OSError, subprocess.CalledProcessError) as error:
        return None, f"git could not give it ({error})"


def _short(revision: str) -> str:
    """A revision for a label: a hash cut to 12 characters, keeping a suffix such as `^`."""
    cut = min((revision.index(c) for c in "^~" if c in revision), default=len(revision))
    head = revision[:cut]
    return head[:12] + revision[cut:] if len(head) == 40 else revision


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--latency", type=float, default=0.0, help="the server's seconds per answer")
    parser.add_argument("--baseline", metavar="REV", help="git revision of the cache module to compare with")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from pipeline import progress as progress_lines
    from pipeline.engines import Request
    from pipeline.engines.cache import _COLUMNS, ResponseCache, cache_key, engine_label, run_with_cache
    from pipeline.engines.openai_engine import OpenAIEngine
    from pipeline.progress import Progress

    progress_lines.default_stream = io.StringIO   # the progress lines are not what is measured
    old, revision = baseline_cache(args.baseline)
    server, base_url = _server(args.latency)
    try:
        engine = OpenAIEngine(model="fake-model", base_url=base_url, api_key_env=None,
                              concurrency=args.concurrency, timeout_s=30, max_retries=2)

        def batch(tag: str) -> list[Request]:
            out = []
            for i in range(args.calls):
                messages = ({"role": "user", "content": f"{tag} 第{i}题：何谓“学而时习之”？"},)
                out.append(Request(cache_key=cache_key("bench", engine.identity(), messages, {"max_tokens": 16}),
                                   messages=messages, max_tokens=16))
            return out

        # Each path: (set up, run, tear down) for one round; only the run is timed.
        def engine_alone(requests: list[Request], _folder: Path):
            yield lambda: sum(bool(c.error) for c in engine.generate(requests))

        def cached(requests: list[Request], folder: Path):
            with ResponseCache(folder / "responses.sqlite") as cache:
                yield lambda: run_with_cache(engine, requests, cache)[1].errors

        def per_answer_insert(requests: list[Request], folder: Path):
            """The reference: the store before batching, one autocommit INSERT per answer."""
            db = sqlite3.connect(folder / "responses.sqlite", isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, text TEXT, finish_reason TEXT,"
                       " tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT, created_at TEXT"
                       " DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))")
            sql = (f"INSERT OR REPLACE INTO responses (cache_key, {', '.join(_COLUMNS)})"
                   f" VALUES (?{', ?' * len(_COLUMNS)})")

            def run() -> int:
                progress = Progress(len(requests), engine_label(engine), log=lambda _: None)

                def persist(index: int, comp) -> None:
                    if not comp.error:
                        values = dataclasses.asdict(comp)
                        db.execute(sql, [requests[index].cache_key, *(values[c] for c in _COLUMNS)])
                    progress.update(comp)

                try:
                    return sum(bool(c.error) for c in engine.generate(requests, on_result=persist))
                finally:
                    progress.close()

            try:
                yield run
            finally:
                db.close()

        def cached_before(requests: list[Request], folder: Path):
            with old.ResponseCache(folder / "responses.sqlite") as cache:
                yield lambda: old.run_with_cache(engine, requests, cache)[1].errors

        paths = {"engine alone": engine_alone, "run_with_cache": cached}
        if old is not None:
            paths[f"run_with_cache of {_short(revision)}"] = cached_before
        paths["per-answer INSERT (before)"] = per_answer_insert
        engine.generate(batch("warm-up"))
        cpu: dict[str, list[float]] = {name: [] for name in paths}
        wall: dict[str, list[float]] = {name: [] for name in paths}
        failures = 0
        load_before = os.getloadavg()
        names = list(paths)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                path = paths[name]
                requests = batch(f"{name}-{round_}")
                with tempfile.TemporaryDirectory() as tmp:
                    steps = path(requests, Path(tmp))
                    run = next(steps)
                    started, used = time.perf_counter(), time.process_time()
                    failures += run()
                    used, seconds = time.process_time() - used, time.perf_counter() - started
                    next(steps, None)
                cpu[name].append(used / args.calls * 1000)
                wall[name].append(args.calls / seconds)

        print(f"{args.calls} calls, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms server latency, "
              f"{args.rounds} interleaved rounds; CPU ms per call, median (range); ratio to the engine alone "
              f"in the same round, median (interquartile range)")
        print("  load average before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f}, {} CPUs".format(
            *load_before, *os.getloadavg(), os.cpu_count()))
        for name in paths:
            ratios = [mine / alone for mine, alone in zip(cpu[name], cpu["engine alone"], strict=True)]
            low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
            print(f"  {name:34s} {statistics.median(cpu[name]):.3f} ms  ({min(cpu[name]):.3f}-{max(cpu[name]):.3f})"
                  f"  x{statistics.median(ratios):.3f} ({low:.3f}-{high:.3f})"
                  f"  {statistics.median(wall[name]):5.0f} calls/s")
        if old is None:
            print(f"  (no baseline revision: {revision})")
        if failures:
            print(f"  {failures} calls FAILED")
    finally:
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
