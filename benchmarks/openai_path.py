"""OpenAI-path throughput: calls/s of OpenAIEngine against the loopback server, over the ideal.

    .venv/bin/python benchmarks/openai_path.py [--calls 2000] [--concurrency 32] [--latency 0.05]

The server (pipeline/testing/openai_server.py) runs in its own process and answers every call after
`latency` seconds, so the ideal is concurrency / latency calls/s (640/s by default); the ratio
shows what the client side costs. Measured twice: the engine alone, and wenheng's whole path
(run_with_cache: cache lookup, engine, one SQLite write per answer)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()

    from pipeline.engines import Request
    from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
    from pipeline.engines.openai_engine import OpenAIEngine

    server = subprocess.Popen([sys.executable, "-m", "pipeline.testing.openai_server",
                               "--latency", str(args.latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        base_url = f"http://127.0.0.1:{port}/v1"
        engine = OpenAIEngine(model="fake-model", base_url=base_url, api_key_env=None,
                              concurrency=args.concurrency, timeout_s=30, max_retries=2)

        def requests(tag: str) -> list[Request]:
            out = []
            for i in range(args.calls):
                messages = ({"role": "user", "content": f"{tag} 第{i}题：何谓“学而时习之”？"},)
                out.append(Request(cache_key=cache_key("bench", engine.identity(), messages, {"max_tokens": 16}),
                                   messages=messages, max_tokens=16))
            return out

        ideal = args.concurrency / args.latency
        engine.generate(requests("warm-up")[:64])
        print(f"{args.calls} calls, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms latency: "
              f"ideal {ideal:.0f} calls/s")

        batch = requests("engine")
        started, cpu = time.perf_counter(), time.process_time()
        completions = engine.generate(batch)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        errors = sum(bool(c.error) for c in completions)
        rate = args.calls / seconds
        print(f"engine alone:     {rate:6.0f} calls/s  ({rate / ideal:.2f} of ideal, {seconds:.2f} s, {errors} errors, "
              f"{cpu / args.calls * 1000:.2f} ms client CPU per call)")

        with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "responses.sqlite") as cache:
            batch = requests("cached")
            started, cpu = time.perf_counter(), time.process_time()
            _, stats = run_with_cache(engine, batch, cache)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            rate = stats.sent / seconds
            print(f"run_with_cache:   {rate:6.0f} calls/s  ({rate / ideal:.2f} of ideal, {seconds:.2f} s, "
                  f"{stats.errors} errors, {cpu / stats.sent * 1000:.2f} ms client CPU per call, "
                  f"{len(cache)} rows stored)")

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as response:
            seen = json.load(response)
        print(f"server: {seen['requests']} requests, at most {seen['max_in_flight']} in flight")
    finally:
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
