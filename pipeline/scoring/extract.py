"""Option-letter extraction from free text.

`extract_aceval` follows AC-EVAL's own evaluation code (MIT-licensed): collect standalone
letters, accept a unique one, else try answer patterns in order; several distinct letters mean
the answer is ambiguous. Items with more than four options (WYWEB GJC, CP-DUE TH/ST) use the
same rules over their own letter range."""

from __future__ import annotations

import re
from functools import cache

from pipeline.schema import OPTION_LETTERS

_PATTERN_TEXTS = (
    r"答案(?:应该?)?(?:是|为|选择?)?[：:]?\s?(?:选项)?\s?[（(]?([A-D])[）)]?",
    r"正确的?(?:一项|答案|选项)(?:所?对应的选项(?:字母)?)?(?:应该?)?[是为]?[：:]?[\s#]*[（(]?([A-D])[）)]?",
    r"^选择?\s?[（(]?([A-D])[）)]?",
    r"(?:综上所述|综合考[虑量]).*?([A-D])",
    r"(?:##(?:因此|故|所以|综上所述|(?:基于|综合|根据)以上[分解]析).*)([A-D])(?=[^A-D]*$)",
    r"(?:故|因此|所以|综上所述)?[,，]?(?:本题)?选择?[：:]?\s?[（(]?([A-D])[）)]?",
    r"[（(]?([A-D])[）)]?\s?(?:选?项)?[是为]?(?:正确|符合题意)的?",
    r"(?:选项)?\s?[（(]?([A-D])[）)]?\s?[是为]?(?:正确|符合题意)的?",
    r"(?:^|：|:)\s?[（(]?([A-D])[）)]?(?:#|。|$)",
    r"^(?:选项?)?[是为]?\s?[（(]?([A-D])[）)]?[.。]?.*?##",
)
_NO_ANSWER = [re.compile(p) for p in (
    r"抱歉，",
    r"无法(?:从给出的选项中)?(?:直接)?(?:给出|确定|判断|得出|选择)(?:唯一)?(?:一个)?(?:确定|确切|正确|明确)?的?(?:答案|选项)",
    r"(?:无|没有)(?:一个)?(?:唯一)?(?:(?:不?正确|错误)?的?(?:答案|选项|解|一项))",
    r"所有(?:答案|选项)都是正确的",
    r"正确答案是?[：:]?无",
)]

NO_ANSWER, AMBIGUOUS, UNMATCHED, EMPTY = "无", "多选或矛盾", "未匹配到", "空"


@cache
def _patterns(last: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p.replace("A-D", f"A-{last}")) for p in _PATTERN_TEXTS)


def extract_aceval(response: str, n_options: int = 4) -> str:
    """An option letter, or one of NO_ANSWER / AMBIGUOUS / UNMATCHED / EMPTY."""
    last = OPTION_LETTERS[max(n_options, 4) - 1]  # never narrower than AC-EVAL's own A-D
    text = response.replace("\r\n", "#").replace("\n", "#").strip()
    if not text:
        return EMPTY
    letters = set(re.findall(rf"\b[A-{last}]\b", text)) or set(re.findall(rf"[A-{last}]", text))
    if len(letters) == 1:
        return letters.pop()
    if any(p.search(text) for p in _NO_ANSWER):
        return NO_ANSWER
    for pattern in _patterns(last):
        found = pattern.findall(text)
        if found:
            return found[0] if len(set(found)) == 1 else AMBIGUOUS
    return UNMATCHED


def extract_letters(response: str, n_options: int) -> set[str]:
    """All option letters mentioned as standalone tokens (for multiple-answer questions)."""
    allowed = OPTION_LETTERS[:max(n_options, 1)]
    return set(re.findall(rf"(?<![A-Za-z])([{allowed}])(?![A-Za-z])", response))


def extract_label(response: str, labels: list[str]) -> str | None:
    """The label mentioned first; at the same position the longest wins (隐含正面 over 正面)."""
    hits = [(response.find(lab), -len(lab), lab) for lab in labels if lab and lab in response]
    return min(hits)[2] if hits else None
