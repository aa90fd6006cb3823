"""Charts of paper tables: one grouped bar chart per table, for the HTML reports and the Dagster UI.

`paper_table_chart(frame, title, fmt, colours)` takes rows of `paper_tables` (one table: its rows x
models) and returns PNG or SVG bytes: one bar per model and row, the score (0-100, as `paper_tables`
stores it) with its 95% bootstrap interval as an error bar, and each row's n and coverage in its
label. A series (model x split x setting x variant) with no score in any row (withheld answers) is
not drawn; the chart names it under its title. `colours` (`model_colours` of every model of a
report) gives a model the same colour in every chart; a model's second and further series in one
chart (other settings) are hatched in its colour.

SVG (what the HTML reports inline) is written directly (`svg`), laid out as matplotlib's constrained
layout lays the figure out (a few milliseconds a chart, where drawing took a quarter of a second);
PNG (the Dagster UI) is drawn by matplotlib's object API on the Agg canvas (`png`: no pyplot, so no
global figure state and no display needed). Output is byte-for-byte deterministic: fixed SVG ids,
no dates in the metadata. SVG text stays text: small, and selectable.

Labels must not turn into tofu boxes (`text`): characters no installed font can draw (CJK on a
machine without a CJK font) are written as ASCII instead (accents dropped, other characters as
\\uXXXX); the HTML tables beside the chart keep the real names. Which fonts draw the labels, what
they cover and the characters' widths come from matplotlib once, then from `fonts.json` in the
cache folder, so an SVG is written without importing matplotlib.

Drawing a PNG costs a quarter of a second a chart (and matplotlib's import half a second), while a
publish usually leaves most tables as they were: `cached_chart` (`cache`) keeps each chart in a
content-addressed folder, `<sha256 of what is drawn>.<fmt>`, and draws only a table whose chart is
not there. What is drawn: the columns of the rows the chart reads, in their order, the title and
the format and the models' colours; and how: this package's source, the matplotlib and Pillow
versions and matplotlib's font list (which fonts draw the labels). matplotlib is imported only when
a chart is drawn.
"""

from pipeline.charts.cache import CACHE_DAYS, DRAWN_COLUMNS, cached_chart, chart_key
from pipeline.charts.colours import COLOURS, HATCHES, model_colours
from pipeline.charts.data import MAX_LABEL, MAX_NOTE
from pipeline.charts.draw import paper_table_chart
from pipeline.charts.text import BASE_FAMILY, CJK_FAMILIES, cjk_font, fonts, safe_label

__all__ = ["BASE_FAMILY", "CACHE_DAYS", "CJK_FAMILIES", "COLOURS", "DRAWN_COLUMNS", "HATCHES", "MAX_LABEL",
           "MAX_NOTE", "cached_chart", "chart_key", "cjk_font", "fonts", "model_colours",
           "paper_table_chart", "safe_label"]
