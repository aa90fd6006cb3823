"""SVG charts (what the HTML reports inline), written directly.

The same chart as matplotlib draws it (sizes in points, as its SVG backend writes them), laid out
as its constrained layout lays the figure out: no figure, no layout engine, no text rendering (a
few milliseconds a chart, where drawing took a quarter of a second). Text widths (which only set
the left margin: labels are right-aligned to the axis) are the advances of the fonts the labels
use. Output is byte-for-byte deterministic (fixed ids), and text stays text: small, and selectable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from pipeline.charts.colours import _style
from pipeline.charts.data import _row_tick_labels, _series_values, _x_label
from pipeline.charts.text import _text_width, safe_label, save_fonts

_PAD = 3.0            # around the figure (constrained layout's pad)
_TICK = 3.5           # tick length and the gap from tick to label
_TITLE_BASELINE = 10.9
_TITLE_GAP = 6.0      # title baseline to the axes' top
_LINE = 9.0           # line spacing of 8 pt labels
_LEGEND_LINE = 10.5   # between legend rows (7 pt)

Style = tuple[str, str | None]   # a series' (colour, hatch)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _f(x: float) -> str:
    return f"{x:.1f}"


def _hatch_pattern(pid: str, hatch: str, colour: str) -> str:
    """An SVG pattern drawing a matplotlib hatch (/ \\ x + . o) in `colour` on white."""
    size = 72 / (6 * max(1, len(hatch)))   # matplotlib: 6 lines per inch per hatch character
    lines = []
    kinds = set(hatch)
    if kinds & {"/", "x"}:
        lines.append(f"M 0 {_f(size)} L {_f(size)} 0 M -1 1 L 1 -1 M {_f(size - 1)} {_f(size + 1)} "
                     f"L {_f(size + 1)} {_f(size - 1)}")
    if kinds & {"\\", "x"}:
        lines.append(f"M 0 0 L {_f(size)} {_f(size)} M -1 {_f(size - 1)} L 1 {_f(size + 1)} "
                     f"M {_f(size - 1)} -1 L {_f(size + 1)} 1")
    if "+" in kinds:
        lines.append(f"M {_f(size / 2)} 0 V {_f(size)} M 0 {_f(size / 2)} H {_f(size)}")
    shapes = "".join(f'<path d="{d}" style="fill: none; stroke: {colour}; stroke-width: 1.0"/>' for d in lines)
    if kinds & {".", "o"}:
        radius = 0.5 if "." in kinds else 0.9
        fill = colour if "." in kinds else "none"
        shapes += (f'<circle cx="{_f(size / 2)}" cy="{_f(size / 2)}" r="{radius}" '
                   f'style="fill: {fill}; stroke: {colour}; stroke-width: 1.0"/>')
    return (f'<pattern id="{pid}" patternUnits="userSpaceOnUse" x="0" y="0" width="{_f(size)}" '
            f'height="{_f(size)}"><rect x="0" y="0" width="{_f(size + 1)}" height="{_f(size + 1)}" '
            f'style="fill: #ffffff"/>{shapes}</pattern>')


def _fill(k: int, colour: str, hatch: str | None) -> str:
    """The style of series k's bars and legend patch: its colour, or its hatch outlined in it."""
    return f"fill: url(#hatch{k}); stroke: {colour}; stroke-width: 0.8" if hatch else f"fill: {colour}"


# ---- layout -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Legend:
    """The legend: up to 4 columns, centred at the bottom."""
    ncols: int
    nrows: int
    column_width: list[float]
    width: float
    last_baseline: float
    top: float


@dataclass(frozen=True)
class _Layout:
    """The figure's size, the axes' box (labels to the left, the score axis and its label below, the
    title above) and the legend, in points."""
    width: float
    height: float
    font: str
    left: float
    right: float
    top: float
    bottom: float
    n_rows: int
    tick_labels: list[str]
    xlabel: list[str]
    legend: _Legend

    def sx(self, x: float) -> float:
        return self.left + x / 105 * (self.right - self.left)

    def sy(self, y: float) -> float:
        return self.top + (y + 0.5) / self.n_rows * (self.bottom - self.top)


def _legend_layout(labels: list[str], height_pt: float) -> _Legend:
    ncols = min(len(labels), 4)
    nrows = math.ceil(len(labels) / ncols)
    column_width = [max(_text_width(labels[k], 7) for k in range(c, len(labels), ncols)) for c in range(ncols)]
    legend_width = sum(14 + 5.6 + w for w in column_width) + 14 * (ncols - 1)
    last_baseline = height_pt - _PAD - 4.2
    legend_top = last_baseline - (nrows - 1) * _LEGEND_LINE - 9.6
    return _Legend(ncols, nrows, column_width, legend_width, last_baseline, legend_top)


def _layout(frame: pd.DataFrame, rows: list[str], labels: list[str], left_out: list[str],
            families: tuple[str, ...], height: float) -> _Layout:
    width_pt, height_pt = 7.2 * 72, height * 72
    legend = _legend_layout(labels, height_pt)
    tick_labels = _row_tick_labels(frame, rows)
    xlabel = _x_label(left_out).split("\n")
    label_width = max(_text_width(line, 8) for label in tick_labels for line in label.split("\n"))
    left = _PAD + label_width + 2 * _TICK
    bottom = legend.top - 6.4 - 8.8 * (len(xlabel) - 1) - 12.0 - 14.1
    return _Layout(width=width_pt, height=height_pt, font="font-family: " + ", ".join(f"'{f}'" for f in families),
                   left=left, right=width_pt - _PAD, top=_TITLE_BASELINE + _TITLE_GAP, bottom=bottom,
                   n_rows=len(rows), tick_labels=tick_labels, xlabel=xlabel, legend=legend)


# ---- the parts of the figure, in drawing order ----------------------------------------------------

def _svg_head(lay: _Layout, styles: list[Style]) -> list[str]:
    """The svg element, the hatch patterns, the white background and the score grid."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(lay.width)}pt" height="{_f(lay.height)}pt" '
           f'viewBox="0 0 {_f(lay.width)} {_f(lay.height)}" version="1.1">',
           '<defs><style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>']
    out += [_hatch_pattern(f"hatch{k}", hatch, colour) for k, (colour, hatch) in enumerate(styles) if hatch]
    out.append("</defs>")
    out.append(f'<rect x="0" y="0" width="{_f(lay.width)}" height="{_f(lay.height)}" style="fill: #ffffff"/>')
    grid = " ".join(f"M {_f(lay.sx(x))} {_f(lay.top)} V {_f(lay.bottom)}" for x in range(0, 101, 20))
    out.append(f'<path d="{grid}" style="fill: none; stroke: #dddddd; stroke-width: 0.6; '
               'stroke-linecap: square"/>')
    return out


def _svg_bars(lay: _Layout, values: tuple, bar: float, k: int, style: Style) -> list[str]:
    """Series k's bars (one path) and their intervals with caps (another)."""
    ys, xs, lo, hi, _, _ = values
    if not ys:
        return []
    colour, hatch = style
    sx, sy = lay.sx, lay.sy
    half = bar * 0.92 / 2
    cap = min(half, 0.15)
    boxes = " ".join(f"M {_f(sx(0))} {_f(sy(y - half))} H {_f(sx(x))} V {_f(sy(y + half))} "
                     f"H {_f(sx(0))} z" for y, x in zip(ys, xs))
    whiskers = []
    for y, x, low, high in zip(ys, xs, lo, hi):
        a, b = sx(x - low), sx(x + high)
        whiskers.append(f"M {_f(a)} {_f(sy(y))} H {_f(b)} M {_f(a)} {_f(sy(y - cap))} V {_f(sy(y + cap))} "
                        f"M {_f(b)} {_f(sy(y - cap))} V {_f(sy(y + cap))}")
    return [f'<path d="{boxes}" style="{_fill(k, colour, hatch)}"/>',
            f'<path d="{" ".join(whiskers)}" style="fill: none; stroke: #333333; stroke-width: 0.8; '
            'stroke-linejoin: miter"/>']


def _svg_notes(lay: _Layout, notes: list[tuple[float, str, str]]) -> list[str]:
    """(position, text, colour) notes beside the bars: "0" by a bar of no width, "no score"."""
    return [f'<text x="{_f(lay.sx(1))}" y="{_f(lay.sy(pos) + 2.1)}" style="font-size: 6px; {lay.font}; '
            f'fill: {colour}">{_esc(text)}</text>' for pos, text, colour in notes]


def _svg_axes(lay: _Layout) -> list[str]:
    """The ticks, the left and bottom spines, the score ticks' numbers and the score axis' label."""
    ticks = " ".join(f"M {_f(lay.sx(x))} {_f(lay.bottom)} v {_TICK}" for x in range(0, 101, 20))
    ticks += " " + " ".join(f"M {_f(lay.left)} {_f(lay.sy(y))} h -{_TICK}" for y in range(lay.n_rows))
    out = [f'<path d="{ticks}" style="fill: none; stroke: #000000; stroke-width: 0.8"/>',
           f'<path d="M {_f(lay.left)} {_f(lay.top)} V {_f(lay.bottom)} H {_f(lay.right)}" style="fill: none; '
           'stroke: #000000; stroke-width: 0.8; stroke-linejoin: miter; stroke-linecap: square"/>']
    for x in range(0, 101, 20):
        out.append(f'<text x="{_f(lay.sx(x))}" y="{_f(lay.bottom + 14.1)}" style="font-size: 8px; {lay.font}; '
                   f'text-anchor: middle">{x}</text>')
    centre = (lay.left + lay.right) / 2
    for n, line in enumerate(lay.xlabel):
        out.append(f'<text x="{_f(centre)}" y="{_f(lay.bottom + 26.1 + 8.8 * n)}" style="font-size: 8px; '
                   f'{lay.font}; text-anchor: middle">{_esc(line)}</text>')
    return out


def _svg_labels(lay: _Layout, title: str) -> list[str]:
    """Each row's label (right-aligned to the axis, its lines centred on the row) and the title."""
    out = []
    for y, label in enumerate(lay.tick_labels):
        lines = label.split("\n")
        first = lay.sy(y) + 3.5 - 4.5 * (len(lines) - 1)
        for n, line in enumerate(lines):
            out.append(f'<text x="{_f(lay.left - 2 * _TICK)}" y="{_f(first + _LINE * n)}" style="font-size: 8px; '
                       f'{lay.font}; text-anchor: end">{_esc(line)}</text>')
    out.append(f'<text x="{_f(lay.left)}" y="{_TITLE_BASELINE}" style="font-size: 9px; {lay.font}">'
               f'{_esc(safe_label(title))}</text>')
    return out


def _svg_legend(lay: _Layout, labels: list[str], styles: list[Style]) -> list[str]:
    """A patch and a label per series, row by row, the last row at the bottom."""
    legend = lay.legend
    x0 = lay.width / 2 - legend.width / 2
    starts = [x0 + sum(14 + 5.6 + w + 14 for w in legend.column_width[:c]) for c in range(legend.ncols)]
    out = []
    for k, label in enumerate(labels):
        colour, hatch = styles[k]
        baseline = legend.last_baseline - (legend.nrows - 1 - k // legend.ncols) * _LEGEND_LINE
        x = starts[k % legend.ncols]
        out.append(f'<rect x="{_f(x)}" y="{_f(baseline - 5.2)}" width="14.0" height="4.9" '
                   f'style="{_fill(k, colour, hatch)}"/>')
        out.append(f'<text x="{_f(x + 19.6)}" y="{_f(baseline)}" style="font-size: 7px; {lay.font}">'
                   f'{_esc(label)}</text>')
    return out


def _svg_chart(frame: pd.DataFrame, rows: list[str], series: list[str], model_of: Mapping[str, str],
               colours: Mapping[str, str] | None, left_out: list[str], title: str, families: tuple[str, ...],
               bar: float, height: float) -> bytes:
    """`paper_table_chart`'s SVG: the figure matplotlib's constrained layout gives, written as SVG."""
    styles = [_style(name, k, series, model_of, colours) for k, name in enumerate(series)]
    labels = [safe_label(name) for name in series]
    lay = _layout(frame, rows, labels, left_out, families, height)
    out = _svg_head(lay, styles)
    notes = []
    for k, name in enumerate(series):
        values = _series_values(frame[frame["_series"] == name].set_index("_row"), k, rows, bar)
        out += _svg_bars(lay, values, bar, k, styles[k])
        zeros, empty = values[4], values[5]
        notes += [(pos, "0", "#333333") for pos in zeros] + [(pos, "no score", "#666666") for pos in empty]
    out += _svg_notes(lay, notes)
    out += _svg_axes(lay)
    out += _svg_labels(lay, title)
    out += _svg_legend(lay, labels, styles)
    out.append("</svg>\n")
    save_fonts()   # the advances measured for this chart, for the next process
    return ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + "\n".join(out)).encode("utf-8")
