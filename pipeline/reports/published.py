"""The papers' own model rows (`published_scores`, from each card's published.yaml) beside a
user's paper-table rows: which of them a table is shown with, and how they are summed up.

A table (benchmark x card table x setting) is shown with the published rows of the same setting;
where the paper has that table in one setting only (WYWEB's fine-tuned encoders, Fùxì's zero-shot
tables beside a setting of the user's own), with those, their setting named. They are the papers'
numbers as printed: no interval, no item count, and not re-run here.
"""

from __future__ import annotations

import warnings

import pandas as pd

from pipeline.rows import missing


def beside(published: pd.DataFrame | None, benchmark: str, table_name: str, setting: str) -> pd.DataFrame:
    """The published rows to show with one table of a user's rows (empty where there are none)."""
    if published is None or published.empty:
        return pd.DataFrame(columns=[] if published is None else published.columns)
    rows = published[(published["benchmark"] == benchmark) & (published["table_name"] == table_name)]
    same = rows[rows["setting"] == setting]
    if not same.empty or rows["setting"].nunique() != 1:
        return same
    return rows


def source_label(rows: pd.DataFrame, setting: str | None = None, split: str | None = None) -> str:
    """`published (WenMind paper, Table 3)`, with the paper's setting and split where they are
    not the table's own (`setting`, `split`)."""
    papers: dict[str, list[str]] = {}
    for source, table in dict.fromkeys(zip(rows["source"], rows["paper_table"])):
        papers.setdefault(source[:len(source) - len(table)].rstrip(", "), []).append(table)
    sources = "; ".join(f"{paper}, {', '.join(tables)}" for paper, tables in papers.items())
    extra = ([s for s in sorted(set(rows["setting"])) if s != setting]
             + [f"{s} split" for s in sorted(set(rows["split"])) if s != split])
    return f"published ({sources}; {', '.join(extra)})" if extra else f"published ({sources})"


def models(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the papers' models (not their averages, humans or chance rows)."""
    return rows[rows["kind"] == "model"] if "kind" in rows else rows


def summary(rows: pd.DataFrame) -> dict[str, str]:
    """row label -> "median [lowest, highest] ·n" of the published models on that row (rows that
    are no model, e.g. the paper's Average or Random, left out)."""
    out = {}
    for label, part in models(rows).groupby("row_label", sort=False):
        scores = part["score"].astype(float)
        out[str(label)] = f"{scores.median():.1f} [{scores.min():.1f}, {scores.max():.1f}] ·{len(scores)}"
    return out


def shown_once(labels: list[str]) -> list[str | None]:
    """Per shown row (its paper-table row label, in the order shown) the label whose published
    numbers go beside it: its own on the first row of a label, None on a second (a row shown with
    two metrics, BLEU and chrF, gets them once, beside its first)."""
    seen: set[str] = set()
    out: list[str | None] = []
    for label in labels:
        out.append(None if label in seen else label)
        seen.add(label)
    return out


def standing(rows: pd.DataFrame, label: str, model: str, score) -> str | None:
    """Where `model`'s `score` on row `label` falls among the published models: "gemma3-270m 12.3
    would rank 31 of 32 (next above: LLaMA2-7B-Chat 13.0)", or None without a score."""
    if missing(score):
        return None
    part = models(rows)
    part = part[part["row_label"] == label].sort_values("score", ascending=False)
    if part.empty:
        return None
    above, below = part[part["score"] > score], part[part["score"] <= score]
    near = ([f"next above: {r.model} {r.score:.1f}" for r in above.tail(1).itertuples()]
            + [f"next below: {r.model} {r.score:.1f}" for r in below.head(1).itertuples()])
    return f"{model} {score:.1f} would rank {len(above) + 1} of {len(part) + 1} ({'; '.join(near)})"


def note(rows: pd.DataFrame, setting: str | None = None, split: str | None = None) -> str:
    """The line that says what a table's published column is."""
    return (f"{source_label(rows, setting, split)}: the paper's own models on the row: median [lowest, highest] "
            "·how many, as printed (no interval; not re-run here); all in the warehouse's `published_scores`")


# The charts' reference series: per row the published models' median, its whiskers their range.
SERIES = "published (median, range)"
GREY = "#9E9E9E"


def with_published(part: pd.DataFrame, published: pd.DataFrame | None,
                   colours: dict[str, str] | None) -> tuple[pd.DataFrame, dict[str, str] | None]:
    """One paper table's rows for its chart, with a grey series per run setting that the papers'
    models are shown with: on each row their median, the whiskers from the lowest to the highest
    (in the bootstrap interval's columns). Returns the rows and the colours to draw them in."""
    from pipeline.charts import model_colours

    added = []
    for (split, setting, variant), g in part.groupby(["split", "setting", "variant"], sort=False, dropna=False):
        ref = models(beside(published, str(g["benchmark"].iloc[0]), str(g["table_name"].iloc[0]), setting))
        if ref.empty:
            continue
        first = g.drop_duplicates("row_label").set_index("row_label")
        stats = ref.groupby("row_label")["score"].agg(["median", "min", "max"])
        for label, r in stats.iterrows():
            if label in first.index:
                added.append({"benchmark": g["benchmark"].iloc[0], "table_name": g["table_name"].iloc[0],
                              "model": SERIES, "split": split, "setting": setting, "variant": variant,
                              "row_label": label, "metric": first.loc[label].get("metric"),
                              "row_order": first.loc[label].get("row_order"), "score": r["median"],
                              "ci_low": r["min"], "ci_high": r["max"], "capped": False})
    if not added:
        return part, colours
    colours = {**(colours or model_colours(part["model"])), SERIES: GREY}
    with warnings.catch_warnings():   # all-null columns (notes, n_items) of the added rows: part's types stand
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat([part, pd.DataFrame(added)], ignore_index=True), colours


KEY = ("published = the paper's own models on that row: median [lowest, highest] ·how many, as printed "
       "(no interval; not re-run here); every row in the warehouse's `published_scores`")
