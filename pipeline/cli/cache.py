"""`wenheng cache info` and `wenheng cache prune`: the response cache's size and answers per model,
and dropping a model's answers or those older than a date (pipeline/engines/cache_admin.py)."""

from __future__ import annotations

import argparse
from datetime import date

from pipeline.cli.output import UserError, error, say, text_table


def add_parser(sub) -> None:
    c_p = sub.add_parser("cache", help="the response cache: its size and answers per model, or prune it")
    c_sub = c_p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c_sub.add_parser("info", help="the cache file, its size, and how many answers each model has in it")
    p_p = c_sub.add_parser("prune", help="drop a model's answers, or those answered before a date (the next run "
                                         "asks those prompts again)")
    p_p.add_argument("--model", metavar="NAME", help="drop this model's answers (a judge's too: its name)")
    p_p.add_argument("--before", type=_date, metavar="YYYY-MM-DD", help="drop the answers given before this day (UTC)")
    p_p.add_argument("--dry-run", action="store_true", help="say how many would be dropped, drop nothing")


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD (got {text!r})") from None


def cache(args: argparse.Namespace) -> int:
    from pipeline.engines.cache import cache_file, cache_problem

    path = cache_file()
    unreadable = cache_problem(path)
    if unreadable:
        raise UserError(unreadable)
    return _info(path) if args.action == "info" else _prune(path, args)


def _info(path) -> int:
    from pipeline.engines.cache_admin import info

    found = info(path)
    print(f"{found.path}: {found.bytes / 1e6:,.1f} MB, {found.entries:,} answers")
    if found.per_model:
        print(text_table(["model", "answers", "first answered", "last answered"],
                         [[m, f"{n:,}", first or "", last or ""] for m, n, first, last in found.per_model]))
    return 0


def _prune(path, args: argparse.Namespace) -> int:
    from pipeline import locking
    from pipeline.engines.cache_admin import info, prune

    if args.model is None and args.before is None:
        raise UserError("cache prune: say what to drop: --model NAME, --before YYYY-MM-DD, or both")
    known = {m for m, *_ in info(path).per_model}
    if args.model is not None and args.model not in known:
        raise UserError(f"no answers of model {args.model!r} in the cache (models there: "
                        f"{', '.join(sorted(known)) or 'none'})")
    try:
        with locking.hold():   # not under a run that is writing answers
            dropped = prune(path, args.model, args.before, args.dry_run)
    except locking.LockHeld as exc:
        error(str(exc))
        return 75
    what = " and ".join(x for x in [f"of {args.model}" if args.model else "",
                                    f"answered before {args.before}" if args.before else ""] if x)
    say(f"{'would drop' if args.dry_run else 'dropped'} {dropped:,} answers {what}"
        + ("" if args.dry_run else f"; {info(path).bytes / 1e6:,.1f} MB left"))
    return 0
