"""Paper tables as text: one block per table and run setting, one column per model, every cell
with its score, 95% interval and how many items it covers (scored / asked). A run setting (split x
setting x variant) in which no model has a scored item is one line instead, saying why: the
benchmark withholds that split's answers (its card writes a submission file), or nothing was
scored."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from pipeline.reports import published as reference
from pipeline.rows import judge_hides_score, judge_j_text, missing, row_label
from pipeline.texttable import table as text_table

KEY = ("score x100 [95% bootstrap interval] scored/items; * = the model's max_tokens cut the benchmark's budget; "
       "† = not comparable to the paper (its LLM-judged items were scored by rules, the demo judge or a judge its "
       "controls found uninformative, or it was asked by log-likelihood: see the note); judge J x = its items were "
       "judged where the judge's known-answer controls measured Youden's J x, too low to tell right from wrong: "
       "no score shown (`on N%`: that share of the row, the score shown)")
NOT_COMPARABLE = "†"


def marks(row) -> str:
    """A cell's marks: * capped, † not comparable to the paper."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    return ("*" if get("capped") else "") + (NOT_COMPARABLE if get("comparable", True) is False else "")


def cell(row: pd.Series) -> str:
    covered = f"{int(row['n_scored'])}/{int(row['n_items'])}"
    mark = marks(row)
    judge = judge_j_text(row.get("uninformative_share"), row.get("judge_j"))
    if judge_hides_score(row.get("uninformative_share")):   # a number the judge cannot stand behind
        return f"{judge}{mark} {covered}"
    if row["score"] is None or (isinstance(row["score"], float) and math.isnan(row["score"])):
        return f"-{mark} {covered}"
    interval = "" if missing(row["ci_low"]) else f" [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
    return f"{row['score']:.1f}{mark}{interval} {covered}" + (f" ({judge})" if judge else "")


def unscored(part: pd.DataFrame) -> bool:
    """Whether no row of any model in `part` (paper-table rows) has a scored item."""
    return not any(not missing(n) and n > 0 for n in part["n_scored"])


def withheld(benchmark: str, split: str) -> bool:
    """Whether `benchmark` withholds the answers of `split`: its card writes the official
    submission file for such splits (`submission`, `wenheng submission <name>`), and the split is
    not one its few-shot examples (which need their answers) come from."""
    from pipeline.benchmarks import cards

    card = cards().get(benchmark)
    return card is not None and card.submission is not None and split not in card.exemplar_splits


def no_scores(benchmark: str, title: str, split: str, setting: str, variant: str) -> dict[str, str | None]:
    """The one line that stands for a run setting with no scored item: `head` (which run), `why`
    and `command` (the submission command where the answers are withheld, else None)."""
    head = f"{title} {split} split · {setting} · {variant}"
    if withheld(benchmark, split):
        return {"head": head, "why": "answers withheld, no scores", "command": f"wenheng submission {benchmark}"}
    return {"head": head, "why": "no scored items", "command": None}


def no_scores_text(line: dict[str, str | None]) -> str:
    """`no_scores` as text (Markdown too: the command in backticks)."""
    return f"{line['head']}: {line['why']}" + (f" (`{line['command']}`)" if line["command"] else "")


def blocks(frame: pd.DataFrame, titles: dict[str, str], published: pd.DataFrame | None = None) -> str:
    """`frame`: rows of `paper_tables` (one benchmark or several). `titles`: benchmark -> display name.
    `published`: rows of `published_scores`, summed up beside the tables they belong to."""
    if frame.empty:
        return "no scored items yet: run `wenheng run` first"
    out = [KEY] + ([reference.KEY] if published is not None and not published.empty else [])
    frame = frame.assign(cell=frame.apply(cell, axis=1))
    run_keys = ["benchmark", "split", "setting", "variant"]
    empty = {keys for keys, part in frame.groupby(run_keys, sort=False, dropna=False) if unscored(part)}
    said = set()
    group_keys = ["benchmark", "table_name", "split", "setting", "variant"]
    for keys, part in frame.groupby(group_keys, sort=False, dropna=False):
        info = dict(zip(group_keys, keys))
        run = tuple(info[k] for k in run_keys)
        if run in empty:   # one line for the run setting, however many tables it has
            if run not in said:
                said.add(run)
                title = titles.get(info["benchmark"], info["benchmark"])
                out += ["", no_scores_text(no_scores(info["benchmark"], title, *run[1:]))]
            continue
        header = (f"{titles.get(info['benchmark'], info['benchmark'])} - {part['title'].iloc[0]}   "
                  f"(split {info['split']}, setting {info['setting']}, variant {info['variant']})")
        part = part.assign(row=row_labels(part))
        order = part.drop_duplicates("row").sort_values(["row_order", "metric"])["row"]
        table = part.pivot_table(index="row", columns="model", values="cell", aggfunc="first").reindex(order)
        table.index.name = None
        table.columns.name = None
        ref = reference.beside(published, info["benchmark"], info["table_name"], info["setting"])
        if not ref.empty:
            table[reference.source_label(ref, info["setting"], info["split"])] = _published_column(part, order, ref)
        body = [[label, *row] for label, row in zip(table.index, table.fillna("").itertuples(index=False))]
        out += ["", header, text_table(["", *table.columns], body, align="l")]
        notes = part[["row", "note"]].dropna().drop_duplicates().itertuples(index=False)
        out += [f"  note: {row}: {note}" for row, note in notes]
        if not ref.empty and len(order) == 1:   # a headline of one row: where each model stands
            out += [f"  {line}" for line in standings(part, ref)]
    return "\n".join(out)


def standings(part: pd.DataFrame, ref: pd.DataFrame) -> list[str]:
    """Where each model's score of a one-row table stands among the paper's models, for the rows
    comparable to the paper only: a score the demo judge or a rule gave in place of the paper's
    judge is no rank among them."""
    comparable = [True] * len(part) if "comparable" not in part else \
        [True if pd.isna(value) else bool(value) for value in part["comparable"]]   # unknown: shown
    return [line for r, ok in zip(part.itertuples(), comparable, strict=True)
            if ok and (line := reference.standing(ref, r.row_label, r.model, r.score))]


def _published_column(part: pd.DataFrame, order: pd.Series, ref: pd.DataFrame) -> list[str]:
    """The published summary of each shown row (once per label: `reference.shown_once`)."""
    summary, labels = reference.summary(ref), dict(zip(part["row"], part["row_label"]))
    return [summary.get(label, "") if label else "" for label in reference.shown_once([labels[r] for r in order])]


def row_labels(frame: pd.DataFrame) -> pd.Series:
    """Each paper-table row's label, with its metric named where `row_label` names it."""
    metric = frame["metric"] if "metric" in frame else pd.Series(None, index=frame.index, dtype=object)
    return pd.Series([row_label(str(label), m) for label, m in zip(frame["row_label"], metric)], index=frame.index)


def grouped_notes(notes: Iterable[tuple[str, str]], everywhere: int | None = None) -> list[str]:
    """(where, note) pairs -> one line per distinct note, naming where it applies: a note that 11
    rows share is printed once, not 11 times. `everywhere`: how many places there are; a note on
    all of them says "every row"."""
    where: dict[str, list[str]] = {}
    for place, note in notes:
        if note and place not in where.setdefault(str(note), []):
            where[str(note)].append(place)
    return [f"{note} (every row)" if everywhere and len(places) == everywhere and everywhere > 1
            else f"{', '.join(places)}: {note}" for note, places in where.items()]


# ---- Markdown: the scores as the Dagster UI shows them --------------------------------------------

def scores_markdown(frame: pd.DataFrame, titles: dict[str, str], chart=None,
                    published: pd.DataFrame | None = None) -> str:
    """Paper-table rows (of `paper_tables`) as Markdown: per paper table and run setting a table
    with a row per paper row and a column per model, each cell the score x100, its 95% interval,
    scored/items and coverage (the cells `wenheng leaderboard` prints), and the papers' own models
    summed up (`published`: rows of `published_scores`); then, if given, `chart(rows, title)` of
    the paper table. Tables keep the order of `frame`."""
    if frame.empty:
        return "No scored items yet: materialize `warehouse` after a run."
    frame = frame.astype(object).where(frame.notna(), None)
    out = [f"_{KEY}; then the share of items scored_"]
    for (benchmark, _), table in frame.groupby(["benchmark", "table_name"], sort=False):
        title = f"{titles.get(benchmark, benchmark)} - {table['title'].iloc[0]}"
        for (split, setting, variant), part in table.groupby(["split", "setting", "variant"], sort=False,
                                                             dropna=False):
            if unscored(part):   # withheld answers, or nothing scored yet: one line, not empty cells
                out += ["", f"_{md(no_scores_text(no_scores(benchmark, title, split, setting, variant)))}_"]
                continue
            out += ["", f"**{md(title)}** (split {split}, setting {setting}, variant {variant})", ""]
            ref = reference.beside(published, benchmark, part["table_name"].iloc[0], setting)
            out += _markdown_table(part, ref, split, setting)
        if chart is not None:
            out += ["", chart(table, title)]
    return "\n".join(out)


def _markdown_table(part: pd.DataFrame, ref: pd.DataFrame, split: str, setting: str) -> list[str]:
    part = part.assign(row=row_labels(part),
                       cell=[f"{cell(r)}, {_percent(r['coverage'])}" for _, r in part.iterrows()])
    models = sorted(part["model"].unique())
    # as the report's pages show them: the row's chance level, and who scored its items; and the
    # papers' own models on the row
    order = part.drop_duplicates("row")["row"]
    shown = dict(zip(order, _published_column(part, order, ref))) if not ref.empty else None
    extra = [] if shown is None else ["published"]
    lines = ["| | " + " | ".join(md(m) for m in [*models, "chance", "scored by", *extra]) + " |",
             "|---" * (len(models) + 3 + len(extra)) + "|"]
    for row, cells in part.groupby("row", sort=False):
        by_model = dict(zip(cells["model"], cells["cell"]))
        chance = next((c for c in cells.get("chance", []) if not missing(c)), None)
        scorers = sorted({str(x) for x in cells.get("scored_by", []) if not missing(x) and x})
        chance_text = "-" if chance is None else f"{float(chance):.1f}"   # x100 already, as the score
        lines.append(f"| {md(row)} | " + " | ".join(by_model.get(m, "") for m in models)
                     + f" | {chance_text} | {md(', '.join(scorers) or '-')} |"
                     + ("" if shown is None else f" {md(shown[row])} |"))
    notes = grouped_notes(part[["row", "note"]].dropna().itertuples(index=False), part["row"].nunique())
    if shown is not None:
        notes.append(reference.note(ref, setting, split))
    return lines + [""] + [f"- note: {md(note)}" for note in notes]


def _percent(coverage) -> str:
    return "-" if coverage is None else f"{100 * float(coverage):.0f}%"


def md(text) -> str:
    """Text safe in a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")
