"""End to end against lm-evaluation-harness: the whole `wenheng run` process and the whole `lm_eval`
command line, on the same AC-EVAL test questions and the same loopback OpenAI-compatible server,
interleaved, at each latency. Prints every pass, the medians and the ratio wenheng / lm-eval.

    .venv/bin/python perf/peers.py [--questions 2000] [--latencies 0 0.05] [--rounds 3]
        [--concurrency 32] [--lm-eval-venv DIR] [--upstream DIR]

What each side does, from a cold start of its process to its results on disk:

    wenheng  `wenheng run --benchmark aceval --model peer --limit N --no-report` in a fresh data
             folder each pass (new lake, cache, warehouse and Dagster instance: nothing is reused),
             then the same with the HTML report (`report` column). Prepare, evaluate, publish.
    lm-eval  `lm_eval --model local-chat-completions --tasks aceval_peer --apply_chat_template`:
             a task folder written here whose JSONL holds the same N questions as wenheng's
             zero-shot answer-only prompts; results and samples written to its output folder.
             Its Hugging Face dataset cache is kept between passes (its normal behaviour), which
             can only favour it.

Both send N chat calls at the same concurrency, with at most 16 new tokens, to a server
(pipeline/testing/openai_server.py, a process of its own) that answers after `latency` seconds.

Each pass also reports its peak RSS: VmRSS summed over the command's process and its descendants
(Dagster's compute-log helpers, for wenheng), sampled every 0.1 s (perf/measure.py); the summary
gives each side's median and whether wenheng's (with the report) is within RSS_TARGET_MB.

lm-eval (0.4.13) is installed from PyPI into a venv of its own (default under the temp folder,
kept for later runs). That venv sees this one's packages through a .pth file placed last on its
path, so torch and transformers are not downloaded a second time; everything else lm-eval needs
is installed into its own venv. Needs AC-EVAL's public test files (../shared/upstream/aceval or
--upstream); without them the script says so and stops."""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))

from measure import PeakRSS  # noqa: E402  (perf/measure.py)

LM_EVAL = "lm-eval[api]==0.4.13"   # [api]: its OpenAI-compatible client (aiohttp, tenacity)
RSS_TARGET_MB = 400   # a `wenheng run` of the 2,000 questions, its whole process tree
SETTING = "zero_shot_ao"
MAX_TOKENS = 16


# -- the shared question set ----------------------------------------------------------------------

def _upstream(args: argparse.Namespace) -> Path:
    folder = args.upstream or Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream")) / "aceval"
    if not (folder / "test").is_dir():
        sys.exit(f"AC-EVAL's test files are not at {folder} (pass --upstream): nothing to compare on")
    return folder


def _write_wenheng_config(work: Path, aceval: Path, base_url: str, concurrency: int) -> dict[str, str]:
    """sources.yaml, models.yaml and an empty corpora.yaml; the environment that points wenheng at
    them and at a data folder of this pass's own."""
    (work / "sources.yaml").write_text(
        f"benchmarks:\n  aceval:\n    path: '{aceval}'\n    version: peers\n    splits: [dev, test]\n"
        "    evaluate: [test]\n", encoding="utf-8")
    (work / "models.yaml").write_text(
        f"models:\n  peer:\n    engine: openai\n    model: fake-model\n    base_url: {base_url}\n"
        f"    api_key_env: null\n    chat: true\n    concurrency: {concurrency}\n    max_retries: 3\n"
        f"    sampling: {{temperature: 0.0, max_tokens: {MAX_TOKENS}}}\n"
        f"    settings: {{aceval: [{SETTING}]}}\n", encoding="utf-8")
    (work / "corpora.yaml").write_text("corpora: {}\n", encoding="utf-8")
    data = work / "data"
    return {"WENHENG_SOURCES": str(work / "sources.yaml"), "WENHENG_MODELS": str(work / "models.yaml"),
            "WENHENG_CORPORA": str(work / "corpora.yaml"), "WENHENG_LAKE": str(data / "lake"),
            "WENHENG_CACHE": str(data / "cache"), "WENHENG_WAREHOUSE": str(data / "warehouse.duckdb"),
            "WENHENG_REPORTS": str(data / "reports"), "WENHENG_HISTORY": str(data / "history"),
            "DAGSTER_HOME": str(data / "dagster")}


def _wenheng_prompts(env: dict[str, str]) -> list[dict[str, str]]:
    """The prompts wenheng sent in its first pass, from its lake (the prompts of the items it has
    responses for): lm-eval asks exactly these. AC-EVAL's test answers are withheld: no target."""
    import duckdb

    lake = Path(env["WENHENG_LAKE"])
    with duckdb.connect() as db:
        rows = db.execute(
            "select p.messages from read_parquet(?) p join read_parquet(?) r using (item_id, variant, setting) "
            "where r.model = 'peer' order by p.item_id",
            [str(lake / "prompts" / "*.parquet"), str(lake / "responses" / "**" / "*.parquet")]).fetchall()
    if not rows:
        raise ValueError(f"no prompts with responses under {lake}")
    return [{"prompt": json.loads(messages)[-1]["content"], "answer": ""} for (messages,) in rows]


def _questions_from_files(aceval: Path, count: int) -> list[dict[str, str]]:
    """Fallback when the warehouse has no prompt text: the first `count` test questions, in the
    zero-shot answer-only shape (AC-EVAL's test answers are withheld: the target is empty)."""
    out: list[dict[str, str]] = []
    for path in sorted((aceval / "test").glob("*.csv")):
        with path.open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                options = "\n".join(f"{k}. {row[k]}" for k in "ABCD")
                out.append({"prompt": f"以下是中国古代{path.stem}领域的单项选择题，请直接给出正确答案对应的选项。\n\n"
                                      f"题目：{row['Question']}\n{options}\n答案：", "answer": ""})
                if len(out) == count:
                    return out
    return out


def _write_lm_eval_task(folder: Path, questions: list[dict[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "aceval_peer.jsonl"
    data.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8")
    (folder / "aceval_peer.yaml").write_text(
        "task: aceval_peer\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {json.dumps(str(data))}\n"
        "test_split: test\noutput_type: generate_until\n"
        "doc_to_text: \"{{prompt}}\"\ndoc_to_target: \"{{answer}}\"\n"
        f"generation_kwargs:\n  until: [\"\\n\\n\"]\n  max_gen_toks: {MAX_TOKENS}\n  do_sample: false\n"
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n",
        encoding="utf-8")


# -- the two processes ----------------------------------------------------------------------------

def _lm_eval_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import lm_eval, datasets, tenacity"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"installing {LM_EVAL} into {venv} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages"))
    Path(site, "zz_wenheng_base.pth").write_text(ours + "\n", encoding="utf-8")   # last: lm-eval's own win
    subprocess.run([str(python), "-m", "pip", "install", "-q", LM_EVAL], check=True)
    return python


@dataclass
class Pass:
    seconds: float
    peak_mb: float   # VmRSS summed over the process tree, at its largest
    procs: int       # processes in the tree at that moment


def _timed(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> Pass:
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        with PeakRSS(root=proc.pid) as rss:
            code = proc.wait()
    elapsed = time.perf_counter() - started
    if code != 0:
        sys.exit(f"{command[0]} exited {code}; its output: {log}")
    return Pass(elapsed, rss.mb, rss.peak_procs)


def _server(latency: float) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([sys.executable, "-m", "pipeline.testing.openai_server", "--latency", str(latency)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = server.stdout.readline().split()[1]
    return server, f"http://127.0.0.1:{port}/v1"


def _wenheng_pass(scratch: Path, aceval: Path, base_url: str, args: argparse.Namespace, report: bool) -> Pass:
    work = Path(tempfile.mkdtemp(prefix="wenheng-pass-", dir=scratch))
    env = {**os.environ, **_write_wenheng_config(work, aceval, base_url, args.concurrency)}
    command = [str(ROOT / ".venv" / "bin" / "wenheng"), "run", "--benchmark", "aceval", "--model", "peer",
               "--limit", str(args.questions)] + ([] if report else ["--no-report"])
    result = _timed(command, env, ROOT, work / "run.log")
    if not hasattr(args, "prompts"):
        try:
            args.prompts = _wenheng_prompts(env)
        except Exception as exc:   # an older warehouse shape: fall back on the files' own questions
            print(f"  (prompt text not read from the warehouse: {exc}; using the files' questions)")
            args.prompts = _questions_from_files(aceval, args.questions)
    shutil.rmtree(work, ignore_errors=True)
    return result


def _lm_eval_pass(scratch: Path, python: Path, tasks: Path, base_url: str, args: argparse.Namespace) -> Pass:
    out = Path(tempfile.mkdtemp(prefix="lm-eval-pass-", dir=scratch))
    model_args = (f"model=fake-model,base_url={base_url}/chat/completions,num_concurrent={args.concurrency},"
                  "max_retries=3,tokenized_requests=False")
    command = [str(python), "-m", "lm_eval", "--model", "local-chat-completions", "--model_args", model_args,
               "--tasks", "aceval_peer", "--include_path", str(tasks), "--apply_chat_template",
               "--output_path", str(out / "results"), "--log_samples", "--batch_size", "1"]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = _timed(command, env, out, out / "lm_eval.log")
    shutil.rmtree(out, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 0.05])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--upstream", type=Path, help="AC-EVAL's folder (default ../shared/upstream/aceval)")
    parser.add_argument("--lm-eval-venv", type=Path, default=Path(tempfile.gettempdir()) / "wenheng-peers-lm-eval")
    args = parser.parse_args()
    aceval = _upstream(args)
    python = _lm_eval_python(args.lm_eval_venv)
    scratch = Path(tempfile.mkdtemp(prefix="wenheng-peers-"))
    tasks = scratch / "tasks"
    print(f"{args.questions} AC-EVAL test questions, concurrency {args.concurrency}, {args.rounds} interleaved "
          f"rounds per latency; load {os.getloadavg()[0]:.1f}")
    ratios = []
    peaks: dict[str, list[float]] = {"wenheng": [], "wenheng+report": [], "lm-eval": []}   # every latency
    for latency in args.latencies:
        server, base_url = _server(latency)
        try:
            times: dict[str, list[float]] = {"wenheng": [], "wenheng+report": [], "lm-eval": []}
            for round_ in range(args.rounds):
                # turn about: which side goes first alternates, so warm-up and drift fall on both
                order = ("wenheng", "wenheng+report", "lm-eval") if round_ % 2 == 0 else \
                        ("lm-eval", "wenheng+report", "wenheng")
                for side in order:
                    if side == "lm-eval":
                        if not tasks.exists():
                            _write_lm_eval_task(tasks, args.prompts)
                        result = _lm_eval_pass(scratch, python, tasks, base_url, args)
                    else:
                        result = _wenheng_pass(scratch, aceval, base_url, args, report=side == "wenheng+report")
                    times[side].append(result.seconds)
                    peaks[side].append(result.peak_mb)
                    print(f"  latency {latency * 1000:.0f} ms  round {round_ + 1}  {side:15s} {result.seconds:6.2f} s"
                          f"  peak RSS {result.peak_mb:5.0f} MB ({result.procs} processes)", flush=True)
        finally:
            server.stdin.close()
            server.wait(timeout=10)
        medians = {side: statistics.median(values) for side, values in times.items()}
        ratio = medians["wenheng+report"] / medians["lm-eval"]
        ratios.append(ratio)
        print(f"latency {latency * 1000:.0f} ms: median wenheng {medians['wenheng']:.2f} s "
              f"(with report {medians['wenheng+report']:.2f} s), lm-eval {medians['lm-eval']:.2f} s; "
              f"wenheng with report / lm-eval = {ratio:.2f}x (target <= 0.80x)", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    print("ratios: " + ", ".join(f"{r:.2f}x" for r in ratios) + f"; load {os.getloadavg()[0]:.1f}")
    rss = {side: statistics.median(values) for side, values in peaks.items()}
    worst = max(rss["wenheng"], rss["wenheng+report"])
    print(f"median peak RSS (process tree): wenheng {rss['wenheng']:.0f} MB (with report "
          f"{rss['wenheng+report']:.0f} MB), lm-eval {rss['lm-eval']:.0f} MB; wenheng <= {RSS_TARGET_MB} MB: "
          + ("PASS" if worst <= RSS_TARGET_MB else "FAIL"))


if __name__ == "__main__":
    main()
