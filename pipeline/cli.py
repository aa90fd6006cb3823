"""`wenheng`: the pipeline from a terminal, sharing run history with `dagster dev` (both use the
project's .dagster_home unless DAGSTER_HOME says otherwise).

Every user mistake (an unknown name, a bad flag, a missing warehouse, failing SQL) is one line on
stderr and a non-zero exit: 2 for a wrong command line or configuration, 1 for a failed run or
query, 75 when another run holds the data directories."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import paths

LIMIT_ENV = "WENHENG_LIMIT"   # read by the prompts asset: at most N evaluated items per benchmark


class UserError(Exception):
    """A mistake the user can fix: printed as one line, exit code `code`."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


class _Version(argparse.Action):
    """`--version`, computed only when asked (it runs git)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="wenheng", description="Classical-Chinese LLM benchmarks (WenMind, AC-EVAL, WYWEB, Fuxi, "
                                                 "CP-DUE) as a Dagster pipeline: build, run, score, query.")
    parser.add_argument("--version", action=_Version, help="print wenheng's version and git commit, then exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run_p = sub.add_parser("run", help="materialize the pipeline in-process, print a summary and the leaderboard, "
                                       "write the HTML report",
                           description="Run every stage (prepare, one evaluate run per benchmark x model, publish), "
                                       "then print a per-partition summary and the leaderboard and write the report "
                                       "into data/reports/<run id>/.")
    run_p.add_argument("--sources", metavar="FILE", help="sources file (default data/sources.yaml or $WENHENG_SOURCES)")
    run_p.add_argument("--models", metavar="FILE", help="models file (default data/models.yaml or $WENHENG_MODELS)")
    run_p.add_argument("--benchmark", action="append", metavar="NAME",
                       help="evaluate only this benchmark (repeatable; default: every benchmark in the sources file)")
    run_p.add_argument("--model", action="append", metavar="NAME",
                       help="evaluate only this model (repeatable; default: every model in the models file)")
    run_p.add_argument("--limit", type=_positive_int, metavar="N",
                       help=f"ask at most N items per benchmark, spread over its tasks, for a quick look "
                            f"(exported as ${LIMIT_ENV}; recorded in the report)")
    run_p.add_argument("--select", metavar="SELECTION",
                       help="Dagster asset selection, e.g. 'key:items+' (default: everything)")
    run_p.add_argument("--no-report", action="store_true", help="do not write the HTML report at the end")

    q_p = sub.add_parser("query", help="run SQL on the warehouse, read-only, and print the result")
    q_p.add_argument("sql", metavar="SQL", help="a SQL statement, or the path of a .sql file holding one")
    q_p.add_argument("--timeout", type=_positive_seconds, default=60.0, metavar="S",
                     help="stop the query after S seconds (default 60)")

    lb_p = sub.add_parser("leaderboard", help="print each benchmark's headline numbers, or every table one "
                                              "benchmark's paper publishes")
    lb_p.add_argument("benchmark", nargs="?", metavar="BENCHMARK", help="one benchmark, e.g. wenmind")

    m_p = sub.add_parser("models", help="list the configured models: engine, cache identity, judge role")
    m_p.add_argument("--models", metavar="FILE", help="models file (default data/models.yaml or $WENHENG_MODELS)")

    t_p = sub.add_parser("tasks", help="list each benchmark's tasks: format, scorer, evaluated split, items")
    t_p.add_argument("benchmark", nargs="?", metavar="BENCHMARK", help="one benchmark (default: all)")
    t_p.add_argument("--sources", metavar="FILE",
                     help="sources file, for the splits it evaluates (default data/sources.yaml or $WENHENG_SOURCES)")

    r_p = sub.add_parser("report", help="write the HTML report of the warehouse as it is")
    r_p.add_argument("--out", metavar="DIR", help="output folder (default data/reports/<UTC timestamp>/)")

    d_p = sub.add_parser("diff", help="what changed in a benchmark between two source versions")
    d_p.add_argument("benchmark", metavar="BENCHMARK", help="e.g. wenmind")
    d_p.add_argument("--from", dest="from_version", required=True, metavar="V1", help="the older source version")
    d_p.add_argument("--to", dest="to_version", required=True, metavar="V2", help="the newer source version")

    s_p = sub.add_parser("submission", help="write a model's predictions on a withheld-answer split as the "
                                            "benchmark's official submission JSON (AC-EVAL's test split)")
    s_p.add_argument("benchmark", metavar="BENCHMARK", help="a benchmark with a submission format, e.g. aceval")
    s_p.add_argument("--model", required=True, metavar="NAME", help="the model whose answers to submit")
    s_p.add_argument("--setting", help="prompt setting (default: the benchmark's first default setting)")
    s_p.add_argument("--variant", default="original", help="script variant (default: original)")
    s_p.add_argument("-o", "--output", required=True, metavar="FILE", help="the JSON file to write")

    c_p = sub.add_parser("compare", help="two models on the same items: each paper row's difference, its "
                                         "paired-bootstrap 95%% interval and p-value")
    c_p.add_argument("model_a", metavar="A", help="a model in the warehouse")
    c_p.add_argument("model_b", metavar="B", help="the model to compare it with")
    c_p.add_argument("--benchmark", action="append", metavar="NAME", help="only this benchmark (repeatable)")
    c_p.add_argument("--headline", action="store_true", help="only each benchmark's headline rows")
    c_p.add_argument("--csv", metavar="FILE", help="also write every compared row as CSV")

    from pipeline.contamination.commands import add_parser as add_contamination
    add_contamination(sub)
    return parser


COMMANDS = {"run": lambda a: run(a), "query": lambda a: query(a.sql, a.timeout),
            "leaderboard": lambda a: leaderboard(a.benchmark),
            "models": lambda a: list_models(a), "tasks": lambda a: list_tasks(a), "report": lambda a: report(a),
            "diff": lambda a: diff(a), "submission": lambda a: write_submission(a),
            "contamination": lambda a: contamination(a), "compare": lambda a: compare(a)}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # the command line, for the report

    from pipeline.benchmarks import UnknownBenchmark
    from pipeline.config import ConfigError

    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        _error(str(exc))
        return exc.code
    except BrokenPipeError:   # `wenheng leaderboard | head -1`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # so the interpreter's last flush does not fail again
        return 0
    except (ConfigError, FileNotFoundError, UnknownBenchmark) as exc:
        _error(str(exc))
        return 2
    except OSError as exc:
        _error(str(exc))
        return 1
    except Exception as exc:  # a user's mistake gets one line, never a traceback
        import duckdb

        if isinstance(exc, duckdb.Error):
            _error(f"the warehouse cannot answer ({type(exc).__name__}: {' '.join(str(exc).split())}); if it was "
                   "built by an older wenheng, run `wenheng run` to rebuild it")
            return 1
        if type(exc).__module__.startswith("dagster"):
            _error(f"{type(exc).__name__}: {exc}")
            return 2
        raise


# -- run ------------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    if args.sources:
        os.environ["WENHENG_SOURCES"] = str(Path(args.sources).resolve())
    if args.models:
        os.environ["WENHENG_MODELS"] = str(Path(args.models).resolve())
    if args.limit:
        os.environ[LIMIT_ENV] = str(args.limit)
    os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home()))
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM's INFO lines drown the progress
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)

    from pipeline import benchmarks
    from pipeline.config import load_config
    from pipeline.contamination.corpora import load_corpora
    from pipeline.runner import run_pipeline

    for name in args.benchmark or ():
        benchmarks.card(name)   # an unknown name: one line listing the known ones
    # every problem, before any stage; a warning (a strong judge with wenheng's prompts) is said aloud
    sources, models = load_config(paths.sources_file(), paths.models_file(), warn=_say, run_models=args.model,
                                  run_benchmarks=args.benchmark)
    if args.select:
        _check_selection(args.select)
    corpora = list(load_corpora(paths.corpora_file()))   # each is scanned (only its changed files are read)
    chosen = list(dict.fromkeys(args.benchmark or sources))
    unconfigured = [b for b in chosen if b not in sources]
    if unconfigured:
        raise UserError(f"benchmark {', '.join(unconfigured)} is not configured in {paths.sources_file()}; "
                        f"configured: {', '.join(sources)}")
    wanted = list(dict.fromkeys(args.model or models))
    unknown = sorted(set(wanted) - set(models))
    if unknown:
        raise UserError(f"unknown models {unknown}; configured: {', '.join(models)}")
    from pipeline import locking, progress, stopping

    progress.claim_terminal()  # before Dagster redirects stderr inside each step
    if _limit():   # said aloud: a limit left in the environment would otherwise shrink runs silently
        _say(f"at most {_limit()} items per benchmark (--limit / ${LIMIT_ENV})")
    started_at, started = time.time(), time.perf_counter()
    stopping.watch_signals()   # SIGINT/SIGTERM: stop sending, store what is in flight, launch nothing more
    try:
        with locking.hold():   # one writer per lake, warehouse and cache
            try:
                summary = run_pipeline(benchmarks=chosen, models=wanted, selection=args.select, log=_say,
                                       corpora=corpora)
            finally:
                from pipeline.engines.vllm_engine import shutdown_engines

                shutdown_engines()
    except locking.LockHeld as exc:
        _error(str(exc))
        return 75   # EX_TEMPFAIL: try again later
    elapsed = time.perf_counter() - started
    if summary.stopped is not None or stopping.stop_requested():
        name = signal.Signals(stopping.stop_signal() or signal.SIGINT).name
        _say(f"stopped by {name} after {elapsed:.1f} s: answers received are stored; "
             "the next run sends only what is missing")
        return stopping.exit_code()
    _say(f"{'done' if summary.ok else 'FAILED'} in {elapsed:.1f} s")
    rows = partition_rows(summary.materializations)
    if rows:
        print("\n" + summary_table(rows))
    timings = summary.timings
    if timings:
        print("time per phase: " + ", ".join(f"{k} {_seconds(v)}" for k, v in timings.items()))
    for line in summary.failures:
        _error(line)
    if not summary.ok:
        return 1
    if paths.warehouse_file().is_file():
        leaderboard(None)
        if not args.no_report:
            # the runner's tag (UTC start time + a few random characters) names the report folder, so
            # a report and the Dagster runs it came from (tag wenheng/run) are found from each other
            run_id = summary.run_tag
            try:
                return _write_report(paths.reports_dir() / run_id, after_run=True, run_info=lambda build: {
                    **build(command=["wenheng", *args.argv], started_at=datetime.fromtimestamp(started_at, UTC),
                            timings=timings or None, limit=_limit(), benchmarks=chosen, models=wanted,
                            sources_file=paths.sources_file(), models_file=paths.models_file()),
                    "run_id": run_id, "partitions": rows})
            except UserError as exc:   # the run itself succeeded: its results are in the warehouse
                _error(f"no report written: {exc}")
    return 0


def _check_selection(selection: str) -> None:
    """`--select` must name at least one asset (pipeline.runner.check_selection)."""
    from pipeline.runner import check_selection

    try:
        check_selection(selection)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def partition_rows(materializations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per benchmark x model partition that produced responses, from the runner's
    materializations: counts from `responses`, judge calls from `judgements`."""
    rows: dict[str, dict[str, Any]] = {}
    for m in materializations:
        if m["asset"] not in ("responses", "judgements") or not m.get("partition"):
            continue
        benchmark, _, model = str(m["partition"]).partition("|")   # MultiPartitionKey: benchmark|model
        row = rows.setdefault(m["partition"], {"benchmark": benchmark, "model": model})
        meta = m["metadata"]
        if m["asset"] == "responses":
            seconds = float(meta.get("engine_seconds") or 0.0)
            sent = int(meta.get("prompts_sent") or 0)
            row.update(prompts=int(meta.get("prompts") or 0), sent=sent, cache_hits=int(meta.get("cache_hits") or 0),
                       errors=int(meta.get("errors") or 0), seconds=seconds,
                       tokens_per_s=float(meta.get("output_tokens_per_s") or 0.0),
                       calls_per_s=sent / seconds if seconds else 0.0)
        else:
            row["judge_sent"] = int(meta.get("judge_calls_sent") or 0)
    return [r for r in rows.values() if "prompts" in r]


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    """The end-of-run table: prompts, sent, cache hits, errors, throughput and engine seconds per
    partition, numbers formatted (thousands separators, one decimal)."""
    from pipeline.progress import format_count, format_rate

    judged = any(r.get("judge_sent") for r in rows)
    headers = ["benchmark", "model", "prompts", "sent", "cache hits", "errors", "throughput", "seconds"]
    headers += ["judge calls sent"] if judged else []
    body = []
    for r in rows:
        if not r["sent"]:
            speed = "-"
        elif r["tokens_per_s"]:
            speed = f"{format_rate(r['tokens_per_s'])} tok/s"
        else:
            speed = f"{format_rate(r['calls_per_s'])} calls/s"
        line = [r["benchmark"], r["model"], format_count(r["prompts"]), format_count(r["sent"]),
                format_count(r["cache_hits"]), format_count(r["errors"]), speed,
                f"{r['seconds']:,.1f}" if r["sent"] else "-"]
        body.append(line + ([format_count(r.get("judge_sent", 0))] if judged else []))
    return text_table(headers, body, left=2)


def text_table(headers: Sequence[str], body: Sequence[Sequence[str]], left: int = 1) -> str:
    """Plain columns: the first `left` left-aligned, the rest right-aligned (numbers)."""
    widths = [max(len(str(row[i])) for row in [headers, *body]) for i in range(len(headers))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()

    return "\n".join([fmt(headers), *(fmt(row) for row in body)])


def make_run_id(started_at: float, tag: str | None = None) -> str:
    """20261122-193000 (UTC), with the run's tag after it when it has one."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(started_at))
    return f"{stamp}-{tag}" if tag else stamp


def _limit() -> int | None:
    value = os.environ.get(LIMIT_ENV)
    return int(value) if value and value.isdigit() else None


# -- report, diff (their modules are optional parts of an installation) ---------------------------

def report(args: argparse.Namespace) -> int:
    """The report of the warehouse as it is (no run facts: pipeline.reports reads what it can)."""
    db_path = paths.warehouse_file()
    if not db_path.is_file():
        raise UserError(f"no warehouse at {db_path}: run `wenheng run` first")
    out = Path(args.out).resolve() if args.out else paths.reports_dir() / make_run_id(time.time())
    return _write_report(out, after_run=False)


def _write_report(out_dir: Path, after_run: bool, run_info=None) -> int:
    """`run_info(build_run_info)` makes the run's facts with pipeline.reports' own builder."""
    from pipeline.reports import build_run_info, write_reports

    info = run_info(build_run_info) if run_info else None
    html = write_reports(paths.warehouse_file(), out_dir, info)
    print(f"\nreport: {html}" if after_run else f"wrote {html}")
    return 0


def diff(args: argparse.Namespace) -> int:
    from pipeline.benchmarks import card

    card(args.benchmark)
    from pipeline.history import diff_command

    return int(diff_command(args.benchmark, args.from_version, args.to_version) or 0)


# -- models, tasks --------------------------------------------------------------------------------

def list_models(args: argparse.Namespace) -> int:
    from pipeline.config import load_judges, load_models
    from pipeline.engines.registry import build_engine

    path = Path(args.models).resolve() if args.models else paths.models_file()
    models = load_models(path)
    judges = load_judges(path, models)
    judging: dict[str, list[str]] = {}
    for bench, spec in judges.items():
        judging.setdefault(spec.model, []).append(bench)
    body = []
    for name, spec in models.items():
        identity = {k: v for k, v in build_engine(spec).identity().items() if k != "engine" and v not in (None, {}, "")}
        role = f"judges {', '.join(judging[name])}" if name in judging else "-"
        body.append([name, spec.engine, ", ".join(f"{k}={v}" for k, v in identity.items()), role])
    print(text_table(["model", "engine", "cache identity", "judge"], body, left=4))
    return 0


def list_tasks(args: argparse.Namespace) -> int:
    """From the warehouse's items when it exists (with item counts); else each card's scorer routes."""
    from pipeline.benchmarks import card, cards

    chosen = [card(args.benchmark)] if args.benchmark else list(cards().values())
    splits = {c.name: c.eval_splits for c in chosen}
    sources_path = Path(args.sources).resolve() if args.sources else paths.sources_file()
    if sources_path.is_file():
        from pipeline.config import load_sources

        splits |= {n: s.evaluate for n, s in load_sources(sources_path).items() if n in splits and s.evaluate}
    db_path = paths.warehouse_file()
    if not db_path.is_file():
        body = [[c.name, ", ".join(splits[c.name]), ", ".join(f"{k}: {v}" for k, v in c.scorers.items()) or "-"]
                for c in chosen]
        print(text_table(["benchmark", "eval split", "rule scorers by task or format (others by format)"], body, 3))
        print(f"(no warehouse at {db_path}: run `wenheng run` to list the tasks found in the data and their items)")
        return 0
    from pipeline.scoring.rules import DEFAULT_SCORERS
    from pipeline.warehouse import connect_readonly

    with connect_readonly(db_path) as con:
        found = con.execute("SELECT benchmark, task, format, split, count(*) FROM items "
                            "GROUP BY ALL ORDER BY benchmark, task, format, split").fetchall()
    body = []
    for c in chosen:
        for bench, task, fmt, split, n in found:
            if bench != c.name or split not in splits[c.name]:
                continue
            rule = c.scorer_for(task, fmt) or DEFAULT_SCORERS.get(fmt) or "-"
            scorer = f"judge (rule: {rule})" if c.paper_scorer_for(task) == "judge" else rule
            body.append([bench, task, fmt, scorer, split, f"{n:,}"])
    if not body:
        raise UserError(f"no items of {', '.join(c.name for c in chosen)} in the warehouse's evaluated splits", 1)
    print(text_table(["benchmark", "task", "format", "scorer", "eval split", "items"], body, left=5))
    return 0


# -- query, submission, leaderboard ---------------------------------------------------------------

def query(sql: str, limit: float = 60.0) -> int:
    """Read-only, and nothing outside the warehouse: no files read or written (`copy ... to`,
    `read_csv`), no databases attached, no extensions installed or loaded, and the settings locked
    so a query cannot turn any of that back on."""
    import threading

    import duckdb

    text = _sql_text(sql)
    db_path = paths.warehouse_file()
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    try:
        with duckdb.connect(str(db_path), read_only=True, config={
                "enable_external_access": False, "autoinstall_known_extensions": False,
                "autoload_known_extensions": False, "allow_community_extensions": False}) as con:
            con.execute("SET lock_configuration = true")
            timer = threading.Timer(limit, con.interrupt)   # a runaway query stops, it does not hang the shell
            timer.start()
            try:
                result = con.execute(text)
                frame = result.df() if result is not None and con.description is not None else None
            finally:
                timer.cancel()
    except duckdb.InterruptException:
        _error(f"query stopped after {limit:g} s (--timeout sets the limit)")
        return 1
    except duckdb.Error as exc:
        message = " ".join(str(exc).split())
        _error(f"query failed: {message[:500]}")
        return 1
    if frame is None:
        raise UserError("the SQL holds no statement that returns rows (only comments or whitespace?)")
    _print_frame(frame)
    return 0


def _sql_text(sql: str) -> str:
    """The SQL itself, or the contents of the .sql file it names; one line for a missing file or
    an empty query."""
    if sql.strip().endswith(".sql") and not any(c.isspace() for c in sql.strip()):
        path = Path(sql.strip())
        if not path.is_file():
            raise UserError(f"no SQL file at {path}")
        try:
            sql = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise UserError(f"{path} is not UTF-8 text") from None
    if not sql.strip():
        raise UserError("no SQL given: pass a statement, e.g. wenheng query \"select * from leaderboard\"")
    return sql


def contamination(args: argparse.Namespace) -> int:
    from pipeline.contamination.commands import main as contamination_main

    return contamination_main(args)


def write_submission(args: argparse.Namespace) -> int:
    """Predictions are the scorer's extracted answers on the items whose gold is withheld
    (whatever was extracted is kept as given: the organisers count it wrong)."""
    import json

    from pipeline.benchmarks import card
    from pipeline.warehouse import connect_readonly

    bench = card(args.benchmark)
    if bench.submission is None:
        raise UserError(f"{bench.title} has no submission format (its answers are public: see "
                        f"`wenheng leaderboard {bench.name}`)")
    setting = args.setting or bench.protocol["default_settings"][0]
    with connect_readonly(paths.warehouse_file()) as con:
        rows = con.execute("""SELECT s.item_id, s.extracted FROM scores s JOIN items i USING (item_id)
            -- the rule scorer's extraction: the letter the model answered
            WHERE s.benchmark = ? AND coalesce(s.kind, 'rule') = 'rule' AND i.answer IS NULL
              AND s.model = ? AND s.setting = ? AND s.variant = ?""",
                           [bench.name, args.model, setting, args.variant]).fetchall()
    if not rows:
        raise UserError(f"no {bench.title} responses on withheld-answer items for model {args.model!r}, "
                        f"setting {setting!r}, variant {args.variant!r} in the warehouse")
    Path(args.output).write_text(json.dumps(bench.submission(rows), ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {len(rows)} predictions to {args.output}")
    return 0


def compare(args: argparse.Namespace) -> int:
    """`wenheng compare A B`: paired differences (pipeline/compare.py)."""
    from pipeline import compare as comparing
    from pipeline.warehouse import connect_readonly

    with connect_readonly(paths.warehouse_file()) as con:
        try:
            frame = comparing.compare(con, args.model_a, args.model_b, args.benchmark)
        except comparing.CompareError as exc:
            raise UserError(str(exc)) from None
    if args.headline and not frame["headline"].any():
        raise UserError("no headline row is shared by both models: drop --headline to see every row")
    print(comparing.text(frame, args.headline))
    if args.csv:
        frame.to_csv(args.csv, index=False, encoding="utf-8")
        print(f"\nwrote {len(frame):,} rows to {args.csv}")
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


# -- helpers --------------------------------------------------------------------------------------

def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wenheng")
    except PackageNotFoundError:
        return "unknown"


def git_commit() -> str | None:
    """The checkout's commit (short), with `-dirty` when tracked files differ from it; None
    outside a git checkout."""
    root = paths.PROJECT_ROOT
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--"], capture_output=True,
                               timeout=10).returncode == 1
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def version_text() -> str:
    commit = git_commit()
    return f"wenheng {package_version()}" + (f" (git {commit})" if commit else "")


def _seconds(value: float) -> str:
    return f"{value:,.1f} s"


def _print_frame(frame) -> None:
    import pandas as pd

    with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200,
                           "display.unicode.east_asian_width", True):
        print(frame.to_string(index=False))


def _error(message: str) -> None:
    print(f"wenheng: {message}", file=sys.stderr)


def _say(message: str) -> None:
    print(f"[wenheng] {message}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
