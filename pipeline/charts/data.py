"""What a chart shows, read from `paper_tables` rows: the series and rows, each series' bars and
intervals, and the texts beside them (row labels with n and coverage, the score axis' label)."""

from __future__ import annotations

import pandas as pd

from pipeline.charts.text import safe_label
from pipeline.rows import missing as _missing
from pipeline.rows import row_label

MAX_LABEL = 42
MAX_NOTE = 110


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
    metric = frame["metric"] if "metric" in frame else pd.Series(None, index=frame.index, dtype=object)
    return pd.Series([row_label(str(label), m) for label, m in zip(frame["row_label"], metric)], index=frame.index)


def _coverage_text(part: pd.DataFrame) -> str:
    n_items = part["n_items"].dropna()
    n = int(n_items.max()) if len(n_items) else 0
    cov = part["coverage"].dropna()
    if cov.empty:
        return f"n={n}"
    low, high = cov.min() * 100, cov.max() * 100
    shown = f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}-{high:.0f}%"
    return f"n={n}, cov {shown}"


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
