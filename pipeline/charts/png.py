"""PNG charts (the Dagster UI), drawn by matplotlib's object API on the Agg canvas: no pyplot, so
no global figure state and no display needed, and saved as a small palette PNG. matplotlib and
Pillow are imported only when a chart is drawn."""

from __future__ import annotations

import io
from collections.abc import Mapping

import pandas as pd

from pipeline.charts.colours import COLOURS, _style
from pipeline.charts.data import _row_tick_labels, _series_values, _x_label
from pipeline.charts.text import safe_label


def _png_chart(frame: pd.DataFrame, rows: list[str], series: list[str], model_of: Mapping[str, str],
               colours: Mapping[str, str] | None, left_out: list[str], title: str, families: tuple[str, ...],
               bar: float, height: float) -> bytes:
    """`paper_table_chart`'s PNG: a constrained-layout figure, its legend below the axes."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    with rc_context({"font.family": list(families), "font.size": 8,
                     "axes.spines.top": False, "axes.spines.right": False}):
        fig = Figure(figsize=(7.2, height), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        handles = []
        for k, name in enumerate(series):
            colour, hatch = _style(name, k, series, model_of, colours)
            handles.append(Patch(facecolor="white" if hatch else colour, edgecolor=colour, hatch=hatch,
                                 linewidth=0.8 if hatch else 0, label=safe_label(name)))
            _draw_series(ax, frame[frame["_series"] == name].set_index("_row"), k, rows, bar, colour, hatch)
        _label_axes(ax, frame, rows, left_out, title)
        fig.legend(handles=handles, loc="outside lower center", fontsize=7, frameon=False,
                   ncols=min(len(series), 4))
        return _png_bytes(fig)


def _draw_series(ax, part: pd.DataFrame, k: int, rows: list[str], bar: float, colour: str,
                 hatch: str | None) -> None:
    """Series k's bars and intervals (`part`: its rows, indexed by row name), "0" beside a bar of
    no width and "no score" where a row has none."""
    ys, xs, lo, hi, zeros, empty = _series_values(part, k, rows, bar)
    for pos in zeros:
        ax.text(1, pos, "0", va="center", fontsize=6, color="#333333")
    if ys:
        _bars(ax, ys, xs, lo, hi, bar * 0.92, colour, hatch)
    for pos in empty:
        ax.text(1, pos, "no score", va="center", fontsize=6, color="#666666")


def _label_axes(ax, frame: pd.DataFrame, rows: list[str], left_out: list[str], title: str) -> None:
    """Each row's label with its coverage, the score axis (naming the series left out) and the title."""
    ax.set_yticks(range(len(rows)), _row_tick_labels(frame, rows))
    ax.set_ylim(len(rows) - 0.5, -0.5)   # first row on top, no empty margin
    ax.set_xlim(0, 105)
    ax.set_xlabel(_x_label(left_out))
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(safe_label(title), fontsize=9, loc="left")


def _png_bytes(fig) -> bytes:
    """The figure as palette PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": "wenheng"})
    return _compact_png(buffer.getvalue())


def _bars(ax, ys: list[float], xs: list[float], lo: list[float], hi: list[float], thickness: float,
          colour: str, hatch: str | None = None) -> None:
    """One series' bars as one compound path and its error bars (with caps) as another: two SVG
    elements per model however many rows, where barh + errorbar write four per bar. Hatched bars
    are outlined and hatched in `colour` on white."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MplPath

    half, cap = thickness / 2, min(thickness / 2, 0.15)
    boxes, whiskers = [], []
    for y, x, low, high in zip(ys, xs, lo, hi):
        boxes += [(0, y - half), (x, y - half), (x, y + half), (0, y + half), (0, y - half)]
        a, b = x - low, x + high
        whiskers += [(a, y), (b, y), (a, y - cap), (a, y + cap), (b, y - cap), (b, y + cap)]
    box_codes = [MplPath.MOVETO, MplPath.LINETO, MplPath.LINETO, MplPath.LINETO, MplPath.CLOSEPOLY] * len(ys)
    if hatch:
        ax.add_patch(PathPatch(MplPath(boxes, box_codes), facecolor="white", edgecolor=colour, hatch=hatch,
                               linewidth=0.8))
    else:
        ax.add_patch(PathPatch(MplPath(boxes, box_codes), facecolor=colour, edgecolor="none", linewidth=0))
    ax.add_patch(PathPatch(MplPath(whiskers, [MplPath.MOVETO, MplPath.LINETO] * 3 * len(ys)), fill=False,
                           edgecolor="#333333", linewidth=0.8))


# Drawn flat, so kept exactly in the palette: every model colour, white, the whiskers' and the
# grid's greys, black text.
_EXACT = (*COLOURS, "#FFFFFF", "#333333", "#DDDDDD")
_PALETTE = 64


def _compact_png(png: bytes) -> bytes:
    """A palette PNG: the chart has a handful of flat colours plus anti-aliasing, so 64 colours look
    the same at a third of the size. The palette is the chart's own colours, then median-cut ones
    for the anti-aliased edges. PIL maps pixels to a given palette approximately, so a pixel drawn
    in one of the chart's own colours is then set to that entry: a model that draws few pixels
    keeps its colour exactly."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        rgb = image.convert("RGB")
    exact = [int(c[i:i + 2], 16) for c in _EXACT for i in (1, 3, 5)]
    cut = rgb.quantize(colors=_PALETTE - len(_EXACT), method=Image.Quantize.MEDIANCUT,
                       dither=Image.Dither.NONE).getpalette()[:3 * (_PALETTE - len(_EXACT))]
    entries = exact + cut
    palette = Image.new("P", (1, 1))
    palette.putpalette(entries + exact[:3] * (256 - len(entries) // 3))   # the rest: copies of the first
    indexed = rgb.quantize(palette=palette, dither=Image.Dither.NONE)
    pixels = np.asarray(rgb, dtype=np.uint32)
    packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    index = np.array(indexed, dtype=np.uint8)
    for k, colour in enumerate(_EXACT):
        index[packed == int(colour[1:], 16)] = k
    out_image = Image.fromarray(index, mode="P")
    out_image.putpalette(indexed.getpalette())
    out = io.BytesIO()
    out_image.save(out, format="PNG", optimize=True)
    return out.getvalue()
