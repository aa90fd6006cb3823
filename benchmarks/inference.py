"""Inference throughput, in one run:

    .venv/bin/python benchmarks/inference.py [--max-tokens 32]

(a) output tokens/s of raw `LLM.generate` and of wenheng's vLLM path (cache lookup, engine,
    one cache write per answer as it finishes) on the same prompts, and their ratio;
(b) OpenAI-path calls/s at concurrency 32 against the loopback server with 50 ms latency, over
    the ideal 640/s (benchmarks/openai_path.py, run after the vLLM engine is shut down);
(c) cache-hit items/s on a second pass over (a)'s prompts.
Prompts: the first --limit (256) of every sample item x script variant x protocol setting."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sample_prompts() -> list[str]:
    from pipeline import paths
    from pipeline.config import load_sources
    from pipeline.prompts import build_prompt_rows
    from pipeline.schema import VARIANTS
    from pipeline.script import make_variant
    from pipeline.sources.ingest import parse_source
    from pipeline.standardize import standardize

    raw = [item for spec in load_sources(paths.sources_file()).values() for item in parse_source(spec).items]
    items, _ = standardize(raw)
    variants = [make_variant(it, v) for it in items for v in VARIANTS]
    return [row["messages"][0]["content"] for row in build_prompt_rows(items, variants)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--limit", type=int, default=256, help="prompts per pass (CPU time)")
    args = parser.parse_args()

    from vllm import SamplingParams

    from pipeline.engines import Request
    from pipeline.engines.cache import ResponseCache, run_with_cache
    from pipeline.engines.vllm_engine import VLLMEngine, shutdown_engines

    engine = VLLMEngine(model="bundled:gemma3-270m", chat_template=False, dtype="bfloat16", max_model_len=2048,
                        enforce_eager=True, kv_cache_memory_bytes=1 << 30)
    started = time.perf_counter()
    engine.load()
    print(f"model load: {time.perf_counter() - started:.1f} s")
    llm = engine._llm()
    prompts = sample_prompts()[:args.limit]
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    llm.generate(prompts[:8], params, use_tqdm=False)  # warm-up

    started = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    raw_s = time.perf_counter() - started
    raw_tokens = sum(len(o.outputs[0].token_ids) for o in outputs)

    requests = [Request(cache_key=f"{i}", messages=({"role": "user", "content": p},), max_tokens=args.max_tokens)
                for i, p in enumerate(prompts)]
    with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "bench.sqlite") as cache:
        started = time.perf_counter()
        found, stats = run_with_cache(engine, requests, cache)
        ours_s = time.perf_counter() - started
        ours_tokens = sum(c.tokens_out or 0 for c in found.values())
        started = time.perf_counter()
        _, again = run_with_cache(engine, requests, cache)
        hit_s = time.perf_counter() - started
    print(f"prompts: {len(prompts)}, max_tokens {args.max_tokens}")
    print(f"(a) raw LLM.generate:   {raw_tokens} tokens in {raw_s:.2f} s = {raw_tokens / raw_s:.1f} tok/s")
    print(f"    wenheng inference:  {ours_tokens} tokens in {ours_s:.2f} s = {ours_tokens / ours_s:.1f} tok/s")
    print(f"    ratio wenheng/raw:  {(ours_tokens / ours_s) / (raw_tokens / raw_s):.3f}  (target >= 0.95)")
    print(f"(c) cache hits: {again.cache_hits} items in {hit_s:.3f} s = {again.cache_hits / hit_s:,.0f} items/s"
          f" (prompts sent: {again.sent})")
    shutdown_engines()
    print("(b) OpenAI path:", flush=True)
    subprocess.run([sys.executable, str(Path(__file__).with_name("openai_path.py"))], check=True)


if __name__ == "__main__":  # vLLM starts its engine with spawn
    main()
