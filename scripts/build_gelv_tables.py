"""Build the compact tone, rhyme and cipai tables in pipeline/scoring/gelv_tables/ from the two
MIT-licensed upstream projects (see pipeline/scoring/gelv_tables/PROVENANCE.md):

    .venv/bin/python scripts/build_gelv_tables.py [UPSTREAM_GELV_DIR]

UPSTREAM_GELV_DIR defaults to $WENHENG_UPSTREAM/gelv, else ../shared/upstream/gelv beside the
checkout. It must hold `chinese_word_rhyme/` (github.com/charlesix59/chinese_word_rhyme) and
`couyun/` (github.com/hulbji/couyun). The output is deterministic; re-running on the same upstream
commits gives byte-identical files.

Outputs:
  hanzi.tsv    char, 平水韵 tone (平 / 仄 / 多 = has readings of both), 词林正韵 readings
               ("3平 3仄 17入": 部 number and tone class of each reading)
  cipai.json   every cipai: names (simplified and traditional aliases) and its 格 (variants):
               clause tone patterns (平 / 仄 / 中 = either), which clause breaks are only a pause
               (读), and the rhyme groups (0-based character positions that rhyme together)
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "pipeline" / "scoring" / "gelv_tables"

# Markers in couyun's `ge_lyu_sep` (the pattern written out line by line): each ends a clause.
# 韵 rhyme, 句 line, 读 pause, 叶 rhyme in the other tone, 叠 repeat, 重 repeat, 换… rhyme change.
MARKER = re.compile(r"换[平仄]?[韵叶]?|[韵叶句读叠重]")
REFRAIN = re.compile(r"竹枝|女儿|年少|举棹")


def default_upstream() -> Path:
    base = os.environ.get("WENHENG_UPSTREAM")
    return (Path(base) if base else ROOT.parent / "shared" / "upstream") / "gelv"


def is_han(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH"))


def load_couyun_hanzi(path: Path) -> list[list]:
    """couyun/hanzi/hanzi_class.py: module-level lists [chars, tone 1-4, 平水 rhyme (sign: 平 > 0),
    词林 部 (sign: 平 > 0, 15-19 入), running number]. Read as literals, never executed."""
    rows = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            value = ast.literal_eval(node.value)
            if isinstance(value, list) and value and isinstance(value[0], str):
                rows.append(value)
    return rows


def build_hanzi(upstream: Path) -> dict[str, tuple[set[str], set[tuple[int, str]]]]:
    """char -> ({平, 仄} tone classes by 平水韵, {(词林 部, 平 / 仄 / 入)}): the union of both sources."""
    table: dict[str, tuple[set[str], set[tuple[int, str]]]] = defaultdict(lambda: (set(), set()))
    # chinese_word_rhyme: 平水韵 106 rhymes, grouped by tone section (上平 / 下平 / 上 / 去 / 入).
    pingshui = json.loads((upstream / "chinese_word_rhyme/data/Pingshui_Rhyme.json").read_text(encoding="utf-8"))
    for section, rhymes in pingshui.items():
        tone = "平" if "平" in section else "仄"
        for chars in rhymes.values():
            for ch in filter(is_han, chars):
                table[ch][0].add(tone)
    # chinese_word_rhyme: 词林正韵 19 部 (1-14 平声 + 仄声 = 上去, 15-19 入声).
    cilin = json.loads((upstream / "chinese_word_rhyme/data/Cilin_Rhyme.json").read_text(encoding="utf-8"))
    for number, (bu, sections) in enumerate(cilin.items(), start=1):
        assert bu.startswith("第") and bu.endswith("部"), bu
        for section, chars in sections.items():
            tone = {"平声": "平", "仄声": "仄", "入声": "入"}[section]
            for ch in filter(is_han, chars):
                table[ch][1].add((number, tone))
    # couyun: one row per (character set, reading).
    for chars, tone, _pingshui, cilin_bu, *_ in load_couyun_hanzi(upstream / "couyun/hanzi/hanzi_class.py"):
        for ch in filter(is_han, chars):
            table[ch][0].add("平" if tone == 1 else "仄")
            if cilin_bu:
                table[ch][1].add((abs(cilin_bu), "入" if tone == 4 else "平" if cilin_bu > 0 else "仄"))
    return table


def write_hanzi(table, path: Path) -> int:
    lines = ["# char\t平水韵 tone (平 / 仄 / 多)\t词林正韵 readings (部 number + 平 / 仄 / 入)"]
    for ch in sorted(table):
        tones, readings = table[ch]
        if not tones and not readings:
            continue
        if not tones:   # no 平水韵 reading: the 词林正韵 readings decide (入 counts as 仄)
            tones = {"平" if t == "平" else "仄" for _, t in readings}
        tone = "多" if len(tones) == 2 else next(iter(tones))
        order = {"平": 0, "仄": 1, "入": 2}
        cilin = " ".join(f"{bu}{t}" for bu, t in sorted(readings, key=lambda r: (r[0], order[r[1]])))
        lines.append(f"{ch}\t{tone}\t{cilin}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1


def parse_variant(variant: dict) -> dict | None:
    """One couyun 格 -> {"lines": clause tone patterns, "pauses": indices of clauses ending in a
    读 (a pause writers may leave unpunctuated), "rhymes": rhyme groups of 0-based positions}, or
    None when its pattern and its example disagree (a handful of upstream entries).

    Clause lengths come from the example ci (`ci_sep`, clauses split by full-width spaces), clause
    kinds from the pattern's markers (`ge_lyu_sep`); the tones from `ge_lyu_str`. The pattern text
    alone is ambiguous: "仄仄韵" may be a 仄 clause end and a 仄 rhyme mark."""
    if len(variant["ci_sep"]) != len(variant["ge_lyu_sep"]):
        return None
    lengths, pauses = [], []
    for example, pattern in zip(variant["ci_sep"], variant["ge_lyu_sep"]):
        segments = [len(s) for s in re.split("\u3000+", example) if s]
        markers = MARKER.findall(pattern)
        if len(segments) != len(markers):
            # a refrain sung between the words (竹枝 / 女儿 in 竹枝词) splits the example but not
            # the line: count the tones between the markers instead
            segments = [len(t) for t in re.findall("[平仄中]+", REFRAIN.sub("", MARKER.sub("|", pattern)))]
            if len(segments) != len(markers):
                return None
        pauses += [len(lengths) + i for i, m in enumerate(markers) if m == "读"]
        lengths += segments
    tones = variant["ge_lyu_str"]
    if sum(lengths) != len(tones) or not all(lengths):
        return None
    clauses, start = [], 0
    for n in lengths:
        clauses.append(tones[start:start + n])
        start += n
    # yun_classify: rhyme groups; a negative position is a rhyme in the other tone (叶), same group
    groups = sorted(sorted(abs(p) for p in positions) for positions in variant["yun_classify"].values() if positions)
    if any(p >= len(tones) for g in groups for p in g):
        return None
    return {"lines": clauses, "pauses": pauses, "rhymes": groups}


def build_cipai(upstream: Path, dropped: list[str]) -> list[dict]:
    ci_pu = upstream / "couyun" / "ci_pu"
    index = json.loads((ci_pu / "ci_index.json").read_text(encoding="utf-8"))
    out = []
    for entry in index:
        variants = json.loads((ci_pu / "ci_list" / f"cipai_{entry['idx']}.json").read_text(encoding="utf-8"))
        names = list(dict.fromkeys(entry["names"] + entry.get("names_trad", [])))
        parsed = [parse_variant(v) for v in variants]
        dropped.extend(f"{names[0]} #{i}" for i, v in enumerate(parsed) if v is None)
        out.append({"names": names, "variants": [v for v in parsed if v is not None]})
    return out


def write_cipai(cipai: list[dict], path: Path) -> None:
    # one cipai per line: compact, and diffs stay readable
    body = ",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cipai)
    path.write_text('{"cipai":[\n' + body + "\n]}\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    upstream = Path(argv[1]) if len(argv) > 1 else default_upstream()
    if not (upstream / "couyun").is_dir() or not (upstream / "chinese_word_rhyme").is_dir():
        print(f"no couyun/ and chinese_word_rhyme/ under {upstream}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    chars = write_hanzi(build_hanzi(upstream), OUT / "hanzi.tsv")
    dropped: list[str] = []
    cipai = build_cipai(upstream, dropped)
    write_cipai(cipai, OUT / "cipai.json")
    for project in ("chinese_word_rhyme", "couyun"):
        (OUT / f"LICENSE.{project}").write_text((upstream / project / "LICENSE").read_text(encoding="utf-8"),
                                                encoding="utf-8")
    print(f"hanzi.tsv: {chars} characters; cipai.json: {len(cipai)} cipai, "
          f"{sum(len(c['variants']) for c in cipai)} variants -> {OUT}")
    if dropped:
        print(f"left out {len(dropped)} variants whose pattern and example disagree: {', '.join(dropped)}")
    check_model_ci(upstream)
    return 0


def check_model_ci(upstream: Path) -> None:
    """Sanity check of the tables and the rules: each 格's own model ci against its tune. The
    misses are mostly the old poets' own neighbouring-部 rhymes (灰/咍, -n/-m), which 词林正韵
    keeps apart."""
    sys.path.insert(0, str(ROOT))
    from pipeline.scoring.format_rules import check_ci

    ci_pu = upstream / "couyun" / "ci_pu"
    strict = lenient = total = 0
    for entry in json.loads((ci_pu / "ci_index.json").read_text(encoding="utf-8")):
        for variant in json.loads((ci_pu / "ci_list" / f"cipai_{entry['idx']}.json").read_text(encoding="utf-8")):
            result = check_ci(variant["origin"], entry["names"][0])
            total += 1
            strict += result["strict"]
            lenient += result["lenient"]
    print(f"model ci passing their tune: strict {strict}/{total}, lenient {lenient}/{total}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
