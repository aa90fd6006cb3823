"""A model of the user's against one of the papers' own (`wenheng compare A 'paper:<name>'`): point
differences only. The papers publish their scores, not their models' answers per item, so there is
no paired resample and no interval or p-value; the difference is A's score minus the printed one,
on the rows both have (the published rows a table is shown with: pipeline/reports/published.py).
"""

from __future__ import annotations

import difflib

import duckdb
import pandas as pd

from pipeline.compare import CompareError, _num, _signed
from pipeline.reports.published import beside
from pipeline.warehouse import published_scores

PREFIX = "paper:"
COLUMNS = ["benchmark", "table_name", "title", "row_label", "split", "setting", "variant", "model", "score",
           "n_scored", "n_items", "comparable", "published_model", "published_score", "source",
           "published_setting", "published_split", "difference"]


def published_name(name: str) -> str | None:
    """`paper:<name>` -> <name>; None for a model of the user's."""
    return name[len(PREFIX):].strip() if name.startswith(PREFIX) else None


def compare_published(con: duckdb.DuckDBPyConnection, model: str, paper_model: str,
                      benchmarks: list[str] | None = None) -> pd.DataFrame:
    """Every paper-table row of `model` that the paper's `paper_model` has a published score on."""
    published = published_scores(con)
    if published is None:
        raise CompareError("this warehouse holds no published rows: run `wenheng run` (or `wenheng publish`) to "
                           "rebuild it")
    names = sorted(set(published["model"]))
    if paper_model not in names:
        lowered: dict[str, list[str]] = {}
        for n in names:
            lowered.setdefault(n.lower(), []).append(n)
        close = [n for low in difflib.get_close_matches(paper_model.lower(), list(lowered), n=5, cutoff=0.4)
                 for n in lowered[low]]
        raise CompareError(f"no published model {paper_model!r} in the papers' tables"
                           + (f" (did you mean {', '.join(close)}?)" if close else "")
                           + "; `wenheng query \"select distinct benchmark, model from published_scores\"` lists them")
    mine = con.execute("SELECT * FROM paper_tables WHERE model = ? AND (? OR list_contains(?, benchmark)) "
                       "ORDER BY benchmark, table_name, row_order, metric",
                       [model, not benchmarks, list(benchmarks or [])]).df()
    if mine.empty:
        raise CompareError(f"no paper-table rows of model {model!r} in the warehouse")
    theirs = published[published["model"] == paper_model]
    # a row shown with two metrics (BLEU and chrF) is compared on its first, as the tables show it
    mine = mine.drop_duplicates(["benchmark", "table_name", "row_label", "split", "setting", "variant"])
    out = []
    for keys, part in mine.groupby(["benchmark", "table_name", "setting"], sort=False):
        ref = beside(theirs, *keys).drop_duplicates("row_label").set_index("row_label")
        for r in part.itertuples(index=False):
            if r.row_label not in ref.index or pd.isna(r.score):
                continue
            p = ref.loc[r.row_label]
            out.append({"benchmark": r.benchmark, "table_name": r.table_name, "title": r.title,
                        "row_label": r.row_label, "split": r.split, "setting": r.setting, "variant": r.variant,
                        "model": model, "score": float(r.score), "n_scored": int(r.n_scored),
                        "n_items": int(r.n_items), "comparable": bool(r.comparable),
                        "published_model": paper_model, "published_score": float(p["score"]), "source": p["source"],
                        "published_setting": p["setting"], "published_split": p["split"],
                        "difference": round(float(r.score) - float(p["score"]), 9)})
    if not out:
        raise CompareError(f"{model} has no scored row that {paper_model} has a published score on "
                           f"({paper_model} is in: {', '.join(sorted(set(theirs['source'])))})")
    return pd.DataFrame(out, columns=COLUMNS)


def text(frame: pd.DataFrame) -> str:
    """The point differences, one block per benchmark, run setting and paper table."""
    from pipeline.texttable import table

    a, b = frame["model"].iloc[0], frame["published_model"].iloc[0]
    lines = [f"{a} - {b} (published): difference in score x100, a point difference only: the paper publishes "
             "its scores, not its model's answers per item, so no paired interval or p-value exists; the published "
             "numbers may come from another split or setting (named) and another judge; † = not comparable to the "
             "paper (see the leaderboard)"]
    keys = ["benchmark", "split", "setting", "variant", "source", "published_setting", "published_split"]
    frame = frame.sort_values(["benchmark", "source"], kind="stable")
    for k, part in frame.groupby(keys, sort=False, dropna=False):
        info = dict(zip(keys, k))
        theirs = f"{info['source']}: {info['published_setting']}, {info['published_split']} split"
        lines += ["", f"{info['benchmark']} · split {info['split']} · setting {info['setting']} · "
                      f"variant {info['variant']}   vs   {theirs}"]
        body = [[f"{r.title}: {r.row_label}", _num(r.score), _num(r.published_score),
                 _signed(r.difference) + ("" if r.comparable else "†"), f"{r.n_scored:,} of {r.n_items:,}"]
                for r in part.itertuples(index=False)]
        lines.append(table(["row", a, f"{b} (published)", "difference", f"{a} scored"], body, align="l"))
    return "\n".join(lines)
