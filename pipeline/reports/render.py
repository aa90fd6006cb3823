"""Report files from paper-table rows: Markdown, CSV, HTML pages (Jinja2, autoescaped) and the
sample browser. Everything a page needs is inside it: CSS, SVG charts and the browser's data."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from pipeline.benchmarks import cards
from pipeline.charts import paper_table_chart
from pipeline.reports import published as reference
from pipeline.reports.text import KEY, grouped_notes, marks, no_scores, unscored
from pipeline.rows import judge_hides_score, judge_j_text
from pipeline.rows import missing as _missing
from pipeline.rows import row_label as _row_label

TEMPLATES = Path(__file__).parent / "templates"
GROUP_KEYS = ["split", "setting", "variant"]


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def stylesheet() -> Markup:
    """The pages' CSS (our own file: inlined as it is, never HTML-escaped inside <style>)."""
    return Markup((TEMPLATES / "style.css").read_text(encoding="utf-8"))


def _num(x: Any) -> str:
    return "–" if _missing(x) else f"{float(x):.1f}"


def cell(r: Any) -> dict[str, Any]:
    """One model's number in a row: value, interval, n scored / asked, coverage."""
    ci = "" if _missing(r.ci_low) else f"[{_num(r.ci_low)}, {_num(r.ci_high)}]"
    coverage = "–" if _missing(r.coverage) else f"{100 * float(r.coverage):.0f}%"
    share = getattr(r, "uninformative_share", None)
    judge = judge_j_text(share, getattr(r, "judge_j", None))
    value = _num(r.score)
    if judge_hides_score(share):   # a number the judge cannot stand behind: its J instead
        value, ci = "", ""
    return {"value": value, "judge": judge or "", "ci": ci, "n_scored": int(r.n_scored or 0),
            "n_items": int(r.n_items or 0),
            "coverage": coverage, "capped": bool(r.capped), "marks": marks(r),
            "scored_by": getattr(r, "scored_by", None) or ""}


def groups(part: pd.DataFrame, published: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """A table's rows per run setting (split x setting x variant): rows x models, with notes. A run
    setting in which no model has a scored item has `empty` (`pipeline.reports.text.no_scores`: one line
    saying why, e.g. withheld answers) and no rows; the others have `empty` None, and `published`:
    the papers' own models on the rows (`published_scores` rows; None where there are none)."""
    out = []
    for keys, g in part.groupby(GROUP_KEYS, sort=False, dropna=False):
        if unscored(g):
            name = str(g["benchmark"].iloc[0]) if "benchmark" in g else ""
            title = getattr(cards().get(name), "title", name)
            out.append({**dict(zip(GROUP_KEYS, keys)), "title": g["title"].iloc[0], "models": [], "rows": [],
                        "notes": [], "empty": no_scores(name, title, *keys)})
            continue
        models = sorted(g["model"].unique())
        labels = list(dict.fromkeys(_row_label(r.row_label, r.metric) for r in g.itertuples(index=False)))
        cells = {(_row_label(r.row_label, r.metric), r.model): cell(r) for r in g.itertuples(index=False)}
        # a row's chance level is the same for every model (its items' options): the first one given
        chance = {}
        for r in g.itertuples(index=False):
            chance.setdefault(_row_label(r.row_label, r.metric), getattr(r, "chance", None))
        notes = grouped_notes(((f"{_row_label(r.row_label, r.metric)} ({r.model})", r.note)
                               for r in g.itertuples(index=False)), len(g))
        out.append({**dict(zip(GROUP_KEYS, keys)), "title": g["title"].iloc[0], "models": models,
                    "rows": [{"label": label, "cells": [cells.get((label, m)) for m in models],
                              "chance": "" if _missing(chance.get(label)) else _num(chance.get(label))}
                             for label in labels],
                    "chance": any(not _missing(v) for v in chance.values()),
                    "notes": notes, "empty": None, "published": _published(g, labels, published, keys)})
    return out


def _published(g: pd.DataFrame, labels: list[str], published: pd.DataFrame | None, keys) -> dict | None:
    """The published models of a group's rows: per shown row (the first of its label) their
    summary and each model's number, greyed on the page; None where the paper has none."""
    split, setting, _ = keys
    ref = reference.beside(published, str(g["benchmark"].iloc[0]), str(g["table_name"].iloc[0]), setting)
    if ref.empty:
        return None
    raw = {_row_label(r.row_label, r.metric): r.row_label for r in g.itertuples(index=False)}
    summary, models = reference.summary(ref), list(dict.fromkeys(ref["model"]))
    values = {(r.row_label, r.model): _num(r.score) for r in ref.itertuples(index=False)}
    rows = [{"label": label, "summary": summary.get(first, "") if first else "",
             "numbers": [values.get((first, m), "") if first else "" for m in models]}
            for label, first in zip(labels, reference.shown_once([raw[label] for label in labels]))]
    return {"label": reference.source_label(ref, setting, split), "note": reference.note(ref, setting, split),
            "models": models, "rows": rows}


def inline_svg(svg: bytes, prefix: str) -> Markup:
    """A chart's SVG for inlining in a page: the XML prolog dropped and its ids prefixed, so two
    charts on one page never share a clip-path id."""
    text = svg.decode("utf-8")
    text = text[text.index("<svg"):]
    ids = set(re.findall(r'\bid="([^"]+)"', text))
    if ids:
        pattern = re.compile(r'(\bid="|#)(' + "|".join(map(re.escape, sorted(ids, key=len, reverse=True))) + r')\b')
        text = pattern.sub(lambda m: f"{m[1]}{prefix}-{m[2]}", text)
    return Markup(text)   # matplotlib's own SVG: every label in it is XML-escaped


def markdown(bench: Any, tables: list[dict[str, Any]]) -> str:
    def esc(text: Any) -> str:
        # backslash escapes (CommonMark): no cell can end the table, start inline HTML or code
        return re.sub(r"([\\|<>&`])", r"\\\1", str(text)).replace("\n", " ")

    out = [f"# {bench.title}", "", f"{bench.paper}", "", KEY + "; coverage = scored / items", ""]
    for table in tables:
        out += [f"## {esc(table['title'])} (`{bench.name}_{table['name']}`)", ""]
        for g in table["groups"]:
            if g["empty"]:   # one line; the command stays code (a card's name: nothing to escape)
                line = g["empty"]
                out += [f"{esc(line['head'])}: {esc(line['why'])}"
                        + (f" (`{line['command']}`)" if line["command"] else ""), ""]
                continue
            out += [f"split {g['split']} · setting {g['setting']} · variant {g['variant']}", ""]
            pub = g.get("published")
            out.append("| row | " + " | ".join(esc(m) for m in g["models"]) + (" | published |" if pub else " |"))
            out.append("| --- |" + " ---: |" * (len(g["models"]) + bool(pub)))
            for i, row in enumerate(g["rows"]):
                shown = []
                for c in row["cells"]:
                    shown.append("" if c is None else
                                 f"{c['value']}{c['marks']} {c['ci']} "
                                 f"{c['n_scored']}/{c['n_items']} ({c['coverage']})".replace("  ", " "))
                if pub:
                    shown.append(pub["rows"][i]["summary"])
                out.append(f"| {esc(row['label'])} | " + " | ".join(esc(s) for s in shown) + " |")
            out.append("")
            notes = g["notes"] + ([pub["note"]] if pub else [])
            out += [f"- note: {esc(n)}" for n in notes] + ([""] if notes else [])
    out.append(f"Every row: `{bench.name}.csv`. Charts and samples: `{bench.name}.html`, `samples.html`.")
    return "\n".join(out) + "\n"


def benchmark_tables(bench: Any, rows: pd.DataFrame, charts: bool = True,
                     colours: dict[str, str] | None = None,
                     published: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """A benchmark's paper tables: title, chart (SVG; none for a table without a single score) and
    `groups`. `colours`: model -> colour for every chart of the report (`charts.model_colours` of
    all its models), so a model has one colour on every page. `published`: the papers' own rows."""
    out = []
    for name, part in rows.groupby("table_name", sort=False):
        title = part["title"].iloc[0]
        chart = None
        if charts and any(not _missing(x) for x in part["score"]):
            drawn, drawn_colours = reference.with_published(part, published, colours)
            chart = inline_svg(paper_table_chart(drawn, f"{bench.title} - {title}", "svg", drawn_colours),
                               f"{bench.name}-{name}")
        out.append({"name": name, "title": title, "chart": chart, "groups": groups(part, published)})
    return out


def json_for_script(data: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no `<`, `>` or `&` survive, so no text in
    the data can close the element or open a comment (they are JSON string escapes, read back by JSON.parse)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
