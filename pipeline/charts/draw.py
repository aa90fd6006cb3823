"""`paper_table_chart`: one paper table's rows to a grouped bar chart, as SVG (written directly)
or PNG (drawn by matplotlib)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import pandas as pd

from pipeline.charts.data import _chart_frame
from pipeline.charts.png import _png_chart
from pipeline.charts.svg import _svg_chart
from pipeline.charts.text import fonts
from pipeline.rows import judge_hides_score


def paper_table_chart(frame: pd.DataFrame, title: str, fmt: Literal["png", "svg"] = "svg",
                      colours: Mapping[str, str] | None = None) -> bytes:
    """A grouped horizontal bar chart of one paper table: a group per row (task), a bar per model.

    `frame` has `paper_tables` columns: model, row_label, score (0-100), ci_low, ci_high, n_items,
    coverage, and optionally metric, row_order, capped, split/setting/variant. A series (model x
    split x setting x variant) with no score in any row (e.g. withheld answers) is not drawn, only
    named below the axis; a drawn series' row without a score shows "no score" instead of a bar
    (and when no series has a score, every series is drawn so), as does a row wholly judged where
    its judge is uninformative (`uninformative_share` 1: the tables show its J). `colours`: model -> colour, the
    same for every chart of a report (`model_colours`); None: a series gets the colour of its place."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"chart format must be 'png' or 'svg', not {fmt!r}")
    if frame.empty:
        raise ValueError("paper_table_chart: the frame has no rows")
    if "uninformative_share" in frame:   # a row its judge cannot stand behind: no bar (as the tables show its J)
        weak = frame["uninformative_share"].map(judge_hides_score).astype(bool)
        if weak.any():
            frame = frame.assign(**{c: frame[c].where(~weak) for c in ("score", "ci_low", "ci_high") if c in frame})
    frame, left_out = _chart_frame(frame)
    sort_keys = [c for c in ("row_order", "metric") if c in frame]
    rows = list(dict.fromkeys(frame.sort_values(sort_keys, kind="stable")["_row"] if sort_keys else frame["_row"]))
    series = sorted(frame["_series"].unique())
    model_of = dict(zip(frame["_series"], frame["_model"]))
    families, _ = fonts()
    bar = 0.8 / len(series)
    height = max(2.2, 0.9 + len(rows) * max(0.32, 0.2 * len(series)))
    draw = _svg_chart if fmt == "svg" else _png_chart
    return draw(frame, rows, series, model_of, colours, left_out, title, families, bar, height)
