"""Log-likelihood choice scoring against lm-evaluation-harness on the same checkpoint, and its speed:

    .venv/bin/pip install lm_eval==0.4.13     # once: lm-eval is not a wenheng dependency
    .venv/bin/python perf/loglikelihood.py [--limit N] [--passes 1]

Items: AC-EVAL's dev split (65 items, the `shared/upstream/aceval` files) where present, else the
bundled samples' AC-EVAL items. Prompts: wenheng's `loglikelihood` (each option's letter right
after "答案：") and `loglikelihood_norm` (each option's text there) settings, as `wenheng run`
renders them.

Both sides score the bundled Gemma3-270M in float32 on the CPU:
- lm-eval 0.4.13, `--model hf` on the converted model folder, on a task YAML written here:
  `output_type: multiple_choice`, `doc_to_text` the prompt as wenheng renders it, `doc_to_choice`
  the same continuations, `target_delimiter: ""` (no space after "答案："), acc and acc_norm;
- wenheng's VLLMEngine with the models.yaml entry of the bundled model (data/models.yaml).

Printed: per path, how often the chosen option agrees (ties aside), acc (letters) and acc_norm
(texts) from each side, the median and largest |difference| of the per-option log-probabilities;
then every run's whole-process wall time and peak RSS (the process tree's, polled), interleaved:
lm-eval letters, wenheng letters, lm-eval texts, wenheng texts (each `--passes` times), with the
load average before each, and wenheng's own engine seconds (without its start-up)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_ACEVAL = ROOT.parent / "shared" / "upstream" / "aceval"
SETTINGS = {"letters": "loglikelihood", "texts": "loglikelihood_norm"}


def docs(limit: int | None) -> tuple[list[dict], str]:
    """One doc per item: its id, the prompt, both continuation lists and the gold's index."""
    from pipeline.config import load_sources
    from pipeline.ingest import parse_source
    from pipeline.prompts import build_prompt_rows
    from pipeline.schema import OPTION_LETTERS
    from pipeline.script import make_variant
    from pipeline.standardize import standardize

    with tempfile.TemporaryDirectory() as tmp:
        if UPSTREAM_ACEVAL.is_dir():
            sources = Path(tmp) / "sources.yaml"
            sources.write_text(f"benchmarks:\n  aceval:\n    path: {UPSTREAM_ACEVAL}\n    version: upstream\n"
                               "    license: CC BY-NC-SA 4.0\n    evaluate: [dev]\n", encoding="utf-8")
            where, evaluate = "AC-EVAL dev (upstream files)", {"aceval": ["dev"]}
        else:
            sources = ROOT / "data" / "sources.yaml"
            where, evaluate = "AC-EVAL (the bundled samples)", {"aceval": ["dev", "test"]}
        spec = load_sources(sources)["aceval"]
        items, _ = standardize(parse_source(spec).items)
    items = [it for it in items if it["split"] in evaluate["aceval"] and it.get("answer")]
    rows = build_prompt_rows(items, [make_variant(it, "original") for it in items], evaluate,
                             asked={"aceval": {("original", "loglikelihood")}})
    by_id = {it["item_id"]: it for it in items}
    out = []
    for row in rows[:limit]:
        item = by_id[row["item_id"]]
        out.append({"id": item["item_id"], "prompt": row["messages"][0]["content"],
                    "letters": list(OPTION_LETTERS[:len(item["choices"])]), "texts": list(item["choices"]),
                    "label": OPTION_LETTERS.index(item["answer"])})
    return out, where


TASK_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{prompt}}}}"
doc_to_choice: "{{{{{field}}}}}"
doc_to_target: label
target_delimiter: ""
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""


def model_dir() -> Path:
    from pipeline import paths
    from pipeline.engines.local_model import ensure_gemma3_270m

    return Path(ensure_gemma3_270m(paths.model_store()))


def run_measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS of the process tree in GB, output) of one command."""
    import psutil

    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})}, cwd=ROOT)
    peak = 0
    output: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    reader.join()
    wall = time.perf_counter() - started
    text = "".join(output)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} ... exited {proc.returncode}:\n{text[-3000:]}")
    return wall, peak / 1e9, text


def lm_eval_run(work: Path, path: str, docs_file: Path) -> tuple[float, float, dict[str, list[float]]]:
    task = f"wenheng_aceval_{path}"
    include = work / f"tasks_{path}"
    include.mkdir(exist_ok=True)
    (include / f"{task}.yaml").write_text(TASK_YAML.format(task=task, docs=docs_file, field=path), encoding="utf-8")
    out = work / f"lm_eval_{path}"
    wall, rss, _ = run_measured([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                                 f"pretrained={model_dir()},dtype=float32", "--device", "cpu", "--tasks", task,
                                 "--include_path", str(include), "--log_samples", "--output_path", str(out),
                                 "--batch_size", "1"], env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    [samples] = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    numbers = {}
    with open(samples, encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            numbers[s["doc"]["id"]] = [float(r[0]) for r in s["filtered_resps"]]
    return wall, rss, numbers


def wenheng_run(work: Path, path: str, docs_file: Path) -> tuple[float, float, float, dict[str, list[float]]]:
    out = work / f"wenheng_{path}.json"
    wall, rss, _ = run_measured([sys.executable, str(Path(__file__).resolve()), "--wenheng-side", path,
                                 "--docs", str(docs_file), "--out", str(out)])
    got = json.loads(out.read_text(encoding="utf-8"))
    return wall, rss, got["engine_s"], got["numbers"]


def wenheng_side(path: str, docs_file: Path, out: Path) -> None:
    """The wenheng run, in its own process: the bundled model's entry, every doc scored."""
    from pipeline.config import load_models
    from pipeline.engines import Request
    from pipeline.engines.registry import build_engine
    from pipeline.engines.vllm_engine import shutdown_engines

    spec = load_models(ROOT / "data" / "models.yaml")["gemma3-270m"]
    engine = build_engine(spec)
    ds = [json.loads(line) for line in docs_file.read_text(encoding="utf-8").splitlines() if line]
    requests = [Request(cache_key=d["id"], messages=({"role": "user", "content": d["prompt"]},), max_tokens=None,
                        continuations=tuple(d[path]), choices=tuple(d["letters"])) for d in ds]
    engine.load()
    started = time.perf_counter()
    got = engine.generate(requests)
    engine_s = time.perf_counter() - started
    shutdown_engines()
    errors = [c.error for c in got if c.error]
    if errors:
        raise SystemExit(f"{len(errors)} errors, the first: {errors[0]}")
    out.write_text(json.dumps({"engine_s": engine_s, "numbers": {d["id"]: list(c.logprobs) for d, c in zip(ds, got)}}),
                   encoding="utf-8")


def best(values: list[float], norms: list[int] | None = None) -> int | None:
    """The option chosen (per character with `norms`), or None on a tie for first."""
    scored = [v / n for v, n in zip(values, norms)] if norms else values
    top = max(scored)
    return None if sum(1 for v in scored if abs(v - top) < 1e-9) > 1 else scored.index(top)


def compare(path: str, ds: list[dict], ours: dict, theirs: dict) -> None:
    diffs, agree, compared, acc_ours, acc_theirs = [], 0, 0, 0, 0
    for d in ds:
        a, b = ours[d["id"]], theirs[d["id"]]
        diffs += [abs(x - y) for x, y in zip(a, b)]
        norms = [len(t) for t in d[path]] if path == "texts" else None
        pa, pb = best(a, norms), best(b, norms)
        acc_ours += pa == d["label"]
        acc_theirs += pb == d["label"]
        if pa is not None and pb is not None:
            compared += 1
            agree += pa == pb
    metric = "acc" if path == "letters" else "acc_norm"
    print(f"  {path:7s} chosen option agrees on {agree}/{compared} items ({100 * agree / max(compared, 1):.1f}%, "
          f"ties aside); {metric}: wenheng {100 * acc_ours / len(ds):.1f}, lm-eval {100 * acc_theirs / len(ds):.1f}; "
          f"|Δ log-prob| per option: median {statistics.median(diffs):.5f}, max {max(diffs):.5f} nats "
          f"({len(diffs)} options)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="at most this many items")
    parser.add_argument("--passes", type=int, default=1, help="interleaved passes of the four runs")
    parser.add_argument("--wenheng-side", choices=list(SETTINGS), help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.wenheng_side:
        return wenheng_side(args.wenheng_side, args.docs, args.out)
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        raise SystemExit("lm-eval is not installed: .venv/bin/pip install lm_eval==0.4.13") from None
    ds, where = docs(args.limit)
    print(f"{len(ds)} items of {where}; bundled Gemma3-270M, float32, CPU ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        docs_file = work / "docs.jsonl"
        docs_file.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in ds), encoding="utf-8")
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        engine_s: dict[str, list[float]] = {}
        numbers: dict[tuple[str, str], dict] = {}
        for _ in range(args.passes):
            for path in SETTINGS:
                for side in ("lm-eval", "wenheng"):
                    load = os.getloadavg()[0]
                    if side == "lm-eval":
                        wall, rss, got = lm_eval_run(work, path, docs_file)
                    else:
                        wall, rss, seconds, got = wenheng_run(work, path, docs_file)
                        engine_s.setdefault(path, []).append(seconds)
                    print(f"  ran {side:7s} {path:7s}: {wall:6.1f} s wall, peak RSS {rss:5.1f} GB (load {load:.2f})",
                          flush=True)
                    times.setdefault((side, path), []).append((wall, rss))
                    numbers[(side, path)] = got
    print("agreement (wenheng's vLLM path against lm-eval hf):")
    for path in SETTINGS:
        compare(path, ds, numbers[("wenheng", path)], numbers[("lm-eval", path)])
    print("speed (whole process, median of passes; wenheng's engine time without start-up in brackets):")
    for path in SETTINGS:
        ours = statistics.median(w for w, _ in times[("wenheng", path)])
        theirs = statistics.median(w for w, _ in times[("lm-eval", path)])
        print(f"  {path:7s} wenheng {ours:6.1f} s ({statistics.median(engine_s[path]):.1f} s scoring), "
              f"lm-eval {theirs:6.1f} s: {ours / theirs:.2f}x lm-eval's time")


if __name__ == "__main__":
    main()
