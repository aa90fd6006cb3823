"""`wenheng run | query | leaderboard`: the pipeline from a terminal, sharing run history with
`dagster dev` (both use the project's .dagster_home unless DAGSTER_HOME says otherwise)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from pipeline import paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wenheng",
                                     description="Classical-Chinese LLM benchmarks as a Dagster pipeline")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="materialize the pipeline in-process and print the leaderboard")
    run_p.add_argument("--sources", help="sources file (default data/sources.yaml or $WENHENG_SOURCES)")
    run_p.add_argument("--models", help="models file (default data/models.yaml or $WENHENG_MODELS)")
    run_p.add_argument("--select", help="Dagster asset selection, e.g. 'key:items+' (default: everything)")
    run_p.add_argument("--model", action="append", help="only these models' partitions (repeatable)")
    q_p = sub.add_parser("query", help="run SQL (a string or a .sql file) on the warehouse, read-only")
    q_p.add_argument("sql")
    lb_p = sub.add_parser("leaderboard", help="print each benchmark's headline numbers, or with a benchmark name "
                                              "every table its paper publishes")
    lb_p.add_argument("benchmark", nargs="?", help="e.g. wenmind, aceval, wyweb, fuxi, cpdue")
    ex_p = sub.add_parser("submission",
                          help="write a model's predictions on a benchmark's withheld-answer split as the "
                               "benchmark's official submission JSON (AC-EVAL's test split)")
    ex_p.add_argument("benchmark", help="a benchmark whose card defines a submission format, e.g. aceval")
    ex_p.add_argument("--model", required=True)
    ex_p.add_argument("--setting", help="prompt setting (default: the benchmark's first default setting)")
    ex_p.add_argument("--variant", default="original")
    ex_p.add_argument("-o", "--output", required=True, help="the JSON file to write")
    args = parser.parse_args(argv)

    from pipeline.benchmarks import UnknownBenchmark
    from pipeline.config import ConfigError

    try:
        if args.command == "run":
            return run(args)
        if args.command == "query":
            return query(args.sql)
        if args.command == "submission":
            return write_submission(args)
        return leaderboard(args.benchmark)
    except (ConfigError, FileNotFoundError, UnknownBenchmark) as exc:
        print(f"wenheng: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"wenheng: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a user's mistake gets one line, never a traceback
        import duckdb

        if isinstance(exc, duckdb.Error):
            print(f"wenheng: the warehouse cannot answer ({type(exc).__name__}: {exc}); if it was built by an "
                  "older wenheng, run `wenheng run` to rebuild it", file=sys.stderr)
            return 1
        if type(exc).__module__.startswith("dagster"):
            print(f"wenheng: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        raise


def run(args: argparse.Namespace) -> int:
    if args.sources:
        os.environ["WENHENG_SOURCES"] = str(Path(args.sources).resolve())
    if args.models:
        os.environ["WENHENG_MODELS"] = str(Path(args.models).resolve())
    os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home()))
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM's INFO lines drown the progress
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)

    from pipeline.config import load_config
    from pipeline.runner import run_pipeline

    sources, models = load_config(paths.sources_file(), paths.models_file())  # every problem, before any stage
    wanted = args.model or list(models)
    unknown = sorted(set(wanted) - set(models))
    if unknown:
        print(f"wenheng: unknown models {unknown}; configured: {', '.join(models)}", file=sys.stderr)
        return 2
    from pipeline import locking, stopping

    started = time.perf_counter()
    stopping.watch_signals()   # SIGINT/SIGTERM: stop sending, store what is in flight, launch nothing more
    try:
        with locking.hold():   # one writer per lake, warehouse and cache
            try:
                summary = run_pipeline(benchmarks=list(sources), models=wanted, selection=args.select, log=_say)
            finally:
                from pipeline.engines.vllm_engine import shutdown_engines

                shutdown_engines()
    except locking.LockHeld as exc:
        print(f"wenheng: {exc}", file=sys.stderr)
        return 75   # EX_TEMPFAIL: try again later
    elapsed = time.perf_counter() - started
    if summary.stopped is not None or stopping.stop_requested():
        name = signal.Signals(stopping.stop_signal() or signal.SIGINT).name
        _say(f"stopped by {name} after {elapsed:.1f} s: answers received are stored; "
             "the next run sends only what is missing")
        return stopping.exit_code()
    _say(f"{'done' if summary.ok else 'FAILED'} in {elapsed:.1f} s")
    for line in summary.failures:
        print(f"wenheng: {line}", file=sys.stderr)
    if summary.ok and paths.warehouse_file().is_file():
        leaderboard(None)
    return 0 if summary.ok else 1


def query(sql: str) -> int:
    """Read-only, and nothing outside the warehouse: no files read or written (`copy ... to`,
    `read_csv`), no databases attached, no extensions installed or loaded, and the settings locked
    so a query cannot turn any of that back on."""
    import duckdb

    text = Path(sql).read_text(encoding="utf-8") if sql.endswith(".sql") and Path(sql).is_file() else sql
    db_path = paths.warehouse_file()
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    try:
        with duckdb.connect(str(db_path), read_only=True, config={
                "enable_external_access": False, "autoinstall_known_extensions": False,
                "autoload_known_extensions": False, "allow_community_extensions": False}) as con:
            con.execute("SET lock_configuration = true")
            frame = con.execute(text).df()
    except duckdb.Error as exc:
        message = " ".join(str(exc).split())
        print(f"wenheng: query failed: {message[:500]}", file=sys.stderr)
        return 1
    _print_frame(frame)
    return 0


def write_submission(args: argparse.Namespace) -> int:
    """Predictions are the scorer's extracted answers on the items whose gold is withheld
    (whatever was extracted is kept as given: the organisers count it wrong)."""
    import json

    from pipeline.benchmarks import card
    from pipeline.warehouse import connect_readonly

    bench = card(args.benchmark)
    if bench.submission is None:
        print(f"wenheng: {bench.title} has no submission format (its answers are public: see "
              f"`wenheng leaderboard {bench.name}`)", file=sys.stderr)
        return 2
    setting = args.setting or bench.protocol["default_settings"][0]
    with connect_readonly(paths.warehouse_file()) as con:
        rows = con.execute("""SELECT s.item_id, s.extracted FROM scores s JOIN items i USING (item_id)
            -- the rule scorer's extraction: the letter the model answered
            WHERE s.benchmark = ? AND coalesce(s.kind, 'rule') = 'rule' AND i.answer IS NULL
              AND s.model = ? AND s.setting = ? AND s.variant = ?""",
                           [bench.name, args.model, setting, args.variant]).fetchall()
    if not rows:
        print(f"wenheng: no {bench.title} responses on withheld-answer items for model {args.model!r}, "
              f"setting {setting!r}, variant {args.variant!r} in the warehouse", file=sys.stderr)
        return 2
    Path(args.output).write_text(json.dumps(bench.submission(rows), ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {len(rows)} predictions to {args.output}")
    return 0


def leaderboard(benchmark: str | None) -> int:
    """All benchmarks: each one's headline rows (only aggregates its paper defines). One benchmark:
    every table its paper publishes."""
    from pipeline.benchmarks import card, cards
    from pipeline.report import blocks
    from pipeline.warehouse import connect_readonly

    if benchmark:
        card(benchmark)  # an unknown name is an error, not an empty table
    where = "benchmark = ?" if benchmark else "headline"
    with connect_readonly(paths.warehouse_file()) as con:
        frame = con.execute(f"SELECT * FROM paper_tables WHERE {where} ORDER BY benchmark, row_order",
                            [benchmark] if benchmark else []).df()
    frame = frame.astype(object).where(frame.notna(), None)
    print(f"\nLeaderboard{' of ' + benchmark if benchmark else ''}: each benchmark by its own paper's rule "
          f"(pipeline/benchmarks/<name>/tables.yaml)")
    print(blocks(frame, {name: c.title for name, c in cards().items()}))
    return 0


def _print_frame(frame) -> None:
    import pandas as pd

    with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200,
                           "display.unicode.east_asian_width", True):
        print(frame.to_string(index=False))


def _say(message: str) -> None:
    print(f"[wenheng] {message}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
