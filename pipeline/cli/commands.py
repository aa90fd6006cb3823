"""The commands that read the warehouse or the configuration: report, diff, models, tasks,
query, submission, compare, leaderboard (and contamination's entry)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline import paths
from pipeline.cli.output import UserError, error, print_frame, text_table


def make_run_id(started_at: float, tag: str | None = None) -> str:
    """20261122-193000 (UTC), with the run's tag after it when it has one."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(started_at))
    return f"{stamp}-{tag}" if tag else stamp



# -- report, diff (their modules are optional parts of an installation) ---------------------------

def report(args: argparse.Namespace) -> int:
    """The report of the warehouse as it is (no run facts: pipeline.reports reads what it can)."""
    db_path = paths.warehouse_file()
    if not db_path.is_file():
        raise UserError(f"no warehouse at {db_path}: run `wenheng run` first")
    out = Path(args.out).resolve() if args.out else paths.reports_dir() / make_run_id(time.time())
    return write_report(out, after_run=False)


def write_report(out_dir: Path, after_run: bool, run_info=None) -> int:
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
    measured = judge_validity_lines(judges)
    if measured:
        print("\njudge validity (known-answer controls of the last run; J = accepted golds - accepted wrong answers):")
        print("\n".join(measured))
    return 0


def judge_validity_lines(judges: dict) -> list[str]:
    """One line per judged benchmark whose judge's validity the warehouse holds: J over all its
    controls with the interval, and the tasks where it is uninformative."""
    db_path = paths.warehouse_file()
    if not judges or not db_path.is_file():
        return []
    from pipeline.warehouse import connect_readonly

    try:
        with connect_readonly(db_path) as con:
            found = con.execute("""SELECT benchmark, judge_model, any_value(youden_j) FILTER (task = '(all)'),
                       any_value(j_low) FILTER (task = '(all)'), any_value(j_high) FILTER (task = '(all)'),
                       list(DISTINCT task ORDER BY task) FILTER (task <> '(all)' AND NOT informative),
                       count(DISTINCT task) FILTER (task <> '(all)')
                FROM judge_validity GROUP BY ALL ORDER BY benchmark""").fetchall()
    except Exception:  # noqa: BLE001 - a warehouse from before judge_validity: nothing measured yet
        return []
    lines = []
    for bench, judge, j, low, high, weak, tasks in found:
        if bench not in judges or judges[bench].model != judge or j is None:
            continue
        listed = ", ".join(weak[:6]) + (", ..." if len(weak) > 6 else "")
        verdict = f"uninformative on {len(weak)} of {tasks} tasks ({listed})" if weak else \
            f"informative on all {tasks} tasks"
        lines.append(f"  {bench}: judge {judge}: J {j:.2f} [{low:.2f}, {high:.2f}]; {verdict}")
    return lines


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
        error(f"query stopped after {limit:g} s (--timeout sets the limit)")
        return 1
    except duckdb.Error as exc:
        message = " ".join(str(exc).split())
        error(f"query failed: {message[:500]}")
        return 1
    if frame is None:
        raise UserError("the SQL holds no statement that returns rows (only comments or whitespace?)")
    print_frame(frame)
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
    setting = args.setting or bench.protocol.default_settings[0]
    with connect_readonly(paths.warehouse_file()) as con:
        rows = con.execute("""SELECT s.item_id, s.extracted FROM scores s JOIN items i USING (item_id)
            -- the rule scorer's extraction: the letter the model answered
            WHERE s.benchmark = ? AND s.kind = 'rule' AND i.answer IS NULL
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
    from pipeline import compare_published
    from pipeline.warehouse import connect_readonly

    if compare_published.published_name(args.model_a) is not None:
        raise UserError("name your model first and the paper's second: wenheng compare MY-MODEL 'paper:NAME'")
    paper_model = compare_published.published_name(args.model_b)
    if paper_model is not None:
        with connect_readonly(paths.warehouse_file()) as con:
            try:
                frame = compare_published.compare_published(con, args.model_a, paper_model, args.benchmark)
            except comparing.CompareError as exc:
                raise UserError(str(exc)) from None
        print(compare_published.text(frame))
        return _write_csv(frame, args.csv)
    with connect_readonly(paths.warehouse_file()) as con:
        try:
            frame = comparing.compare(con, args.model_a, args.model_b, args.benchmark)
        except comparing.CompareError as exc:
            raise UserError(str(exc)) from None
        # every --benchmark is accounted for: one without a compared row says why, never dropped silently
        left_out = comparing.not_compared(con, frame, args.model_a, args.model_b, args.benchmark)
    if args.headline and not frame["headline"].any():
        raise UserError("no headline row is shared by both models: drop --headline to see every row")
    print(comparing.text(frame, args.headline))
    for line in left_out:
        print(f"\n{line}")
    return _write_csv(frame, args.csv)


def _write_csv(frame, path: str | None) -> int:
    if path:
        frame.to_csv(path, index=False, encoding="utf-8")
        print(f"\nwrote {len(frame):,} rows to {path}")
    return 0


def leaderboard(benchmark: str | None) -> int:
    """All benchmarks: each one's headline rows (only aggregates its paper defines). One benchmark:
    every table its paper publishes."""
    from pipeline.benchmarks import card, cards
    from pipeline.reports.text import blocks
    from pipeline.warehouse import connect_readonly, published_scores

    if benchmark:
        card(benchmark)  # an unknown name is an error, not an empty table
    where = "benchmark = ?" if benchmark else "headline"
    with connect_readonly(paths.warehouse_file()) as con:
        frame = con.execute(f"SELECT * FROM paper_tables WHERE {where} ORDER BY benchmark, row_order",
                            [benchmark] if benchmark else []).df()
        published = published_scores(con)
    frame = frame.astype(object).where(frame.notna(), None)
    print(f"\nLeaderboard{' of ' + benchmark if benchmark else ''}: each benchmark by its own paper's rule "
          f"(pipeline/benchmarks/<name>/tables.yaml)")
    print(blocks(frame, {name: c.title for name, c in cards().items()}, published))
    return 0
