"""Paper tables as text: one block per table and run setting, one column per model, every cell
with its score, 95% interval and how many items it covers (scored / asked)."""

from __future__ import annotations

import math

import pandas as pd

SHOWN_METRICS = {"corpus_bleu": "BLEU", "corpus_chrf": "chrF", "micro_f1": "micro-F1"}
KEY = ("score x100 [95% bootstrap interval] scored/items; * = the model's max_tokens cut the benchmark's budget; "
       "† = not comparable to the paper (its LLM-judged items were scored by rules or the demo judge: see the note)")
NOT_COMPARABLE = "†"


def marks(row) -> str:
    """A cell's marks: * capped, † not comparable to the paper."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    return ("*" if get("capped") else "") + (NOT_COMPARABLE if get("comparable", True) is False else "")


def cell(row: pd.Series) -> str:
    covered = f"{int(row['n_scored'])}/{int(row['n_items'])}"
    mark = marks(row)
    if row["score"] is None or (isinstance(row["score"], float) and math.isnan(row["score"])):
        return f"-{mark} {covered}"
    interval = "" if _missing(row["ci_low"]) else f" [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
    return f"{row['score']:.1f}{mark}{interval} {covered}"


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def blocks(frame: pd.DataFrame, titles: dict[str, str]) -> str:
    """`frame`: rows of `paper_tables` (one benchmark or several). `titles`: benchmark -> display name."""
    if frame.empty:
        return "no scored items yet: run `wenheng run` first"
    out = [KEY]
    frame = frame.assign(cell=frame.apply(cell, axis=1))
    group_keys = ["benchmark", "table_name", "split", "setting", "variant"]
    for keys, part in frame.groupby(group_keys, sort=False, dropna=False):
        info = dict(zip(group_keys, keys))
        header = (f"{titles.get(info['benchmark'], info['benchmark'])} - {part['title'].iloc[0]}   "
                  f"(split {info['split']}, setting {info['setting']}, variant {info['variant']})")
        # name the metric where it is not the table's plain mean (corpus BLEU beside chrF, micro-F1)
        suffix = part["metric"].map(lambda m: f" ({SHOWN_METRICS[m]})" if m in SHOWN_METRICS else "")
        part = part.assign(row=part["row_label"] + suffix)
        order = part.drop_duplicates("row").sort_values(["row_order", "metric"])["row"]
        table = part.pivot_table(index="row", columns="model", values="cell", aggfunc="first").reindex(order)
        table.index.name = None
        table.columns.name = None
        with pd.option_context("display.max_rows", 500, "display.max_columns", 50, "display.width", 250,
                               "display.unicode.east_asian_width", True):
            out += ["", header, table.fillna("").to_string()]
        notes = part[["row", "note"]].dropna().drop_duplicates().itertuples(index=False)
        out += [f"  note: {row}: {note}" for row, note in notes]
    return "\n".join(out)
