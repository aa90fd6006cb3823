"""OpenAI-path throughput: calls/s of OpenAIEngine against the loopback server, over the ideal, and
the client's ceiling next to a reference client's, measured in the same run.

    .venv/bin/python perf/openai_path.py [--calls 2000] [--concurrency 32] [--latency 0.05]
        [--ceiling-calls 3000] [--repeats 3] [--baseline auto|lm-eval|aiohttp] [--lm-eval-venv DIR]

(a) The server (pipeline/testing/openai_server.py, in its own process) answers every call after
`latency` seconds, so the ideal is concurrency / latency calls/s (640/s by default); the ratio
shows what the client side costs. Measured for the engine alone and for wenheng's whole path
(run_with_cache: cache lookup, engine, answers committed in batches by a writer thread;
perf/cache_write.py times what that costs per call).

(b) The ceiling: the same concurrency against a zero-latency server, where calls/s is bounded by
the client's CPU per call (and the server's; both share this machine). Measured for the engine
and, turn about, for the reference: lm-evaluation-harness's OpenAI-compatible client
(`local-chat-completions`: TemplateAPI.get_batched_requests, aiohttp + tenacity), installed from
PyPI into a venv of its own under the temp directory (kept for later runs; the first run spends
~30 s installing), and a bare aiohttp loop (no retries, no bookkeeping: the floor of any aiohttp
client). Without the registry, or with --baseline aiohttp, the bare loop is the only reference.
The official `openai` client's generic request path, which the engine used before, is measured
beside them (--no-sdk leaves it out).

Each figure is the best of `repeats` runs, with the range after it: the machine is shared."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LM_EVAL = "lm-eval==0.4.13"
# What lm_eval.models.openai_completions imports, without lm-eval's own heavy requirements (torch,
# transformers, datasets), which the API path never touches.
LM_EVAL_API_DEPS = ["aiohttp", "tenacity", "requests", "tqdm", "numpy", "pyyaml", "jinja2"]


def _messages(tag: str, i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{tag} 第{i}题：何谓“学而时习之”？"}]


# -- reference clients ---------------------------------------------------------------------------

def _bare_aiohttp(base_url: str, calls: int, concurrency: int, tag: str) -> int:
    """POST, read, parse, take the text: nothing else. Returns the number of failed calls."""
    import aiohttp

    async def run() -> int:
        url, failures, pending = base_url + "/chat/completions", 0, iter(range(calls))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            async def worker() -> None:
                nonlocal failures
                for i in pending:
                    body = {"model": "fake-model", "messages": _messages(tag, i), "max_tokens": 16}
                    async with session.post(url, json=body) as response:
                        answer = await response.json()
                    failures += not answer["choices"][0]["message"]["content"]
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return failures

    return asyncio.run(run())


def _official_client(base_url: str, calls: int, concurrency: int, tag: str) -> int:
    """The official client's generic request path (what the engine used before), same concurrency."""
    from openai import AsyncOpenAI, DefaultAioHttpClient

    async def run() -> int:
        failures, pending = 0, iter(range(calls))
        async with AsyncOpenAI(api_key="no-key", base_url=base_url, max_retries=2, timeout=30,
                               http_client=DefaultAioHttpClient()) as client:
            async def worker() -> None:
                nonlocal failures
                for i in pending:
                    answer = await client.post("/chat/completions", cast_to=object, body={
                        "model": "fake-model", "messages": _messages(tag, i), "max_completion_tokens": 16})
                    failures += not answer["choices"][0]["message"]["content"]
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return failures

    return asyncio.run(run())


def lm_eval_child(base_url: str, concurrency: int) -> None:
    """Runs in lm-eval's venv: one measurement per line of stdin ("CALLS TAG"), one JSON line out."""
    import logging

    logging.disable(logging.WARNING)   # its per-call "API returned" warnings are not what we time
    from lm_eval.models.api_models import JsonChatStr
    from lm_eval.models.openai_completions import LocalChatCompletion

    lm = LocalChatCompletion(model="fake-model", base_url=base_url + "/chat/completions", num_concurrent=concurrency,
                             max_retries=3, tokenizer_backend=None, tokenized_requests=False, timeout=30)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        calls, tag = line.split()
        prompts = [JsonChatStr(json.dumps(_messages(tag, i), ensure_ascii=False)) for i in range(int(calls))]
        started, cpu = time.perf_counter(), time.process_time()
        answers = asyncio.run(lm.get_batched_requests(prompts, cache_keys=[None] * len(prompts), generate=True,
                                                      gen_kwargs={"max_gen_toks": 16, "until": []}))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        failures = sum(not answer or not answer[0] for answer in answers)
        print(json.dumps({"seconds": seconds, "cpu": cpu, "failures": failures}), flush=True)


def _lm_eval_python(venv: Path) -> Path | None:
    """lm-eval's interpreter, installing it into `venv` first if needed; None if that fails."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import lm_eval.models.openai_completions"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"installing {LM_EVAL} (API client only) into {venv} ...", flush=True)
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "--no-deps", LM_EVAL],
             [str(python), "-m", "pip", "install", "-q", *LM_EVAL_API_DEPS],
             check]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            print(f"  failed ({' '.join(step[:4])} ...): {done.stderr.strip()[-300:]}", flush=True)
            return None
    return python


class _LmEval:
    def __init__(self, python: Path, base_url: str, concurrency: int):
        self.process = subprocess.Popen([str(python), __file__, "--lm-eval-child", base_url, str(concurrency)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, env=os.environ | {"TQDM_DISABLE": "1"})
        if not json.loads(self.process.stdout.readline() or "{}").get("ready"):
            raise RuntimeError("lm-eval's client did not start")
        version = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('lm_eval'))"],
                                 capture_output=True, text=True)
        self.version = version.stdout.strip()

    def measure(self, calls: int, tag: str) -> dict:
        self.process.stdin.write(f"{calls} {tag}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


# -- measurement ---------------------------------------------------------------------------------

def _server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "pipeline.testing.openai_server", "--latency", str(latency)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    port = int(process.stdout.readline().split()[1])
    return process, f"http://127.0.0.1:{port}/v1"


def _timed(run) -> dict:
    started, cpu = time.perf_counter(), time.process_time()
    failures = run()
    return {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "failures": failures}


def _summary(calls: int, runs: list[dict], ideal: float | None = None,
             against: float | None = None) -> tuple[str, float]:
    rates = sorted(calls / run["seconds"] for run in runs)
    best = rates[-1]
    cpu = min(run["cpu"] for run in runs) / calls * 1000
    text = f"{best:6.0f} calls/s (range {rates[0]:.0f}-{rates[-1]:.0f})"
    if ideal:
        text += f"  {best / ideal:.2f} of ideal (range {rates[0] / ideal:.2f}-{rates[-1] / ideal:.2f})"
    if against:
        text += f"  {best / against:.2f} x the reference"
    failures = sum(run["failures"] for run in runs)
    return text + f"  {cpu:.2f} ms client CPU/call" + (f"  {failures} FAILED" if failures else ""), best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--ceiling-calls", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", choices=("auto", "lm-eval", "aiohttp"), default="auto",
                        help="auto: lm-eval's client if it can be installed, and the bare aiohttp loop")
    parser.add_argument("--no-sdk", action="store_true", help="leave out the official openai client's ceiling")
    parser.add_argument("--lm-eval-venv", type=Path, default=Path(tempfile.gettempdir()) / "wenheng-bench-lm-eval")
    parser.add_argument("--lm-eval-child", nargs=2, metavar=("BASE_URL", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lm_eval_child:
        return lm_eval_child(args.lm_eval_child[0], int(args.lm_eval_child[1]))

    sys.path.insert(0, str(ROOT))
    from pipeline.engines import Request
    from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
    from pipeline.engines.openai_engine import OpenAIEngine

    lm_eval_python = None
    if args.baseline != "aiohttp":
        lm_eval_python = _lm_eval_python(args.lm_eval_venv)
        if lm_eval_python is None and args.baseline == "lm-eval":
            sys.exit("lm-eval could not be installed")

    slow, slow_url = _server(args.latency)
    fast, fast_url = _server(0.0)
    lm_eval = None
    try:
        def engine_for(base_url: str) -> OpenAIEngine:
            return OpenAIEngine(model="fake-model", base_url=base_url, api_key_env=None,
                                concurrency=args.concurrency, timeout_s=30, max_retries=2)

        def requests(engine: OpenAIEngine, tag: str, calls: int) -> list[Request]:
            out = []
            for i in range(calls):
                messages = tuple(_messages(tag, i))
                out.append(Request(cache_key=cache_key("bench", engine.identity(), messages, {"max_tokens": 16}),
                                   messages=messages, max_tokens=16))
            return out

        def engine_run(engine: OpenAIEngine, batch: list[Request]) -> int:
            return sum(bool(c.error) for c in engine.generate(batch))

        # (a) against the ideal
        engine = engine_for(slow_url)
        ideal = args.concurrency / args.latency
        engine.generate(requests(engine, "warm-up", 64))
        alone, cached = [], []
        for repeat in range(args.repeats):
            batch = requests(engine, f"engine{repeat}", args.calls)
            alone.append(_timed(partial(engine_run, engine, batch)))
            with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "responses.sqlite") as cache:
                batch = requests(engine, f"cached{repeat}", args.calls)
                cached.append(_timed(lambda: run_with_cache(engine, batch, cache)[1].errors))  # noqa: B023
        print(f"(a) {args.calls} calls, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms latency: "
              f"ideal {ideal:.0f} calls/s; best of {args.repeats}")
        print(f"  engine alone:     {_summary(args.calls, alone, ideal)[0]}")
        print(f"  run_with_cache:   {_summary(args.calls, cached, ideal)[0]}")
        with urllib.request.urlopen(slow_url.removesuffix("/v1") + "/stats") as response:
            seen = json.load(response)
        print(f"  server: {seen['requests']} requests, at most {seen['max_in_flight']} in flight")

        # (b) the ceiling, each client in turn
        engine = engine_for(fast_url)
        engine.generate(requests(engine, "warm-up", 64))
        if lm_eval_python is not None:
            lm_eval = _LmEval(lm_eval_python, fast_url, args.concurrency)
            lm_eval.measure(64, "warm-up")
        _bare_aiohttp(fast_url, 64, args.concurrency, "warm-up")
        if not args.no_sdk:
            _official_client(fast_url, 64, args.concurrency, "warm-up")
        runs: dict[str, list[dict]] = {"wenheng": [], "lm-eval": [], "bare": [], "sdk": []}
        for repeat in range(args.repeats):
            batch = requests(engine, f"ceiling{repeat}", args.ceiling_calls)
            runs["wenheng"].append(_timed(partial(engine_run, engine, batch)))
            if lm_eval is not None:
                runs["lm-eval"].append(lm_eval.measure(args.ceiling_calls, f"lm{repeat}"))
            same = (fast_url, args.ceiling_calls, args.concurrency)
            runs["bare"].append(_timed(partial(_bare_aiohttp, *same, f"bare{repeat}")))
            if not args.no_sdk:
                runs["sdk"].append(_timed(partial(_official_client, *same, f"sdk{repeat}")))
        reference = "lm-eval" if lm_eval is not None else "bare"
        _, best_reference = _summary(args.ceiling_calls, runs[reference])
        print(f"(b) ceiling: {args.ceiling_calls} calls, concurrency {args.concurrency}, zero-latency server; "
              f"reference: {'lm-evaluation-harness ' + lm_eval.version if lm_eval else 'the bare aiohttp loop'}")
        print(f"  wenheng engine:   {_summary(args.ceiling_calls, runs['wenheng'], against=best_reference)[0]}")
        if lm_eval is not None:
            print(f"  lm-eval client:   {_summary(args.ceiling_calls, runs['lm-eval'])[0]}")
        print(f"  bare aiohttp:     {_summary(args.ceiling_calls, runs['bare'], against=best_reference)[0]}")
        if runs["sdk"]:
            print(f"  openai client:    {_summary(args.ceiling_calls, runs['sdk'], against=best_reference)[0]}"
                  "  (its client.post, aiohttp transport: the engine's path before)")
    finally:
        if lm_eval is not None:
            lm_eval.close()
        for process in (slow, fast):
            process.stdin.close()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
