"""Writing the HTML report (`pipeline.reports.write_reports`) from two warehouses:

- samples: the bundled samples of every benchmark with the oracle and random baselines
  (`wenheng run --model oracle --model random --no-report` into a temporary data folder, ~15 s);
- aceval-2000: a synthetic AC-EVAL-shaped warehouse, 2,000 single-choice questions over AC-EVAL's
  13 subjects and 3 levels, one model (perf/scale.py's generator, published).

For each, in a fresh process: the first call (cold: lazy imports, first charts) and the median
of 5 further calls (warm). With `--before DIR` (a checkout of other code, e.g. `git worktree add
/tmp/report_before HEAD`) the same timings are taken with that checkout's `pipeline` first on
PYTHONPATH, on the same warehouses, and both are printed with their ratio.

    .venv/bin/python perf/report.py
    .venv/bin/python perf/report.py --before /tmp/report_before --keep /tmp/report_bench
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINES = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
  oracle: {engine: baseline, strategy: oracle}
"""
ACEVAL_LEVELS = {
    "General Historical Knowledge": ["historical_facts", "geography", "social_customs", "art_and_cultural_heritage",
                                     "philosophy_and_religion"],
    "Short Text Understanding": ["lexical_pragmatics_analysis", "allusions_and_idioms", "word_sense_disambiguation",
                                 "translation", "event_extraction"],
    "Long Text Understanding": ["sentence_pauses", "summarization_and_analysis", "poetry_appreciation"],
}


def build_samples(base: Path) -> Path:
    """The bundled samples through `wenheng run` with the two baselines, in `base`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WENHENG_")}
    (base / "dagster_home").mkdir(parents=True, exist_ok=True)
    models = base / "models.yaml"   # the baselines alone: no judge, no corpus scan
    models.write_text(BASELINES, encoding="utf-8")
    env["WENHENG_MODELS"] = str(models)
    env["WENHENG_SOURCES"] = str(ROOT / "data" / "sources.yaml")
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_CACHE", "cache"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("WENHENG_REPORTS", "reports"), ("WENHENG_HISTORY", "history"), ("WENHENG_LOGS", "logs"),
                      ("DAGSTER_HOME", "dagster_home")]:
        env[name] = str(base / sub)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", base / "dagster_home" / "dagster.yaml")
    subprocess.run([str(Path(sys.executable).parent / "wenheng"), "run", "--model", "oracle", "--model", "random",
                    "--no-report"], cwd=Path(__import__("pipeline").__file__).parents[1], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return base / "warehouse.duckdb"


def build_aceval(base: Path, n: int = 2000) -> Path:
    """A synthetic AC-EVAL warehouse: `n` questions over its subjects and levels, one model."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import paths
    from pipeline.warehouse import publish

    spec = importlib.util.spec_from_file_location("wenheng_scale_report", ROOT / "perf" / "scale.py")
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    lake = base / "lake"
    scale.write_lake(lake, ["aceval"], ["model-a"], n, variants=1, settings=1)
    subjects = [(task, level) for level, tasks in ACEVAL_LEVELS.items() for task in tasks]
    items = pq.read_table(lake / "items" / "aceval.parquet")
    picked = [subjects[k % len(subjects)] for k in range(n)]
    items = items.set_column(items.schema.get_field_index("task"), "task", pa.array([t for t, _ in picked]))
    items = items.set_column(items.schema.get_field_index("task_group"), "task_group",
                             pa.array([g for _, g in picked]))
    pq.write_table(items, lake / "items" / "aceval.parquet")
    db = base / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR, base / "history")
    return db


def time_reports(db: Path, out: Path, repeats: int) -> dict:
    """write_reports' first call and the median of `repeats` more, in this process."""
    from pipeline.reports import write_reports

    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        write_reports(db, out)
        times.append(time.perf_counter() - start)
    import pipeline
    return {"cold": times[0], "warm": statistics.median(times[1:]), "code": str(Path(pipeline.__file__).parents[1])}


def _env(code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code) + os.pathsep + env.get("PYTHONPATH", "")
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def timed_in_process(db: Path, out: Path, repeats: int, code: Path | None) -> dict:
    env = _env(code)
    result = subprocess.run([sys.executable, __file__, "--time-only", str(db), "--out", str(out),
                             "--repeats", str(repeats)], env=env, check=True, capture_output=True, text=True,
                            cwd=code or ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with (its pipeline/ is used)")
    parser.add_argument("--keep", type=Path, help="build the warehouses here, or reuse those already there")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--build-with", type=Path,
                        help="the checkout whose pipeline builds the warehouses (default: --before's, else this one)")
    parser.add_argument("--build", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--time-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build:
        {"samples": build_samples, "aceval-2000": build_aceval}[args.build[0]](Path(args.build[1]))
        return 0
    if args.time_only:
        print(json.dumps(time_reports(args.time_only, args.out, args.repeats)))
        return 0
    base = args.keep or Path(tempfile.mkdtemp(prefix="wenheng-report-bench-"))
    try:
        warehouses = {}
        build_with = args.build_with or args.before
        for name in ("samples (2 models, 5 benchmarks)", "aceval-2000 (1 model)"):
            folder = base / name.split()[0]
            db = folder / "warehouse.duckdb"
            if not db.exists():
                start = time.perf_counter()
                subprocess.run([sys.executable, __file__, "--build", name.split()[0], str(folder)], check=True,
                               env=_env(build_with and build_with.resolve()))
                print(f"built {name} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
            warehouses[name] = db
        print(f"write_reports: cold = first call in a fresh process, warm = median of {args.repeats} more")
        for name, db in warehouses.items():
            after = timed_in_process(db, db.parent / "report_after", args.repeats, None)
            line = f"{name:34s} now:    cold {after['cold']:.3f} s  warm {after['warm']:.3f} s"
            if args.before:
                before = timed_in_process(db, db.parent / "report_before", args.repeats, args.before.resolve())
                print(f"{name:34s} before: cold {before['cold']:.3f} s  warm {before['warm']:.3f} s")
                line += (f"   (x{before['cold'] / after['cold']:.1f} cold, "
                         f"x{before['warm'] / after['warm']:.1f} warm faster)")
            print(line)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
