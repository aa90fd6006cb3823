"""The charts' fonts: which families draw the labels, ASCII spellings of what none can draw, and
text widths measured from the fonts' advances (for the SVG written directly).

Choosing the fonts and measuring them needs matplotlib (a tenth to a third of a second to import),
so what the SVG writer needs of them (the families, the code points they cover, each measured
character's advance) is kept in `fonts.json` in the cache folder. It is used only while matplotlib's
version and font list and the chosen font files are as they were when it was written; a character
not in it is measured by matplotlib once and added. A cache file that cannot be read is ignored and
written again."""

from __future__ import annotations

import json
import os
import unicodedata
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, starmap
from pathlib import Path

# Fonts that draw CJK, most complete first; whichever is installed is put ahead of DejaVu Sans.
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK JP", "Source Han Sans SC",
                "Source Han Sans CN", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "AR PL UMing CN",
                "AR PL UKai CN", "Droid Sans Fallback", "Noto Sans SC", "Noto Serif CJK SC")
BASE_FAMILY = "DejaVu Sans"
CACHE_FILE = "fonts.json"
_UNKNOWN_ADVANCE = 0.6   # a character no font has: about an average Latin letter


@dataclass
class _Fonts:
    """The chart fonts' facts: families, covered code points, advances per unit of font size."""
    key: list | None                   # `_key()` when the facts were found; None: not cached
    families: tuple[str, ...]
    covered: frozenset[int]
    ranges: list[list[int]]            # `covered` as [first, last + 1] runs, as the cache file keeps it
    files: list[list]                  # [path, size, mtime_ns] of each font file read
    advance: dict[str, float] = field(default_factory=dict)
    changed: bool = False              # facts not yet in the cache file


def fonts() -> tuple[tuple[str, ...], frozenset[int]]:
    """(font families to use, the code points they can draw between them)."""
    facts = _facts()
    return facts.families, facts.covered


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


def _text_width(text: str, size: float) -> float:
    """`text`'s width in points at `size`: each character's advance in the first font that has it."""
    facts = _facts()
    known = facts.advance
    width = 0.0
    for ch in text:
        if ch not in known:
            known[ch] = _measure(ch)
            facts.changed = True
        width += known[ch]
    return width * size


def save_fonts() -> None:
    """Write the font facts learnt in this process to the cache file (when there are new ones)."""
    facts = _facts()
    if facts.changed:
        facts.changed = False
        _write_cache(_cache_path(), facts)


# ---- the facts, from the cache file or from matplotlib ------------------------------------------

@lru_cache(maxsize=1)
def _facts() -> _Fonts:
    return _read_cache(_cache_path()) or _from_matplotlib()


def _cache_path() -> Path:
    from pipeline import paths

    return paths.cache_dir() / CACHE_FILE


def _key() -> list | None:
    """What the facts depend on besides the font files: matplotlib's version and its font list
    (the fonts it chooses from). None when matplotlib or its font list is not found."""
    from importlib import metadata

    from pipeline.charts.cache import _font_list_files

    try:
        version = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        return None
    font_list = _font_list_files()
    return [version, font_list] if font_list else None


def _file_id(path: str) -> list:
    st = os.stat(path)
    return [path, st.st_size, st.st_mtime_ns]


def _read_cache(path: Path) -> _Fonts | None:
    """The facts in the cache file, or None when it is absent, unreadable or stale."""
    data = _read_json(path)
    if data is None:
        return None
    try:
        covered = frozenset(chain.from_iterable(starmap(range, data["covered"])))
        return _Fonts(data["key"], tuple(data["families"]), covered, data["covered"], data["files"],
                      _advances(data))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _read_json(path: Path, key: list | None = None) -> dict | None:
    """The cache file's content when it was written under `key` (default: `_key()`) and its font
    files are unchanged."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        key = key or _key()
        if key is None or data["key"] != key or any(_file_id(f[0]) != f for f in data["files"]):
            return None
        return data
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _advances(data: dict) -> dict[str, float]:
    return {ch: float(value) for ch, value in data["advance"].items() if len(ch) == 1}


def _write_cache(path: Path, facts: _Fonts) -> None:
    """Write `facts` (with the advances another run has added meanwhile) whole or not at all: a
    temporary file renamed over the old one, so runs at once never read half a file. A cache
    that cannot be written is skipped."""
    if facts.key is None:
        return
    on_disk = _read_json(path, facts.key)
    if on_disk is not None and on_disk.get("families") == list(facts.families) and on_disk["files"] == facts.files:
        try:
            facts.advance = {**_advances(on_disk), **facts.advance}
        except (ValueError, TypeError, KeyError, AttributeError):
            pass
    text = json.dumps({"key": facts.key, "families": list(facts.families), "files": facts.files,
                       "covered": facts.ranges, "advance": facts.advance}, sort_keys=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _from_matplotlib() -> _Fonts:
    """The families to use (the first installed CJK family, then DejaVu Sans) and what they cover."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    installed = {f.name: f.fname for f in font_manager.fontManager.ttflist}
    families = [name for name in CJK_FAMILIES if name in installed][:1] + [BASE_FAMILY]
    covered: set[int] = set()
    files = set()
    for name in families:
        path = installed.get(name) or font_manager.findfont(name)
        try:
            covered |= set(FT2Font(path).get_charmap())
            files.add(str(path))
        except (OSError, RuntimeError):   # an unreadable font file draws nothing
            continue
    files.update(str(font_path) for font_path in _font_paths(tuple(families)))
    ids = []
    for f in sorted(files):
        try:
            ids.append(_file_id(f))
        except OSError:   # not there: nothing is read from it
            continue
    ranges: list[list[int]] = []
    for code in sorted(covered):
        if ranges and ranges[-1][1] == code:
            ranges[-1][1] = code + 1
        else:
            ranges.append([code, code + 1])
    # the key after matplotlib has loaded: it writes its font list on first use
    return _Fonts(_key(), tuple(families), frozenset(covered), ranges, ids, changed=True)


def _font_paths(families: tuple[str, ...]) -> list:
    """The font file (and face) matplotlib draws each family with."""
    from matplotlib import font_manager

    return [font_manager.findfont(name) for name in families]


@lru_cache(maxsize=1)
def _font_files() -> list:
    from matplotlib.ft2font import FT2Font

    files = []
    for path in _font_paths(_facts().families):
        try:
            font = FT2Font(path)
            font.set_size(1000, 72)
            files.append(font)
        except (OSError, RuntimeError):
            continue
    return files


def _measure(ch: str) -> float:
    """`ch`'s advance per unit of font size in the first of the chart's fonts that has it."""
    for font in _font_files():
        if font.get_char_index(ord(ch)):
            return font.load_char(ord(ch)).linearHoriAdvance / 65536 / 1000
    return _UNKNOWN_ADVANCE
