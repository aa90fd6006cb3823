"""格律 tables: the tone of a character by 平水韵, its rhyme groups (部) by 词林正韵, and the cipai
patterns (格). Read from pipeline/scoring/gelv_tables/ (built by scripts/build_gelv_tables.py from
two MIT-licensed projects; their licences and PROVENANCE.md are beside the tables).

- `tone(ch)`: 平, 仄 or 多 (the character has readings of both tones: it matches either), None
  when the character is not in the tables. Middle-Chinese tones: 入声 characters are 仄.
- `cilin(ch)`: the character's 词林正韵 readings, pairs (部 1-19, 平 / 仄 / 入); 部 1-14 hold a
  平声 and a 上去 (仄) part, 部 15-19 are 入声 only.
- `find_cipai(name)`: a cipai by any of its names or aliases (忆江南 = 望江南 = 江南好), in
  simplified or traditional script (and X = X令), with all its 格: clause tone patterns (平 / 仄 / 中 = either),
  the clauses that end in a mere pause (读), and the rhyme groups (0-based character positions).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipeline.script import convert

TABLES = Path(__file__).resolve().parent / "gelv_tables"
_READING = re.compile(r"(\d+)([平仄入])")


@dataclass(frozen=True)
class Variant:
    """One 格 of a cipai."""
    lines: tuple[str, ...]                # tone pattern per clause: 平 / 仄 / 中
    pauses: frozenset[int]                # clauses (0-based) ending in 读: a pause, punctuation optional
    rhymes: tuple[tuple[int, ...], ...]   # groups of 0-based character positions that rhyme together

    @property
    def pattern(self) -> str:
        return "".join(self.lines)


@dataclass(frozen=True)
class Cipai:
    name: str                             # the table's first name for it
    names: tuple[str, ...]
    variants: tuple[Variant, ...]


@cache
def _hanzi() -> dict[str, tuple[str, frozenset[tuple[int, str]]]]:
    table = {}
    with open(TABLES / "hanzi.tsv", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            ch, tone_, readings = line.rstrip("\n").split("\t")
            table[ch] = (tone_, frozenset((int(bu), t) for bu, t in _READING.findall(readings)))
    return table


def tone(ch: str) -> str | None:
    entry = _hanzi().get(ch)
    return entry[0] if entry else None


def cilin(ch: str) -> frozenset[tuple[int, str]]:
    entry = _hanzi().get(ch)
    return entry[1] if entry else frozenset()


def tone_fits(ch: str, wanted: str) -> bool | None:
    """Does the character fit a pattern tone (平 / 仄 / 中)? None when the character is unknown."""
    got = tone(ch)
    if got is None:
        return None
    return wanted == "中" or got == "多" or got == wanted


def rhyme_groups(ch: str, wanted: str = "中") -> set[int]:
    """The 词林正韵 部 the character can rhyme in at a position of tone `wanted` (平: its 平
    readings; 仄: its 上去 and 入 readings; 中: all)."""
    return {bu for bu, t in cilin(ch) if wanted == "中" or (t == "平") == (wanted == "平")}


@cache
def _cipai() -> dict[str, Cipai]:
    data = json.loads((TABLES / "cipai.json").read_text(encoding="utf-8"))
    by_name: dict[str, Cipai] = {}
    for entry in data["cipai"]:
        cipai = Cipai(entry["names"][0], tuple(entry["names"]), tuple(
            Variant(tuple(v["lines"]), frozenset(v["pauses"]), tuple(tuple(g) for g in v["rhymes"]))
            for v in entry["variants"]))
        for name in cipai.names:
            by_name.setdefault(name, cipai)
    return by_name


@cache
def find_cipai(name: str) -> Cipai | None:
    """By any name or alias; surrounding 《》 and a ·title suffix are ignored. A tune X and its
    令 form X令 (浪淘沙 / 浪淘沙令, 诉衷情 / 诉衷情令) are one family: either name accepts the
    格 of both, as common usage names 李煜's 浪淘沙令 plainly 浪淘沙."""
    name = re.split(r"[·•・]", name.strip().strip("《》〈〉「」"), maxsplit=1)[0].strip()
    found = _lookup(name) or _lookup(convert(name, "t2s")) or _lookup(convert(name, "s2t"))
    if found is None:
        return None
    partner = _lookup(name[:-1] if name.endswith("令") else name + "令")
    if partner is None or partner is found:
        return found
    return Cipai(found.name, found.names + partner.names, found.variants + partner.variants)


def _lookup(name: str) -> Cipai | None:
    return _cipai().get(name)
