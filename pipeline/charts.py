"""Charts of paper tables: one grouped bar chart per table, for the HTML reports and the Dagster UI.

`paper_table_chart(frame, title, fmt, colours)` takes rows of `paper_tables` (one table: its rows x
models) and returns PNG or SVG bytes: one bar per model and row, the score (0-100, as `paper_tables`
stores it) with its 95% bootstrap interval as an error bar, and each row's n and coverage in its
label. A series (model x split x setting x variant) with no score in any row (withheld answers) is
not drawn; the chart names it under its title. `colours` (`model_colours` of every model of a
report) gives a model the same colour in every chart; a model's second and further series in one
chart (other settings) are hatched in its colour.

SVG (what the HTML reports inline) is written directly, laid out as matplotlib's constrained layout
lays the figure out (a few milliseconds a chart, where drawing took a quarter of a second); PNG
(the Dagster UI) is drawn by matplotlib's object API on the Agg canvas (no pyplot, so no global
figure state and no display needed). Output is byte-for-byte deterministic: fixed SVG ids, no
dates in the metadata. SVG text stays text: small, and selectable.

Labels must not turn into tofu boxes: characters no installed font can draw (CJK on a machine
without a CJK font) are written as ASCII instead (accents dropped, other characters as \\uXXXX);
the HTML tables beside the chart keep the real names.

Drawing a PNG costs a quarter of a second a chart (and matplotlib's import half a second), while a
publish usually leaves most tables as they were: `cached_chart` keeps each chart in a
content-addressed folder, `<sha256 of what is drawn>.<fmt>`, and draws only a table whose chart is
not there. What is drawn: the columns of the rows the chart reads, in their order, the title and
the format and the models' colours; and how: this module's source, the matplotlib and Pillow versions and matplotlib's
font list (which fonts draw the labels). matplotlib is imported only when a chart is drawn.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import time
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Literal

import pandas as pd

# Fonts that draw CJK, most complete first; whichever is installed is put ahead of DejaVu Sans.
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK JP", "Source Han Sans SC",
                "Source Han Sans CN", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "AR PL UMing CN",
                "AR PL UKai CN", "Droid Sans Fallback", "Noto Sans SC", "Noto Serif CJK SC")
BASE_FAMILY = "DejaVu Sans"
SHOWN_METRICS = {"corpus_bleu": "BLEU", "corpus_chrf": "chrF", "micro_f1": "micro-F1"}
# Colour-blind-safe (Okabe-Ito). With `model_colours`, a model keeps its colour across a report's
# charts; without, a series gets the colour of its position in its chart.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
# A model's further series in one chart (another split, setting or variant): hatched in its colour.
HATCHES = ("////", "....", "xxxx", "\\\\\\\\", "++++", "oo")
MAX_LABEL = 42
MAX_NOTE = 110


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """One colour per model for every chart of a report: the models sorted, each given the Okabe-Ito
    colour of its place (repeating after eight)."""
    return {model: COLOURS[k % len(COLOURS)] for k, model in enumerate(sorted({str(m) for m in models}))}


@lru_cache(maxsize=1)
def fonts() -> tuple[tuple[str, ...], frozenset[int]]:
    """(font families to use, the code points they can draw between them)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    installed = {f.name: f.fname for f in font_manager.fontManager.ttflist}
    families = [name for name in CJK_FAMILIES if name in installed][:1] + [BASE_FAMILY]
    covered: set[int] = set()
    for name in families:
        path = installed.get(name) or font_manager.findfont(name)
        try:
            covered |= set(FT2Font(path).get_charmap())
        except (OSError, RuntimeError):   # an unreadable font file draws nothing
            continue
    return tuple(families), frozenset(covered)


def cjk_font() -> str | None:
    """The CJK font the charts use, or None (labels with CJK are then written in ASCII)."""
    families, _ = fonts()
    return families[0] if len(families) > 1 else None


def safe_label(text: str) -> str:
    """`text` if the chart's fonts can draw every character, else an ASCII spelling of it."""
    _, covered = fonts()
    if all(ord(ch) in covered or ch.isspace() for ch in text):
        return text
    out = []
    for ch in text:
        if ord(ch) in covered or ch.isspace():
            out.append(ch)
            continue
        base = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
        out.append(base if base else f"\\u{ord(ch):04x}")
    return "".join(out)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _clip(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _series_names(frame: pd.DataFrame) -> pd.Series:
    """One bar series per model; split/setting/variant join the name only where they vary."""
    varying = [c for c in ("split", "setting", "variant") if c in frame and frame[c].nunique(dropna=False) > 1]
    names = frame["model"].astype(str)
    for column in varying:
        names = names + " · " + frame[column].astype(str)
    if "capped" in frame:
        capped = pd.Series([False if pd.isna(c) else bool(c) for c in frame["capped"]], index=frame.index)
        names = names.where(~capped, names + "*")
    return names


def _row_names(frame: pd.DataFrame) -> pd.Series:
    metric = frame["metric"] if "metric" in frame else pd.Series("", index=frame.index)
    suffix = metric.map(lambda m: f" ({SHOWN_METRICS[m]})" if m in SHOWN_METRICS else "")
    return frame["row_label"].astype(str) + suffix


def _coverage_text(part: pd.DataFrame) -> str:
    n_items = part["n_items"].dropna()
    n = int(n_items.max()) if len(n_items) else 0
    cov = part["coverage"].dropna()
    if cov.empty:
        return f"n={n}"
    low, high = cov.min() * 100, cov.max() * 100
    shown = f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}-{high:.0f}%"
    return f"n={n}, cov {shown}"


# ---- the cache of drawn charts -----------------------------------------------------------------

# The `paper_tables` columns a chart reads (whichever the frame has): the key of a cached chart.
DRAWN_COLUMNS = ("model", "split", "setting", "variant", "capped", "row_label", "metric", "row_order", "score",
                 "value", "ci_low", "ci_high", "n_items", "coverage")
# A cached chart not used for this long is removed when another is written.
CACHE_DAYS = 30


def cached_chart(frame: pd.DataFrame, title: str, fmt: Literal["png", "svg"], cache_dir: Path | None,
                 colours: Mapping[str, str] | None = None) -> bytes:
    """`paper_table_chart(frame, title, fmt, colours)`, from `cache_dir` when the same chart was
    drawn before (None: always drawn). A cache that cannot be written is skipped, not an error."""
    draw = (frame, title, fmt) if colours is None else (frame, title, fmt, colours)
    if cache_dir is None:
        return paper_table_chart(*draw)
    path = Path(cache_dir) / f"{chart_key(frame, title, fmt, colours)}.{fmt}"
    try:
        data = path.read_bytes()
        os.utime(path)   # used: kept by _prune
        return data
    except OSError:
        pass
    data = paper_table_chart(*draw)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)   # whole or absent: a concurrent reader never sees half a chart
        _prune(path.parent)
    except OSError:
        pass
    return data


def chart_key(frame: pd.DataFrame, title: str, fmt: str, colours: Mapping[str, str] | None = None) -> str:
    """sha256 of what the chart shows (the title, the format, the colours of its models and the
    rows' drawn columns: a set, as the chart orders rows and bars itself, and a query's order of
    equal keys may vary) and of how it is drawn (this module, the libraries, the fonts)."""
    columns = [column for column in DRAWN_COLUMNS if column in frame]
    rows = sorted(json.dumps(row, ensure_ascii=False, default=_json_value)
                  for row in zip(*(frame[column].tolist() for column in columns)))
    drawn_colours = None if colours is None else sorted(
        (model, colours.get(model)) for model in {str(m) for m in frame["model"]})
    text = json.dumps([_drawing(), _font_list(), fmt, title, columns, rows, drawn_colours], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _json_value(value):
    return value.item() if hasattr(value, "item") else str(value)   # numpy scalars, pd.NA


@lru_cache(maxsize=1)
def _drawing() -> list[str]:
    """This module's source and the versions of the libraries that draw and compress."""
    versions = []
    for dist in ("matplotlib", "pillow"):
        try:
            versions.append(metadata.version(dist))
        except metadata.PackageNotFoundError:
            versions.append("-")
    return [hashlib.sha256(Path(__file__).read_bytes()).hexdigest(), *versions]


@lru_cache(maxsize=1)
def _font_list() -> list:
    """matplotlib's font cache files (name, size, mtime): the fonts it draws with are read from
    them, so a font it newly finds changes the key. Looked up where matplotlib keeps them, without
    importing it."""
    home = Path.home()
    for folder in (os.environ.get("MPLCONFIGDIR"),
                   os.environ.get("XDG_CACHE_HOME") and Path(os.environ["XDG_CACHE_HOME"]) / "matplotlib",
                   home / ".cache" / "matplotlib", home / ".matplotlib"):
        if folder and Path(folder).is_dir():
            found = []
            for f in sorted(Path(folder).glob("fontlist-*.json")):
                st = f.stat()
                found.append([f.name, st.st_size, st.st_mtime_ns])
            if found:
                return found
    return []


def _prune(cache_dir: Path) -> None:
    """Remove the charts not used for CACHE_DAYS (and temporary files left by a crash)."""
    cutoff = time.time() - CACHE_DAYS * 86400
    for f in cache_dir.iterdir():
        try:
            if f.stat().st_mtime < cutoff:
                f.unlink()
        except OSError:   # removed meanwhile by another publish
            continue


# ---- drawing ------------------------------------------------------------------------------------

def paper_table_chart(frame: pd.DataFrame, title: str, fmt: Literal["png", "svg"] = "svg",
                      colours: Mapping[str, str] | None = None) -> bytes:
    """A grouped horizontal bar chart of one paper table: a group per row (task), a bar per model.

    `frame` has `paper_tables` columns: model, row_label, score (0-100), ci_low, ci_high, n_items,
    coverage, and optionally metric, row_order, capped, split/setting/variant. A series (model x
    split x setting x variant) with no score in any row (e.g. withheld answers) is not drawn, only
    named below the axis; a drawn series' row without a score shows "no score" instead of a bar
    (and when no series has a score, every series is drawn so). `colours`: model -> colour, the
    same for every chart of a report (`model_colours`); None: a series gets the colour of its place."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"chart format must be 'png' or 'svg', not {fmt!r}")
    if frame.empty:
        raise ValueError("paper_table_chart: the frame has no rows")
    frame, left_out = _chart_frame(frame)
    sort_keys = [c for c in ("row_order", "metric") if c in frame]
    rows = list(dict.fromkeys(frame.sort_values(sort_keys, kind="stable")["_row"] if sort_keys else frame["_row"]))
    series = sorted(frame["_series"].unique())
    model_of = dict(zip(frame["_series"], frame["_model"]))
    families, _ = fonts()
    bar = 0.8 / len(series)
    height = max(2.2, 0.9 + len(rows) * max(0.32, 0.2 * len(series)))
    if fmt == "svg":
        return _svg_chart(frame, rows, series, model_of, colours, left_out, title, families, bar, height)
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    with rc_context({"font.family": list(families), "font.size": 8, "svg.hashsalt": "wenheng",
                     "svg.fonttype": "none", "axes.spines.top": False, "axes.spines.right": False}):
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
        return _encoded(fig, fmt)


def _chart_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows to draw, with their series, row and model names (`_series`, `_row`, `_model`), and
    the series left out: those with no score in any row (withheld answers), when some series has one."""
    if "score" not in frame and "value" in frame:
        frame = frame.rename(columns={"value": "score"})
    frame = frame.assign(_series=_series_names(frame), _row=_row_names(frame), _model=frame["model"].astype(str))
    scored = frame["score"].map(lambda x: not _missing(x))
    with_scores = set(frame.loc[scored, "_series"])
    left_out = sorted(set(frame["_series"]) - with_scores) if with_scores else []
    if left_out:   # series with no score anywhere (withheld answers): named, not drawn
        frame = frame[frame["_series"].isin(with_scores)]
    return frame, left_out


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


def _series_values(part: pd.DataFrame, k: int, rows: list[str], bar: float):
    """Series k's (bar positions, scores, interval below, interval above, positions of zero bars,
    positions of rows without a score)."""
    ys, xs, lo, hi, zeros, empty = [], [], [], [], [], []
    for y, row in enumerate(rows):
        pos = y - 0.4 + bar * (k + 0.5)
        if row not in part.index:
            continue
        r = part.loc[row]
        r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
        if _missing(r["score"]):
            empty.append(pos)
            continue
        score = float(r["score"])
        if score == 0:   # a bar of no width: say it is a zero, not a gap
            zeros.append(pos)
        ys.append(pos)
        xs.append(score)
        low = score if _missing(r.get("ci_low")) else float(r["ci_low"])
        high = score if _missing(r.get("ci_high")) else float(r["ci_high"])
        lo.append(max(0.0, score - low))
        hi.append(max(0.0, high - score))
    return ys, xs, lo, hi, zeros, empty


def _row_tick_labels(frame: pd.DataFrame, rows: list[str]) -> list[str]:
    return [f"{_clip(safe_label(row))}\n{_coverage_text(frame[frame['_row'] == row])}" for row in rows]


def _x_label(left_out: list[str]) -> str:
    xlabel = "score x100 (bars: 95% bootstrap interval)"
    if left_out:
        xlabel += "\n" + _clip(safe_label("no score, not drawn: " + ", ".join(left_out)), MAX_NOTE)
    return xlabel


def _label_axes(ax, frame: pd.DataFrame, rows: list[str], left_out: list[str], title: str) -> None:
    """Each row's label with its coverage, the score axis (naming the series left out) and the title."""
    ax.set_yticks(range(len(rows)), _row_tick_labels(frame, rows))
    ax.set_ylim(len(rows) - 0.5, -0.5)   # first row on top, no empty margin
    ax.set_xlim(0, 105)
    ax.set_xlabel(_x_label(left_out))
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(safe_label(title), fontsize=9, loc="left")


def _encoded(fig, fmt: str) -> bytes:
    """The figure as compact SVG or palette PNG bytes."""
    buffer = io.BytesIO()
    if fmt == "svg":   # no creation date, so the same table gives the same bytes
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        return _compact_svg(buffer.getvalue())
    fig.savefig(buffer, format="png", metadata={"Software": "wenheng"})
    return _compact_png(buffer.getvalue())


def _style(name: str, k: int, series: list[str], model_of: Mapping[str, str],
           colours: Mapping[str, str] | None) -> tuple[str, str | None]:
    """A series' (colour, hatch). Without `colours`: the colour of its place in the chart, solid.
    With: its model's colour; the model's first series solid, its further ones hatched."""
    if colours is None:
        return COLOURS[k % len(COLOURS)], None
    model = model_of[name]
    colour = colours.get(model) or COLOURS[k % len(COLOURS)]
    nth = [s for s in series if model_of[s] == model].index(name)
    return colour, (HATCHES[(nth - 1) % len(HATCHES)] if nth else None)


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


_TAG = re.compile(rb"<[^>]+>")
_DECIMALS = re.compile(rb"(\d\.\d)\d+")


def _compact_svg(svg: bytes) -> bytes:
    """Coordinates to 0.1 px inside tags (text content untouched) and no indentation: a large
    table's chart shrinks by about half."""
    svg = _TAG.sub(lambda m: _DECIMALS.sub(rb"\1", m.group()), svg)
    return re.sub(rb"\n +<", b"\n<", svg)


def _compact_png(png: bytes) -> bytes:
    """A palette PNG: the chart has a handful of flat colours plus anti-aliasing, so 64 colours look
    the same at a third of the size."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        out = io.BytesIO()
        image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            out, format="PNG", optimize=True)
    return out.getvalue()


# ---- SVG, written directly ----------------------------------------------------------------------
# The same chart as matplotlib draws it (sizes in points, as its SVG backend writes them), laid out
# here: no figure, no layout engine, no text rendering. Text widths (which only set the left
# margin: labels are right-aligned to the axis) are the advances of the fonts the labels use.

_PAD = 3.0            # around the figure (constrained layout's pad)
_TICK = 3.5           # tick length and the gap from tick to label
_TITLE_BASELINE = 10.9
_TITLE_GAP = 6.0      # title baseline to the axes' top
_LINE = 9.0           # line spacing of 8 pt labels
_LEGEND_LINE = 10.5   # between legend rows (7 pt)


@lru_cache(maxsize=1)
def _advance_of() -> dict[str, float]:
    """character -> its advance (per unit of font size) in the chart's fonts, filled as text is measured."""
    return {}


@lru_cache(maxsize=1)
def _font_files() -> list:
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    files = []
    for name in fonts()[0]:
        try:
            font = FT2Font(font_manager.findfont(name))
            font.set_size(1000, 72)
            files.append(font)
        except (OSError, RuntimeError):
            continue
    return files


def _text_width(text: str, size: float) -> float:
    """`text`'s width in points at `size`: each character's advance in the first font that has it."""
    known = _advance_of()
    width = 0.0
    for ch in text:
        if ch not in known:
            advance = 0.6
            for font in _font_files():
                if font.get_char_index(ord(ch)):
                    advance = font.load_char(ord(ch)).linearHoriAdvance / 65536 / 1000
                    break
            known[ch] = advance
        width += known[ch]
    return width * size


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


def _svg_chart(frame: pd.DataFrame, rows: list[str], series: list[str], model_of: Mapping[str, str],
               colours: Mapping[str, str] | None, left_out: list[str], title: str, families: tuple[str, ...],
               bar: float, height: float) -> bytes:
    """`paper_table_chart`'s SVG: the figure matplotlib's constrained layout gives, written as SVG."""
    width_pt, height_pt = 7.2 * 72, height * 72
    font = "font-family: " + ", ".join(f"'{f}'" for f in families)
    styles = [_style(name, k, series, model_of, colours) for k, name in enumerate(series)]
    labels = [safe_label(name) for name in series]
    # the legend: up to 4 columns, centred at the bottom
    ncols = min(len(series), 4)
    nrows = math.ceil(len(series) / ncols)
    column_width = [max(_text_width(labels[k], 7) for k in range(c, len(series), ncols)) for c in range(ncols)]
    legend_width = sum(14 + 5.6 + w for w in column_width) + 14 * (ncols - 1)
    last_baseline = height_pt - _PAD - 4.2
    legend_top = last_baseline - (nrows - 1) * _LEGEND_LINE - 9.6
    # the axes: labels to the left, the score axis and its label below, the title above
    tick_labels = _row_tick_labels(frame, rows)
    xlabel = _x_label(left_out).split("\n")
    label_width = max(_text_width(line, 8) for label in tick_labels for line in label.split("\n"))
    left = _PAD + label_width + 2 * _TICK
    right = width_pt - _PAD
    top = _TITLE_BASELINE + _TITLE_GAP
    bottom = legend_top - 6.4 - 8.8 * (len(xlabel) - 1) - 12.0 - 14.1

    def sx(x: float) -> float:
        return left + x / 105 * (right - left)

    def sy(y: float) -> float:
        return top + (y + 0.5) / len(rows) * (bottom - top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width_pt)}pt" height="{_f(height_pt)}pt" '
           f'viewBox="0 0 {_f(width_pt)} {_f(height_pt)}" version="1.1">',
           '<defs><style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style>']
    out += [_hatch_pattern(f"hatch{k}", hatch, colour) for k, (colour, hatch) in enumerate(styles) if hatch]
    out.append("</defs>")
    out.append(f'<rect x="0" y="0" width="{_f(width_pt)}" height="{_f(height_pt)}" style="fill: #ffffff"/>')
    grid = " ".join(f"M {_f(sx(x))} {_f(top)} V {_f(bottom)}" for x in range(0, 101, 20))
    out.append(f'<path d="{grid}" style="fill: none; stroke: #dddddd; stroke-width: 0.6; '
               'stroke-linecap: square"/>')
    texts = []
    for k, name in enumerate(series):
        colour, hatch = styles[k]
        ys, xs, lo, hi, zeros, empty = _series_values(frame[frame["_series"] == name].set_index("_row"), k, rows,
                                                      bar)
        half = bar * 0.92 / 2
        cap = min(half, 0.15)
        if ys:
            boxes = " ".join(f"M {_f(sx(0))} {_f(sy(y - half))} H {_f(sx(x))} V {_f(sy(y + half))} "
                             f"H {_f(sx(0))} z" for y, x in zip(ys, xs))
            style = (f"fill: url(#hatch{k}); stroke: {colour}; stroke-width: 0.8" if hatch else f"fill: {colour}")
            out.append(f'<path d="{boxes}" style="{style}"/>')
            whiskers = []
            for y, x, low, high in zip(ys, xs, lo, hi):
                a, b = sx(x - low), sx(x + high)
                whiskers.append(f"M {_f(a)} {_f(sy(y))} H {_f(b)} M {_f(a)} {_f(sy(y - cap))} V {_f(sy(y + cap))} "
                                f"M {_f(b)} {_f(sy(y - cap))} V {_f(sy(y + cap))}")
            out.append(f'<path d="{" ".join(whiskers)}" style="fill: none; stroke: #333333; stroke-width: 0.8; '
                       'stroke-linejoin: miter"/>')
        texts += [(pos, "0", "#333333") for pos in zeros] + [(pos, "no score", "#666666") for pos in empty]
    for pos, text, colour in texts:
        out.append(f'<text x="{_f(sx(1))}" y="{_f(sy(pos) + 2.1)}" style="font-size: 6px; {font}; '
                   f'fill: {colour}">{_esc(text)}</text>')
    # spines and ticks
    ticks = " ".join(f"M {_f(sx(x))} {_f(bottom)} v {_TICK}" for x in range(0, 101, 20))
    ticks += " " + " ".join(f"M {_f(left)} {_f(sy(y))} h -{_TICK}" for y in range(len(rows)))
    out.append(f'<path d="{ticks}" style="fill: none; stroke: #000000; stroke-width: 0.8"/>')
    out.append(f'<path d="M {_f(left)} {_f(top)} V {_f(bottom)} H {_f(right)}" style="fill: none; stroke: #000000; '
               'stroke-width: 0.8; stroke-linejoin: miter; stroke-linecap: square"/>')
    for x in range(0, 101, 20):
        out.append(f'<text x="{_f(sx(x))}" y="{_f(bottom + 14.1)}" style="font-size: 8px; {font}; '
                   f'text-anchor: middle">{x}</text>')
    centre = (left + right) / 2
    for n, line in enumerate(xlabel):
        out.append(f'<text x="{_f(centre)}" y="{_f(bottom + 26.1 + 8.8 * n)}" style="font-size: 8px; {font}; '
                   f'text-anchor: middle">{_esc(line)}</text>')
    for y, label in enumerate(tick_labels):
        lines = label.split("\n")
        first = sy(y) + 3.5 - 4.5 * (len(lines) - 1)
        for n, line in enumerate(lines):
            out.append(f'<text x="{_f(left - 2 * _TICK)}" y="{_f(first + _LINE * n)}" style="font-size: 8px; '
                       f'{font}; text-anchor: end">{_esc(line)}</text>')
    out.append(f'<text x="{_f(left)}" y="{_TITLE_BASELINE}" style="font-size: 9px; {font}">{_esc(safe_label(title))}'
               "</text>")
    # the legend
    x0 = width_pt / 2 - legend_width / 2
    starts = [x0 + sum(14 + 5.6 + w + 14 for w in column_width[:c]) for c in range(ncols)]
    for k, label in enumerate(labels):
        colour, hatch = styles[k]
        baseline = last_baseline - (nrows - 1 - k // ncols) * _LEGEND_LINE
        x = starts[k % ncols]
        style = f"fill: url(#hatch{k}); stroke: {colour}; stroke-width: 0.8" if hatch else f"fill: {colour}"
        out.append(f'<rect x="{_f(x)}" y="{_f(baseline - 5.2)}" width="14.0" height="4.9" style="{style}"/>')
        out.append(f'<text x="{_f(x + 19.6)}" y="{_f(baseline)}" style="font-size: 7px; {font}">{_esc(label)}</text>')
    out.append("</svg>\n")
    return ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + "\n".join(out)).encode("utf-8")
