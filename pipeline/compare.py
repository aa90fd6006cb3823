"""Two models on the same items: every paper-table row's difference, with a paired-bootstrap 95%
interval and a p-value (`wenheng compare A B`).

The paper tables' bootstrap is already paired: replicate b gives each scoring unit a weight that
depends only on its id (pipeline/aggregate/), so model A's and model B's replicate b weigh the
same items the same way. The difference's replicates are A's minus B's; its interval is their
2.5th-97.5th percentile, and the two-sided p-value is twice the smaller share of replicates on
either side of zero (floored at 1/(replicates + 1)): how often a resample of the items reverses
the sign of the difference. Rows are compared on the same split, setting and variant only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from pipeline import aggregate
from pipeline.benchmarks import cards
from pipeline.rows import judge_j_text

KEYS = ["benchmark", "table_name", "row_order", "row_label", "metric", "split", "setting", "variant"]
COLUMNS = [*KEYS, "title", "headline", "model_a", "model_b", "score_a", "score_b", "difference", "ci_low",
           "ci_high", "p_value", "replicates", "n_items", "n_scored_a", "n_scored_b", "comparable", "judge"]
# A p-value at the floor of 1,000 replicates (1/1,001) is drawn again with this many, the first
# 1,000 the same: "p ≤ 0.001" becomes a number, or "≤ 0.0001".
MORE_REPLICATES = 10_000


class CompareError(ValueError):
    """A comparison that cannot be made (a model not in the warehouse, no common runs)."""


@dataclass(frozen=True)
class PairedDifference:
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None


def paired_difference(score_a: float | None, score_b: float | None, replicates_a: np.ndarray,
                      replicates_b: np.ndarray) -> PairedDifference:
    """A - B with its paired-bootstrap interval and two-sided p-value (module docstring)."""
    if score_a is None or score_b is None:
        return PairedDifference(None, None, None, None)
    diff = np.asarray(replicates_a, dtype=float) - np.asarray(replicates_b, dtype=float)
    diff = diff[np.isfinite(diff)]
    if not len(diff):
        return PairedDifference(score_a - score_b, None, None, None)
    low, high = np.percentile(diff, [2.5, 97.5])
    below, above = (diff <= 0).mean(), (diff >= 0).mean()
    p = min(1.0, max(2 * min(below, above), 1 / (len(diff) + 1)))
    return PairedDifference(round(score_a - score_b, 9), round(float(low), 9), round(float(high), 9), float(p))


def models_in(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [m for (m,) in con.execute("SELECT DISTINCT model FROM responses ORDER BY 1").fetchall()]


def compare(con: duckdb.DuckDBPyConnection, model_a: str, model_b: str,
            benchmarks: list[str] | None = None) -> pd.DataFrame:
    """Every paper-table row that both models have (same benchmark, split, setting, variant), A vs
    B, as COLUMNS."""

    known = models_in(con)
    for model in (model_a, model_b):
        if model not in known:
            raise CompareError(f"no responses of model {model!r} in the warehouse (models there: "
                               f"{', '.join(known) or 'none'})")
    if model_a == model_b:
        raise CompareError("compare two different models")
    frame = pairwise(con, [model_a, model_b], benchmarks).get((model_a, model_b))
    if frame is None:
        why = "".join(f"; {line}" for line in not_compared(con, None, model_a, model_b, benchmarks))
        shared = shared_runs(con, model_a, model_b, benchmarks)
        if shared:
            raise CompareError(f"{model_a} and {model_b} share {shared} benchmark run(s), but no paper row of them "
                               "has a score (gold answers withheld, as AC-EVAL's test split's: `wenheng submission` "
                               "writes those)" + why)
        raise CompareError(f"{model_a} and {model_b} share no benchmark run (the same benchmark, split, setting "
                           "and variant) in the warehouse" + why)
    return frame


def shared_runs(con: duckdb.DuckDBPyConnection, model_a: str, model_b: str, benchmarks: list[str] | None) -> int:
    """How many runs (benchmark, split, setting, variant) both models answered."""
    runs = """SELECT DISTINCT benchmark, split, setting, variant FROM responses r JOIN items USING (item_id, benchmark)
              WHERE model = ? AND (? OR list_contains(?, benchmark))"""
    names = list(benchmarks or [])
    return con.execute(f"SELECT count(*) FROM ({runs} INTERSECT {runs})",
                       [model_a, not names, names, model_b, not names, names]).fetchone()[0]


def not_compared(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame | None, model_a: str, model_b: str,
                 benchmarks: list[str] | None) -> list[str]:
    """One line per benchmark asked for (`--benchmark`) that has no row in `frame`, saying why:
    a model never answered it, or no row shared by both has a score (withheld gold answers)."""
    shown = set(frame["benchmark"]) if frame is not None else set()
    lines = []
    for name in dict.fromkeys(benchmarks or ()):
        if name in shown:
            continue
        ran = {m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE benchmark = ? AND model IN (?, ?)",
                                         [name, model_a, model_b]).fetchall()}
        missing = [m for m in (model_a, model_b) if m not in ran]
        why = (f"no responses of {' or '.join(missing)} to it in the warehouse" if missing else
               "no paper row of one split, setting and variant has a score of either model (gold answers "
               "withheld, as AC-EVAL's test split's: `wenheng submission` writes those)")
        lines.append(f"{name}: nothing to compare: {why}")
    return lines


def pairwise(con: duckdb.DuckDBPyConnection, models: list[str], benchmarks: list[str] | None = None,
             headline_only: bool = False) -> dict[tuple[str, str], pd.DataFrame]:
    """Every two of `models` (A before B, in the order given) that share a run: their compared rows.
    Each model's rows and replicates are computed once per benchmark, whatever the number of pairs.
    `headline_only`: only the cards' headline tables are computed (a table's rows depend on its own
    spec and the units alone, so they are the rows a whole computation gives)."""
    from pipeline.warehouse import paper_judge_tasks
    from pipeline.warehouse import units as units_of

    all_cards = cards()
    wanted = list(dict.fromkeys(benchmarks or sorted(all_cards)))   # a benchmark named twice is compared once
    for name in wanted:
        if name not in all_cards:
            raise CompareError(f"unknown benchmark {name!r} (known: {', '.join(sorted(all_cards))})")
    frames: dict[tuple[str, str], list[pd.DataFrame]] = {}
    for name in wanted:
        bench = all_cards[name]
        params = {"benchmark": name, "judge_tasks": paper_judge_tasks(con, bench)}
        units = units_of(con, list(models), params)
        if units.empty or units["model"].nunique() < 2:
            continue
        tables = bench.tables
        if headline_only:
            tables = replace(tables, tables=tuple(spec for spec in tables.tables if spec.headline))
            if not tables.tables:
                continue
        rows = aggregate.paper_tables(tables, name, units, replicates=True)
        pairs = {(a, b): _pairs(rows, a, b) for a, b in combinations(models, 2)}
        pairs = _resolve_floor(tables, name, units, pairs)
        for key, pair in pairs.items():
            if not pair.empty:
                frames.setdefault(key, []).append(pair)
    return {pair: pd.concat(parts, ignore_index=True) for pair, parts in frames.items()}


def _resolve_floor(tables: aggregate.CardTables, name: str, units: pd.DataFrame,
                   pairs: dict[tuple[str, str], pd.DataFrame]) -> dict[tuple[str, str], pd.DataFrame]:
    """The tables where some pair's p sits at the floor of its replicates, drawn again with
    MORE_REPLICATES: their rows replaced, the others kept."""
    floored = {t for pair in pairs.values() if not pair.empty
               for t in pair.loc[pair["p_value"] <= 1 / (pair["replicates"] + 1) * (1 + 1e-9), "table_name"]}
    if not floored:
        return pairs
    again = replace(tables, tables=tuple(spec for spec in tables.tables if spec.name in floored))
    rows = aggregate.paper_tables(again, name, units, replicates=True, draws=MORE_REPLICATES)
    out = {}
    for (a, b), pair in pairs.items():
        redrawn = _pairs(rows, a, b)
        kept = pair[~pair["table_name"].isin(floored)] if not pair.empty else pair
        out[(a, b)] = pd.concat([kept, redrawn], ignore_index=True) if not redrawn.empty else kept
        if not out[(a, b)].empty and not pair.empty:   # the tables' order as computed
            order = {t: i for i, t in enumerate(dict.fromkeys(pair["table_name"]))}
            out[(a, b)] = out[(a, b)].sort_values("table_name", key=lambda c: c.map(order), kind="stable",
                                                  ignore_index=True)
    return out


def _pairs(rows: pd.DataFrame, model_a: str, model_b: str) -> pd.DataFrame:
    a = rows[rows["model"] == model_a].set_index(KEYS)
    b = rows[rows["model"] == model_b].set_index(KEYS)
    out = []
    for key in a.index.intersection(b.index, sort=False):
        ra, rb = a.loc[key], b.loc[key]
        if _value(ra["score"]) is None and _value(rb["score"]) is None:
            continue   # neither has a number (withheld answers): nothing to compare
        d = paired_difference(_value(ra["score"]), _value(rb["score"]), ra["replicates"], rb["replicates"])
        out.append({**dict(zip(KEYS, key)), "title": ra["title"], "headline": bool(ra["headline"]),
                    "model_a": model_a, "model_b": model_b, "score_a": _value(ra["score"]),
                    "score_b": _value(rb["score"]), "difference": d.difference, "ci_low": d.ci_low,
                    "ci_high": d.ci_high, "p_value": d.p_value, "replicates": len(ra["replicates"]),
                    "n_items": int(ra["n_items"]),
                    "n_scored_a": int(ra["n_scored"]), "n_scored_b": int(rb["n_scored"]),
                    "comparable": bool(ra["comparable"]) and bool(rb["comparable"]),
                    "judge": _judge(ra, rb, model_a, model_b)})
    return pd.DataFrame(out, columns=COLUMNS)


def _judge(ra, rb, model_a: str, model_b: str) -> str | None:
    """Where either side was judged by a judge its controls found uninformative: each side's J."""
    said = [f"{m}: {t}" for m, r in ((model_a, ra), (model_b, rb))
            if (t := judge_j_text(r.get("uninformative_share"), r.get("judge_j")))]
    return "; ".join(said) or None


def _value(x) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def text(frame: pd.DataFrame, headline_only: bool = False) -> str:
    """The comparison as plain columns, one block per benchmark and run setting."""
    from pipeline.texttable import table

    if headline_only:
        frame = frame[frame["headline"]]
    a, b = frame["model_a"].iloc[0], frame["model_b"].iloc[0]
    lines = [f"{a} - {b}: difference in score x100 on the same items, its paired-bootstrap 95% interval and "
             f"two-sided p ({aggregate.REPLICATES:,} replicates, {MORE_REPLICATES:,} for a table where p reached "
             f"{_floor():.3f}: p is resolved to 1/(replicates + 1)); "
             "scored: the items each model has a score on, of the row's items; † = not comparable to the paper "
             f"(see the leaderboard); ‡ = fewer than {FEW_SCORED} scored items: the interval is rough"]
    for keys, part in frame.groupby(["benchmark", "split", "setting", "variant"], sort=False, dropna=False):
        lines += ["", f"{keys[0]} · split {keys[1]} · setting {keys[2]} · variant {keys[3]}"]
        body = [[f"{r.title}: {r.row_label}" + (f" ({r.metric})" if r.metric not in ("accuracy", "mean") else ""),
                 _num(r.score_a), _num(r.score_b), difference_text(r),
                 "" if r.ci_low is None else f"[{_signed(r.ci_low)}, {_signed(r.ci_high)}]",
                 _p(r.p_value, r.replicates),
                 scored_text(r)] for r in part.itertuples(index=False)]
        lines.append(table(["row", a, b, "difference", "95% interval", "p", "scored"], body, align="l"))
    return "\n".join(lines)


FEW_SCORED = 30   # below this many scored items a row's bootstrap interval is rough


def difference_text(r) -> str:
    """The difference, marked † when not comparable to the paper and ‡ when few items are scored,
    with each side's judge J where its judge is uninformative there."""
    few = min(r.n_scored_a, r.n_scored_b) < FEW_SCORED
    judge = getattr(r, "judge", None)
    return (_signed(r.difference) + ("" if r.comparable else "†") + ("‡" if few else "")
            + (f" ({judge})" if isinstance(judge, str) and judge else ""))


def scored_text(r) -> str:
    """What the difference covers: the items each model has a score on, of the row's items."""
    scored = f"{r.n_scored_a:,}" if r.n_scored_a == r.n_scored_b else f"{r.n_scored_a:,}, {r.n_scored_b:,}"
    return f"{scored} of {r.n_items:,}"


def _num(x) -> str:
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.1f}"


def _signed(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return "0.0" if round(float(x), 1) == 0 else f"{x:+.1f}"   # no -0.0 or +0.0


def _floor(replicates: int = aggregate.REPLICATES) -> float:
    """The smallest p the bootstrap resolves: 1 / (replicates + 1)."""
    return 1 / (replicates + 1)


def _p(p, replicates: int = aggregate.REPLICATES) -> str:
    """p at the bootstrap's resolution: at its floor, "≤" the floor (≤0.001 for 1,000 replicates,
    ≤0.0001 for 10,000); above it, as many decimals as the replicates resolve."""
    if p is None or (isinstance(p, float) and np.isnan(p)):
        return "–"
    replicates = int(replicates) if replicates and not (isinstance(replicates, float) and np.isnan(replicates)) \
        else aggregate.REPLICATES
    digits = len(str(replicates)) - 1
    floor = _floor(replicates)
    return f"≤{floor:.{digits}f}" if p <= floor * (1 + 1e-9) else f"{p:.{digits}f}"
