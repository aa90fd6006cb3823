"""`wenheng run`: every stage in-process, then the summary, the leaderboard and the report."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import paths
from pipeline.cli.commands import leaderboard, write_report
from pipeline.cli.guarded import guarded, run_stages
from pipeline.cli.output import UserError, error, say, seconds, text_table
from pipeline.settings import Settings, settings

LIMIT_ENV = Settings.limit.name   # read by the prompts asset: at most N evaluated items per benchmark


def run(args: argparse.Namespace) -> int:
    if args.sources:
        os.environ[Settings.sources.name] = str(Path(args.sources).resolve())
    if args.models:
        os.environ[Settings.models.name] = str(Path(args.models).resolve())
    if args.limit:
        os.environ[LIMIT_ENV] = str(args.limit)
    return guarded(lambda run_tag, log_file: _run(args, run_tag, log_file), args.verbose)


def _run(args: argparse.Namespace, run_tag: str, log_file: Path) -> int:
    """`wenheng run` once the settings are checked; `log_file` gets the failed steps' tracebacks."""
    from pipeline.runner import run_pipeline

    chosen, wanted, corpora = _planned(args)
    if _limit():   # said aloud: a limit left in the environment would otherwise shrink runs silently
        say(f"at most {_limit()} items per benchmark (--limit / ${LIMIT_ENV})")
    started_at, started = time.time(), time.perf_counter()
    summary, code = run_stages(lambda: run_pipeline(benchmarks=chosen, models=wanted, selection=args.select, log=say,
                                                    corpora=corpora, run_tag=run_tag, force=args.force),
                               "answers received are stored; the next run sends only what is missing")
    if code is not None:
        return code
    return _finished(args, summary, time.perf_counter() - started, started_at, chosen, wanted, log_file)


def _planned(args: argparse.Namespace) -> tuple[list[str], list[str], list[str]]:
    """The benchmarks, models and corpora of this run; every configuration problem is raised
    (UserError, one line) before any stage."""
    from pipeline import benchmarks
    from pipeline.config import load_config
    from pipeline.contamination.corpora import load_corpora

    for name in args.benchmark or ():
        benchmarks.card(name)   # an unknown name: one line listing the known ones
    # every problem, before any stage; a warning (a strong judge with wenheng's prompts) is said aloud
    sources, models = load_config(paths.sources_file(), paths.models_file(), warn=say, run_models=args.model,
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
    from pipeline.engines.cache import cache_file, cache_problem

    unreadable = cache_problem(cache_file())   # every answer goes through it: a corrupt file is named now
    if unreadable:
        raise UserError(unreadable)
    return chosen, wanted, corpora


def _finished(args: argparse.Namespace, summary, elapsed: float, started_at: float, chosen: list[str],
              wanted: list[str], log_file: Path) -> int:
    """After a run that was not stopped: the outcome, the partitions' table, the time per phase,
    the failures; after a successful one, the leaderboard and the report."""
    say(f"{'done' if summary.ok else 'FAILED'} in {elapsed:.1f} s")
    rows = partition_rows(summary.materializations)
    if rows:
        print("\n" + summary_table(rows))
    timings = summary.timings
    if timings:
        print("time per phase: " + ", ".join(f"{k} {seconds(v)}" for k, v in timings.items()))
    for line in summary.failures:
        error(line)
    if not summary.ok:
        if log_file.is_file():   # the tracebacks of the failed steps, the libraries' warnings
            error(f"details: {log_file}")
        return 1
    if paths.warehouse_file().is_file():
        leaderboard(None)
        for line in judge_checks():
            say(line)
        if not args.no_report:
            # the runner's tag (UTC start time + a few random characters) names the report folder, so
            # a report and the Dagster runs it came from (tag wenheng/run) are found from each other
            run_id = summary.run_tag
            try:
                return write_report(paths.reports_dir() / run_id, after_run=True, run_info=lambda build: {
                    **build(command=["wenheng", *args.argv], started_at=datetime.fromtimestamp(started_at, UTC),
                            timings=timings or None, limit=_limit(), benchmarks=chosen, models=wanted,
                            sources_file=paths.sources_file(), models_file=paths.models_file()),
                    "run_id": run_id, "partitions": rows})
            except UserError as exc:   # the run itself succeeded: its results are in the warehouse
                error(f"no report written: {exc}")
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
                       collapsed=int(meta.get("prompts_collapsed") or 0), engine=meta.get("engine"),
                       errors=int(meta.get("errors") or 0), seconds=seconds,
                       tokens_per_s=float(meta.get("output_tokens_per_s") or 0.0),
                       calls_per_s=sent / seconds if seconds else 0.0)
        else:
            row["judge_sent"] = int(meta.get("judge_calls_sent") or 0)
    return [r for r in rows.values() if "prompts" in r]


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    """The end-of-run table: prompts, sent, cache hits, identical prompts asked once (sent + cache
    hits + identical = prompts), errors, throughput and engine seconds per partition, numbers
    formatted (thousands separators, one decimal). A baseline generates nothing: its throughput
    and seconds say so, not a rate of a few microseconds' work."""
    from pipeline.progress import format_count, format_rate

    judged = any(r.get("judge_sent") for r in rows)
    headers = ["benchmark", "model", "prompts", "sent", "cache hits", "identical", "errors", "throughput", "seconds"]
    headers += ["judge calls sent"] if judged else []
    body = []
    for r in rows:
        baseline = r.get("engine") == "baseline"
        if not r["sent"]:
            speed = "-"
        elif baseline:
            speed = "baseline"
        elif r["tokens_per_s"]:
            speed = f"{format_rate(r['tokens_per_s'])} tok/s"
        else:
            speed = f"{format_rate(r['calls_per_s'])} calls/s"
        line = [r["benchmark"], r["model"], format_count(r["prompts"]), format_count(r["sent"]),
                format_count(r["cache_hits"]), format_count(r.get("collapsed", 0)), format_count(r["errors"]), speed,
                f"{r['seconds']:,.1f}" if r["sent"] and not baseline else "-"]
        body.append(line + ([format_count(r.get("judge_sent", 0))] if judged else []))
    return text_table(headers, body, left=2)


def _limit() -> int | None:
    return settings().limit


def judge_checks() -> list[str]:
    """The oracle and random baselines as checks of each judge (pipeline.judge.validity.baseline_checks),
    from the warehouse of the run just published."""
    from pipeline.config import load_models
    from pipeline.judge.validity import baseline_checks
    from pipeline.warehouse import connect_readonly

    strategies = {name: spec.params.get("strategy") for name, spec in load_models(paths.models_file()).items()
                  if spec.engine == "baseline"}
    if not strategies:
        return []
    try:
        with connect_readonly(paths.warehouse_file()) as con:
            means = con.execute("""SELECT s.benchmark, i.task, s.judge_model, s.model, avg(s.score) FROM scores s
                JOIN items i USING (item_id) WHERE s.kind = 'judge' AND s.score IS NOT NULL
                AND list_contains($models, s.model) GROUP BY ALL""", {"models": list(strategies)}).fetchall()
            table = con.execute("SELECT * FROM judge_validity").df()
    except Exception:  # noqa: BLE001 - a warehouse without these tables: nothing to check
        return []
    measured = {(r["benchmark"], r["task"], r["judge_model"]): r for r in table.to_dict("records")}
    return baseline_checks([(b, t, j, strategies[m], mean) for b, t, j, m, mean in means], measured)
