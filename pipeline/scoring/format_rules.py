"""Format rules for couplets (Fùxì CG) and ci to a tune (Fùxì CiG), checked with the 格律 tables
in pipeline.scoring.gelv. Plain functions: text in, a result dict out; pipeline/scoring/rules.py
wraps them as the scorers `couplet_rules` and `ci_rules`.

Text. The response is cleaned first: surrounding whitespace and quotes go; for a couplet, the
text after a "下联：" label (the last one, if the model restates the first line), then its first
non-empty line; for a ci, 上阕/下阕 labels and leading title lines (词牌/题目/标题 labels, 《》
or · titles, a line that starts with the tune's name and has no sentence punctuation).
Anything else stays and counts: a commentary after the ci breaks its shape. Clauses are the
runs of Han characters: punctuation, whitespace and line breaks (anything else) separate them.
Positions are 0-based over the Han characters of the cleaned text.

CG (couplet), the second line (下联) against the given first line (上联):
  shape   the same number of clauses, each with the same number of characters (the rule the
          Fùxì paper names), and not a copy of the first line;
  tones   by 平水韵: the last character of the second line is 平 (the item's
          `rules.ending_tone`, default 平; null skips it); at every earlier clause end the
          second line's tone is the opposite of the first line's (平仄相对, rule "opposition"),
          where the first line's character has one tone. The first line is the input, so its
          own ending (traditionally 仄) is reported (`first_line_ends`), not scored.
CiG (ci): the response must fit SOME 格 of the requested cipai (its name from the item's rules,
else the input's "词牌：…"; any alias in the tables resolves, and a tune X and its 令 form X令
count as one). The 格 are the tables' (钦定词谱 / 龙榆生); an item's own pattern (`rules.lines`,
`tones`, `rhymes`) is used only for a tune the tables lack. Real ci can miss the strict rules:
晏殊's 浣溪沙 rhymes 来 (咍, 第五部) with 杯 回 (灰, 第三部); 温庭筠's 望江南 has 脉 (仄) where
the 钦定词谱 pattern fixes 平. Both pass the lenient rule.
  shape   the clause lengths equal the 格's, clause by clause; a clause that ends in a 读 (a
          pause) may be joined to the next one without punctuation, every other break must be
          there;
  tones   平 / 仄 by 平水韵 at every position the 格 fixes (中 = either, not checked);
  rhymes  each rhyme group of the 格 falls within one 词林正韵 部. 词林正韵 keeps the 平 and
          the 上去 of a 部 together (部 1-14) and puts 入声 in 部 15-19, and tunes such as 西江月
          rhyme 平 with 仄 of one 部 in a single group, so a group is checked for its 部 only;
          whether each rhyme is 平 or 仄 is the tone rule's job (the 格 fixes the tone at the
          rhyme positions). A character counts for the 部 of its readings in the position's tone
          (平: 平 readings; 仄: 上去 and 入 readings; 中: all). Of a group, the 部 shared by most
          of its characters is its rhyme; the others are mismatches.
  Not checked: that a 叠 clause repeats the words before it; 对仗 in either task.

Faults are counted per character position (a wrong tone at a rhyme position that also leaves
the rhyme is one fault).
  strict   shape holds and there is no fault: the item's score (0/1), Fùxì's pass/fail;
  lenient  shape holds and there is at most one fault. For a one-clause couplet (one tone rule)
           this is the paper's stated criterion, matching character counts (and no copy).
Both sit in `details` with the checks, the mismatches and the 格 matched (for a ci, the 格
with the fewest faults among those whose shape fits).

Polyphones (多: readings in both tones) fit 平 and 仄. Characters not in the tables count as
fitting (tone and rhyme) and are counted in `details` (`unknown`, `unknown_chars`).
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from pipeline.scoring.gelv import Variant, cilin, find_cipai, rhyme_groups, tone, tone_fits

_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")
_WRAPPERS = " \t\r\n\u3000\"'“”‘’「」『』《》〈〉"
_LOWER_LABEL = re.compile(r"下联\s*(?:是|为)?\s*[:：]")
_UPPER_LABEL = re.compile(r"^\s*上联\s*(?:是|为)?\s*[:：]")
_TITLE_LABEL = re.compile(r"^(?:词牌名?|题目|标题|词题)\s*[:：]")
_PART_LABEL = re.compile(r"^[ \t\u3000]*[上下](?:阕|阙|片)[ \t\u3000]*[:：]?", re.M)
_SENTENCE_MARKS = set("，。？！；、,.?!;")
_CIPAI_IN_INPUT = re.compile(r"词牌名?\s*[:：]\s*《?([^\s，,。；;：:》]+)")
_OPPOSITE = {"平": "仄", "仄": "平"}


def clauses(text: str) -> list[str]:
    """The runs of Han characters; anything else (punctuation, whitespace) separates clauses."""
    return _HAN_RUN.findall(text)


def clean_couplet(text: str) -> str:
    """The second line out of a response: after the last 下联 label, the first non-empty line."""
    labels = list(_LOWER_LABEL.finditer(text))
    if labels:
        text = text[labels[-1].end():]
    line = next((ln for ln in text.splitlines() if ln.strip(_WRAPPERS)), "")
    return line.strip(_WRAPPERS)


def clean_ci(text: str, names: tuple[str, ...] = ()) -> str:
    """The ci out of a response: leading title lines and 上阕 / 下阕 labels dropped."""
    lines = _PART_LABEL.sub("", text).strip(_WRAPPERS).splitlines()
    while lines and _is_title(lines[0], names):
        lines.pop(0)
    return "\n".join(lines).strip(_WRAPPERS)


def _is_title(line: str, names: tuple[str, ...]) -> bool:
    bare = line.strip(_WRAPPERS)
    parts = clauses(bare)
    return (not bare or bool(_TITLE_LABEL.match(bare)) or any(c in bare for c in "《》·•・")
            or "".join(parts) in names or (bool(parts) and parts[0] in names and not _SENTENCE_MARKS & set(bare)))


def cipai_of(item: dict[str, Any]) -> str | None:
    """The requested tune: the item's rules, else "词牌：…" in its input."""
    rules = (item.get("metadata") or {}).get("rules") or {}
    if isinstance(rules.get("cipai"), str) and rules["cipai"].strip():
        return rules["cipai"].strip()
    found = _CIPAI_IN_INPUT.search(item.get("question") or "")
    return found.group(1) if found else None


def check_couplet(first_line: str, response: str, ending_tone: str | None = "平") -> dict[str, Any]:
    upper = clauses(_UPPER_LABEL.sub("", first_line))
    text = clean_couplet(response)
    lower = clauses(text)
    lengths, expected = [len(c) for c in lower], [len(c) for c in upper]
    same_shape = lengths == expected and bool(lower)
    copy = same_shape and lower == upper
    mismatches: list[dict[str, Any]] = []
    unknown: dict[int, str] = {}   # position -> a character the tables lack
    offsets = [0, *accumulate(lengths)]
    if same_shape:
        for i, (up, low) in enumerate(zip(upper, lower)):
            last = i == len(upper) - 1
            want = ending_tone if last else _OPPOSITE.get(tone(up[-1]) or "")
            if want is None:
                continue
            fits = tone_fits(low[-1], want)
            if fits is None:
                unknown[offsets[i + 1] - 1] = low[-1]
            elif not fits:
                mismatches.append({"pos": offsets[i + 1] - 1, "char": low[-1], "want": want, "got": tone(low[-1]),
                                   "rule": "ending" if last else "opposition"})
    shape = same_shape and not copy
    checks = {"shape": shape, "tones": shape and not mismatches}
    details = _verdict(checks, shape, mismatches, unknown)
    details.update({"lengths": lengths, "expected": expected,
                    "first_line_ends": tone(upper[-1][-1]) if upper else None})
    if copy:
        details["copy_of_first_line"] = True
    return {"text": text, **details}


def check_ci(response: str, cipai: str, fallback: Variant | None = None) -> dict[str, Any] | str:
    """The response against every 格 of the tune; a reason string when the tune is unknown and
    the item gives no pattern of its own (`fallback`)."""
    found = find_cipai(cipai)
    variants = found.variants if found else ((fallback,) if fallback else ())
    if not variants:
        return f"cipai {cipai!r} is not in the cipai tables and the item gives no pattern"
    names = found.names if found else (cipai,)
    text = clean_ci(response, names)
    parts = clauses(text)
    lengths, chars = [len(c) for c in parts], "".join(parts)
    best: tuple[int, int, list, dict] | None = None   # (faults, index, mismatches, unknown)
    for index, variant in enumerate(variants):
        if not _shape_fits(lengths, variant):
            continue
        mismatches, unknown = _ci_faults(chars, variant)
        faults = len({m["pos"] for m in mismatches})
        if best is None or faults < best[0]:
            best = (faults, index, mismatches, unknown)
        if faults == 0:
            break
    details: dict[str, Any] = {"cipai": found.name if found else cipai, "source": "tables" if found else "item rules"}
    if best is None:
        checks = {"shape": False, "tones": False, "rhymes": False}
        shapes = list(dict.fromkeys(tuple(len(line) for line in v.lines) for v in variants))
        details.update(_verdict(checks, False, [], {}))
        details.update({"lengths": lengths, "expected": [list(s) for s in shapes[:8]], "variants": len(variants)})
        return {"text": text, **details}
    _, index, mismatches, unknown = best
    checks = {"shape": True, "tones": not any(m["rule"] == "tone" for m in mismatches),
              "rhymes": not any(m["rule"] == "rhyme" for m in mismatches)}
    details.update(_verdict(checks, True, mismatches, unknown))
    details.update({"variant": index, "variants": len(variants), "lengths": lengths,
                    "pattern": "/".join(variants[index].lines)})
    return {"text": text, **details}


def pattern_from_rules(rules: dict[str, Any]) -> Variant | None:
    """An item's own ci pattern (wenheng's `rules`: lines, tones, rhymes, rhyme_tone), for tunes
    the tables lack: the rhyming lines' last characters form one rhyme group."""
    lines = rules.get("lines")
    if not isinstance(lines, list) or not lines:
        return None
    tones = rules.get("tones") or ["中" * n for n in lines]
    rhyming = set(rules.get("rhymes") or [])
    rhyme_tone = rules.get("rhyme_tone") or "中"
    patterns = [t if rules.get("tones") or (i + 1) not in rhyming else t[:-1] + rhyme_tone
                for i, t in enumerate(tones)]
    ends = list(accumulate(lines))
    group = tuple(ends[i - 1] - 1 for i in sorted(rhyming))
    return Variant(tuple(patterns), frozenset(), (group,) if group else ())


def _shape_fits(lengths: list[int], variant: Variant) -> bool:
    pattern_ends = list(accumulate(len(line) for line in variant.lines))
    got = set(accumulate(lengths))
    required = {e for i, e in enumerate(pattern_ends) if i not in variant.pauses}
    return bool(lengths) and sum(lengths) == pattern_ends[-1] and required <= got <= set(pattern_ends)


def _ci_faults(chars: str, variant: Variant) -> tuple[list[dict[str, Any]], dict[int, str]]:
    pattern = variant.pattern
    mismatches: list[dict[str, Any]] = []
    unknown: dict[int, str] = {}   # position -> a character the tables lack
    for pos, (ch, want) in enumerate(zip(chars, pattern)):
        if want == "中":
            continue
        fits = tone_fits(ch, want)
        if fits is None:
            unknown[pos] = ch
        elif not fits:
            mismatches.append({"pos": pos, "char": ch, "want": want, "got": tone(ch), "rule": "tone"})
    for group_index, group in enumerate(variant.rhymes):
        known = {}
        for pos in group:
            if cilin(chars[pos]):
                known[pos] = rhyme_groups(chars[pos], pattern[pos])
            else:
                unknown[pos] = chars[pos]
        counts: dict[int, int] = {}
        for bus in known.values():
            for bu in bus:
                counts[bu] = counts.get(bu, 0) + 1
        bu = min(counts, key=lambda b: (-counts[b], b)) if counts else None
        mismatches += [{"pos": pos, "char": chars[pos], "want": f"词林正韵第{bu}部" if bu else "a shared 部",
                        "got": sorted(bus), "rule": "rhyme", "group": group_index}
                       for pos, bus in known.items() if bu not in bus]
    return sorted(mismatches, key=lambda m: m["pos"]), unknown


def _verdict(checks: dict[str, bool], shape: bool, mismatches: list[dict[str, Any]],
             unknown: dict[int, str]) -> dict[str, Any]:
    faults = len({m["pos"] for m in mismatches})
    return {"strict": int(shape and faults == 0), "lenient": int(shape and faults <= 1), "checks": checks,
            "faults": faults, "mismatches": mismatches, "unknown": len(unknown),
            "unknown_chars": "".join(dict.fromkeys(unknown[p] for p in sorted(unknown)))}
