"""Inference throughput, in one run:

    .venv/bin/python perf/inference.py [--max-tokens 32] [--rounds 1]

On a GPU machine with a CUDA vLLM (how the README's H200 figures were measured):

    python3 perf/inference.py --gpu --model /tmp/model --random-weights-from TOKENIZER_DIR \
        --prompts-file prompts.json --limit 4096 --max-tokens 64 --rounds 2 --no-openai [--eager]

    `--random-weights-from` writes a random-weight model of that config and tokenizer to --model
    first (once): random weights rarely emit EOS, so every request decodes its full budget.

(a) output tokens/s of raw `LLM.generate`, of `VLLMEngine.generate` alone and of wenheng's vLLM
    path (`run_with_cache`: cache lookup, engine, cache writes), on the same prompts. Each path is
    warmed once, then the passes alternate (raw, engine, wenheng, wenheng, engine, raw, each round
    starting one pass further on; each wenheng pass with a fresh cache; garbage collected before
    each pass); every pass is printed with this process's CPU, and the ratios are of medians;
(b) OpenAI-path calls/s at concurrency 32 against the loopback server with 50 ms latency, over
    the ideal 640/s (perf/openai_path.py, run after the vLLM engine is shut down);
(c) cache-hit items/s on a second pass over (a)'s prompts.
Prompts: the first --limit (256) of every sample item x script variant x protocol setting."""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sample_prompts() -> list[str]:
    from pipeline import paths
    from pipeline.config import load_sources
    from pipeline.ingest import parse_source
    from pipeline.prompts import build_prompt_rows
    from pipeline.schema import VARIANTS
    from pipeline.script import make_variant
    from pipeline.standardize import standardize

    raw = [item for spec in load_sources(paths.sources_file()).values() for item in parse_source(spec).items]
    items, _ = standardize(raw)
    variants = [make_variant(it, v) for it in items for v in VARIANTS]
    return [row["messages"][0]["content"] for row in build_prompt_rows(items, variants)]


def _median(values: list[float]) -> float:
    return statistics.median(values)


def write_random_model(source: Path, target: Path) -> None:
    """A model of `source`'s config with random bf16 weights, and its tokenizer, in `target`."""
    if (target / "model.safetensors").exists():
        return
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(source), torch_dtype=torch.bfloat16)
    model.save_pretrained(target)
    for file in source.iterdir():
        if file.name != "config.json" and file.is_file():
            shutil.copy(file, target / file.name)
    print(f"random-weight model written to {target}", flush=True)


def load_prompts(args: argparse.Namespace) -> list[str]:
    """--limit prompts: the samples' (or --prompts-file's) prompts, repeated to fill the count."""
    if args.prompts_file:
        import json

        pool = json.loads(args.prompts_file.read_text(encoding="utf-8"))
        return (pool * (args.limit // len(pool) + 1))[:args.limit]
    return sample_prompts()[:args.limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--limit", type=int, default=256, help="prompts per pass (CPU time)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of alternated passes: raw, engine, wenheng, wenheng, engine, raw each")
    parser.add_argument("--model", default="bundled:gemma3-270m")
    parser.add_argument("--random-weights-from", type=Path, help="write a random-weight --model from this config")
    parser.add_argument("--prompts-file", type=Path, help="a JSON list of prompt texts (default: the samples)")
    parser.add_argument("--gpu", action="store_true", help="CUDA vLLM: CUDA graphs, 60%% of GPU memory")
    parser.add_argument("--eager", action="store_true", help="with --gpu: vLLM's eager mode")
    parser.add_argument("--no-openai", action="store_true", help="skip (b), the OpenAI path")
    args = parser.parse_args()
    if args.random_weights_from:
        write_random_model(args.random_weights_from, Path(args.model))

    from vllm import SamplingParams

    from pipeline.engines import Request
    from pipeline.engines.cache import ResponseCache, run_with_cache
    from pipeline.engines.vllm_engine import VLLMEngine, shutdown_engines

    placement = (dict(gpu_memory_utilization=0.6, enforce_eager=args.eager) if args.gpu
                 else dict(enforce_eager=True, kv_cache_memory_bytes=1 << 30))
    engine = VLLMEngine(model=args.model, chat_template=False, dtype="bfloat16", max_model_len=2048, **placement)
    started = time.perf_counter()
    engine.load()
    print(f"model load: {time.perf_counter() - started:.1f} s")
    llm = engine._llm()
    prompts = load_prompts(args)
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    requests = [Request(cache_key=f"{i}", messages=({"role": "user", "content": p},), max_tokens=args.max_tokens)
                for i, p in enumerate(prompts)]

    def raw() -> int:
        return sum(len(o.outputs[0].token_ids) for o in llm.generate(prompts, params, use_tqdm=False))

    def engine_alone() -> int:
        return sum(c.tokens_out or 0 for c in engine.generate(requests))

    def wenheng() -> int:   # a fresh cache each pass: every prompt is generated and written
        with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "bench.sqlite") as cache:
            found, _ = run_with_cache(engine, requests, cache)
        return sum(c.tokens_out or 0 for c in found.values())

    paths = {"raw LLM.generate": raw, "VLLMEngine.generate": engine_alone, "run_with_cache": wenheng}
    # warm every path once (the first full pass is the slow one), then alternate them, so that
    # warm-up and drift fall on each side alike
    for path in paths.values():
        path()
    rates: dict[str, list[float]] = {name: [] for name in paths}
    order = list(paths) + list(reversed(paths))
    for round_ in range(args.rounds):
        # each round starts one pass further on, so no path always follows the same one (on the
        # H200 the pass after a raw pass was slow, whichever path it was), and the last pass's
        # garbage is collected before the clock starts
        for name in order[round_ % len(order):] + order[:round_ % len(order)]:
            gc.collect()
            started, cpu = time.perf_counter(), time.process_time()
            tokens = paths[name]()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            rates[name].append(tokens / seconds)
            # CPU: this process only (vLLM's engine core and workers are processes of their own)
            print(f"  round {round_ + 1}  {name:20s} {tokens} tokens in {seconds:.2f} s = {tokens / seconds:.1f} tok/s"
                  f"  (this process's CPU {cpu:.2f} s)", flush=True)
    raw_rate = _median(rates["raw LLM.generate"])
    import vllm

    device = "CPU"
    if args.gpu:
        import torch

        device = torch.cuda.get_device_name(0) + (" (eager)" if args.eager else " (CUDA graphs)")
    print(f"prompts: {len(prompts)}, max_tokens {args.max_tokens}; medians of {2 * args.rounds} passes each; "
          f"vLLM {vllm.__version__} on {device}")
    print(f"(a) raw LLM.generate:   {raw_rate:.1f} tok/s")
    for name in ("VLLMEngine.generate", "run_with_cache"):
        print(f"    {name + ':':20s} {_median(rates[name]):.1f} tok/s = {_median(rates[name]) / raw_rate:.3f} of raw"
              f"  (target >= {0.97 if args.gpu else 0.95})")

    with tempfile.TemporaryDirectory() as tmp, ResponseCache(Path(tmp) / "bench.sqlite") as cache:
        run_with_cache(engine, requests, cache)
        started = time.perf_counter()
        _, again = run_with_cache(engine, requests, cache)
        hit_s = time.perf_counter() - started
    print(f"(c) cache hits: {again.cache_hits} items in {hit_s:.3f} s = {again.cache_hits / hit_s:,.0f} items/s"
          f" (prompts sent: {again.sent})")
    shutdown_engines()
    if args.no_openai:
        return
    print("(b) OpenAI path:", flush=True)
    subprocess.run([sys.executable, str(Path(__file__).with_name("openai_path.py"))], check=True)


if __name__ == "__main__":  # vLLM starts its engine with spawn
    main()
