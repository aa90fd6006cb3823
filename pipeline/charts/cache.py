"""The cache of drawn charts: `<sha256 of what is drawn and how>.<fmt>` in a folder, so a publish
draws only the tables whose chart is not there. Reading a cached chart imports neither matplotlib
nor Pillow."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Literal

import pandas as pd

# The `paper_tables` columns a chart reads (whichever the frame has): the key of a cached chart.
DRAWN_COLUMNS = ("model", "split", "setting", "variant", "capped", "row_label", "metric", "row_order", "score",
                 "value", "ci_low", "ci_high", "n_items", "coverage", "uninformative_share")
# A cached chart not used for this long is removed when another is written.
CACHE_DAYS = 30


def _draw(*args) -> bytes:
    """`paper_table_chart(*args)`, looked up on the package (where it is exported) when called."""
    from pipeline import charts

    return charts.paper_table_chart(*args)


def cached_chart(frame: pd.DataFrame, title: str, fmt: Literal["png", "svg"], cache_dir: Path | None,
                 colours: Mapping[str, str] | None = None) -> bytes:
    """`paper_table_chart(frame, title, fmt, colours)`, from `cache_dir` when the same chart was
    drawn before (None: always drawn). A cache that cannot be written is skipped, not an error."""
    draw = (frame, title, fmt) if colours is None else (frame, title, fmt, colours)
    if cache_dir is None:
        return _draw(*draw)
    path = Path(cache_dir) / f"{chart_key(frame, title, fmt, colours)}.{fmt}"
    try:
        data = path.read_bytes()
        os.utime(path)   # used: kept by _prune
        return data
    except OSError:
        pass
    data = _draw(*draw)
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
    equal keys may vary) and of how it is drawn (this package, the libraries, the fonts)."""
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
    """The source of every module of this package (name: sha256) and the versions of the libraries
    that draw and compress."""
    sources = [f"{path.name}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
               for path in sorted(Path(__file__).parent.glob("*.py"))]
    versions = []
    for dist in ("matplotlib", "pillow"):
        try:
            versions.append(metadata.version(dist))
        except metadata.PackageNotFoundError:
            versions.append("-")
    return [*sources, *versions]


@lru_cache(maxsize=1)
def _font_list() -> list:
    """matplotlib's font cache files (name, size, mtime): the fonts it draws with are read from
    them, so a font it newly finds changes the key."""
    return _font_list_files()


def _font_list_files() -> list:
    """matplotlib's font cache files (name, size, mtime), looked up where matplotlib keeps them,
    without importing it; [] when there are none (yet)."""
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
