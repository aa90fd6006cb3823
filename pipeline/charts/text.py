"""The charts' fonts: which families draw the labels, ASCII spellings of what none can draw, and
text widths measured from the fonts' advances (for the SVG written directly). matplotlib is
imported only when a font is first looked at."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# Fonts that draw CJK, most complete first; whichever is installed is put ahead of DejaVu Sans.
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK JP", "Source Han Sans SC",
                "Source Han Sans CN", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "AR PL UMing CN",
                "AR PL UKai CN", "Droid Sans Fallback", "Noto Sans SC", "Noto Serif CJK SC")
BASE_FAMILY = "DejaVu Sans"


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
