"""`wenheng`: the pipeline from a terminal, sharing run history with `dagster dev` (both use the
project's .dagster_home unless DAGSTER_HOME says otherwise).

Every user mistake (an unknown name, a bad flag, a bad WENHENG_* variable, a missing warehouse,
failing SQL) is one line on stderr and a non-zero exit: 2 for a wrong command line or
configuration, 1 for a failed run or query, 75 when another run holds the data directories, 130
after Ctrl-C. `wenheng run` keeps the terminal for its own lines: tracebacks, Python warnings and
the log lines of the libraries it runs go to the run's log file (`--verbose`: to the terminal).

  __init__.py   the parser and the dispatch, one line per mistake
  run.py        `wenheng run`
  commands.py   the commands that read the warehouse or the configuration
  contamination.py   `wenheng contamination scan` and `report`
  cache.py      `wenheng cache info` and `prune`
  guarded.py    the one guarded sequence of `run` and `contamination scan`
  output.py     one-line errors, wenheng's own lines, plain tables"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from pipeline import paths
from pipeline.cli.cache import add_parser as add_cache_parser
from pipeline.cli.cache import cache as cache_command
from pipeline.cli.commands import (
    compare,
    diff,
    leaderboard,
    list_models,
    list_tasks,
    make_run_id,
    query,
    report,
    write_submission,
)
from pipeline.cli.output import UserError, error, lenient_streams, say, text_table
from pipeline.cli.run import LIMIT_ENV, partition_rows, run, summary_table
from pipeline.terminal import quiet_interrupts, route_logs

__all__ = ["LIMIT_ENV", "UserError", "build_parser", "git_commit", "main", "make_run_id", "package_version",
           "partition_rows", "quiet_interrupts", "route_logs", "say", "summary_table", "text_table"]


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

    _add_run(sub)
    _add_read_commands(sub)
    add_cache_parser(sub)
    from pipeline.cli.contamination import add_parser as add_contamination
    add_contamination(sub)
    return parser


def _add_run(sub) -> None:
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
    run_p.add_argument("--force", action="store_true",
                       help="run every stage, even those whose inputs (files, settings, code) did not change "
                            "since they were built (the response cache still answers the prompts it holds)")
    run_p.add_argument("-v", "--verbose", action="store_true",
                       help="show the warnings and log lines of the libraries wenheng runs (vLLM, torch, Dagster, "
                            "...) on the terminal; without it they go to the run's log file")


def _add_read_commands(sub) -> None:
    """The commands that read the warehouse or the configuration."""
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
                                         "paired-bootstrap 95%% interval and p-value; or a model and one of "
                                         "the papers' own ('paper:NAME'): point differences")
    c_p.add_argument("model_a", metavar="A", help="a model in the warehouse")
    c_p.add_argument("model_b", metavar="B", help="the model to compare it with, or 'paper:NAME' for a model of "
                                                  "the papers' published tables (e.g. 'paper:GPT-4')")
    c_p.add_argument("--benchmark", action="append", metavar="NAME", help="only this benchmark (repeatable)")
    c_p.add_argument("--headline", action="store_true", help="only each benchmark's headline rows")
    c_p.add_argument("--csv", metavar="FILE", help="also write every compared row as CSV")


COMMANDS = {"run": lambda a: run(a), "query": lambda a: query(a.sql, a.timeout),
            "leaderboard": lambda a: leaderboard(a.benchmark),
            "models": lambda a: list_models(a), "tasks": lambda a: list_tasks(a), "report": lambda a: report(a),
            "diff": lambda a: diff(a), "submission": lambda a: write_submission(a),
            "contamination": lambda a: contamination_command(a), "compare": lambda a: compare(a),
            "cache": lambda a: cache_command(a)}


def contamination_command(args: argparse.Namespace) -> int:
    # imported when used: the package's submodule `contamination` is the command's module
    from pipeline.cli.contamination import main as contamination_main

    return contamination_main(args)


def main(argv: list[str] | None = None) -> int:
    quiet_interrupts()
    lenient_streams()
    try:
        return _main(argv)
    except KeyboardInterrupt:   # Ctrl-C outside a run's own handling (imports, loading, the report): one line
        error("stopped by SIGINT")
        return 128 + signal.SIGINT


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # the command line, for the report

    from pipeline.benchmarks import UnknownBenchmark
    from pipeline.config import ConfigError

    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        error(str(exc))
        return exc.code
    except BrokenPipeError:   # `wenheng leaderboard | head -1`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # so the interpreter's last flush does not fail again
        return 0
    except (ConfigError, FileNotFoundError, UnknownBenchmark) as exc:
        error(str(exc))
        return 2
    except OSError as exc:
        error(str(exc))
        return 1
    except Exception as exc:  # a user's mistake gets one line, never a traceback
        import duckdb

        if isinstance(exc, duckdb.Error):
            error(f"the warehouse cannot answer ({type(exc).__name__}: {' '.join(str(exc).split())}); if it was "
                   "built by an older wenheng, run `wenheng run` to rebuild it")
            return 1
        if type(exc).__module__.startswith("dagster"):
            error(f"{type(exc).__name__}: {exc}")
            return 2
        raise


# -- version --------------------------------------------------------------------------------------

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
