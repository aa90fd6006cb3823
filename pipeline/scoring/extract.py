"""Answer extraction from free text: option letters, label texts and fill-in blanks.

Single answer (`extract_aceval`) follows AC-EVAL's own evaluation code (MIT-licensed) exactly:
collect standalone letters, accept a unique one, else try answer patterns in order; several
distinct letters mean the answer is ambiguous. Items with more than four options (WYWEB GJC,
CP-DUE TH/ST) use the same rules over their own letter range.

Several answers (`extract_letters`, WenMind's multiple-answer MCQs). The text is NFKC-folded
(full-width letters and punctuation become ASCII) and markdown emphasis is dropped. A letter is an
upper-case option letter not touching another Latin letter (so `MCQ`, `CoT` or `I think` give
none); a run of option letters (`AC`) and letters joined by 、 , / ; 和 与 及 或 and spaces
(`A、C`, `A C`, `A和C`, `选项A与选项C`, `(A)(C)`) form one group. Each group is read in context:
  1. an answer cue right before it (`答案是`, `正确答案：`, `故选`, `我选择`, `正确选项为`) selects it;
     a negated cue (`不选`, `答案不是`) or an exclusion (`排除B`, `除了B`) excludes it;
  2. a verdict right after it in the same clause (`B项错误`, `A、C正确`, `B不对`, `D项说法有误`,
     `B可以排除`, `E是答案`), or at the end of its line when the line starts with the letter
     (`B项：……，理解错误。`), judges it;
  3. a judging phrase before it (`正确的是`, `不正确的两项是`, `错误的有：`) judges it too.
Judgements are read against the question: when the stem asks for the wrong statements
(`不正确的两项是`, see `asks_for_incorrect`), a letter judged wrong is an answer and one judged
right is not; exclusions, answer cues and `是答案`/`符合题意` mean the same either way. The answer is the last cued
group, less letters excluded after it; without a cue, the letters whose last judgement selects
them; without judgements, every letter mentioned and not excluded.

Label texts (`extract_label`, WenMind's sentiment MCQs). Labels are matched longest first at
each position (隐含正面 is not also 正面), on NFKC-folded simplified text. Mentions that are
negated (`不是正面`, `并非负面`, `而非中性`, `没有明显的负面`, `正面的说法不对`) or that only list
the label set (three or more labels in a row, as in an echoed question) are dropped. Of the rest,
an asserted mention wins over a plain one: strongest after an answer or conclusion cue in its
sentence (`答案是`, `而是`, `应为`, `综上`, `因此`, `归为`), then one that opens the response,
stands alone on a line, is bold, follows `是`/`为`/`属于`/`表达了`, or ends its sentence; a
mention in a concessive clause (`虽然…`) or describing something (`负面意象`, `正面色彩`) counts
least. Ties go to the last mention.

Fill-in blanks (`split_blanks`, `blank_hits`). A gold answer is cut into blanks at numbered
labels when it has two or more (`（1）…（2）…`, `①…②…`, `第一空：…`, `空1：…`, `1. …` lines),
else at line breaks, `；` and `|`, else at sentence punctuation, so each line of a poem is one
blank. A blank is hit when its normalised text is inside the normalised response with blank
labels removed; when the response labels as many blanks as the gold has (`第一空：…第二空：…`),
blank i must be inside the response's part i. WenMind judges fill-in items with its
scoring-points prompt (score = points obtained / points in the reference, paper §4.3(d)), so a
fill-in item gets partial credit: the share of blanks hit (see `pipeline.scoring.rules`)."""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from pipeline.schema import OPTION_LETTERS
from pipeline.script import convert

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


def extract_letters(response: str, n_options: int, asks_wrong: bool = False) -> set[str]:
    """The option letters a multiple-answer response chooses (rules in the module docstring).
    `asks_wrong`: the question asks for the wrong statements (`asks_for_incorrect`)."""
    allowed = OPTION_LETTERS[:max(n_options, 1)]
    text = convert(_fold(response), "t2s")
    groups = [_read_group(text, start, end, allowed, asks_wrong) for start, end in _groups(text, allowed)]
    cued = [g for g in groups if g[2] == _CUED]
    if cued:
        start, letters, _ = cued[-1]
        return letters - {x for s, ls, kind in groups if kind == _EXCLUDED and s > start for x in ls}
    excluded = {x for _, ls, kind in groups if kind == _EXCLUDED for x in ls}
    verdicts: dict[str, bool] = {}
    for _, letters, kind in groups:
        if kind in (_PICKED, _DROPPED):
            verdicts.update(dict.fromkeys(letters, kind == _PICKED))
    if verdicts:
        return {x for x, chosen in verdicts.items() if chosen} - excluded
    return {x for _, ls, kind in groups if kind == _MENTIONED for x in ls} - excluded


def asks_for_incorrect(question: str, choices: list[str] | None = None) -> bool:
    """Whether a multiple-answer stem asks for the wrong statements (`下列…不正确的两项是`)."""
    for choice in choices or []:
        if choice:
            question = question.replace(choice, " ")
    return bool(_ASKS_WRONG.search(convert(_fold(question), "t2s")))


# --- multiple answers -------------------------------------------------------------------------

# how a group reads: answer cue / excluded / verdict picks it / verdict drops it / only mentioned
_CUED, _EXCLUDED, _PICKED, _DROPPED, _MENTIONED = "cued", "excluded", "picked", "dropped", "mentioned"
_CLAUSE_END = "。;!?\n"
_POS_WORDS = r"正确|恰当|准确|合理|妥当|对"
_NEG_WORDS = r"不正确|不恰当|不准确|不合理|不妥当?|不对|错误|有误|错"
_ASKS_WRONG = re.compile(
    rf"(?:{_NEG_WORDS}|不符合(?:原文|原意|文意|诗意|词意)?)的(?:[一二两三四五]?项|选项|一组|是|有)")
_ANSWER_CUE = re.compile(
    r"(?:(?:最终|正确|标准|参考|本题|此题)?答案|(?<!作)答)(?:应该?|应当|就|即|则)?(?:是|为|选|选择)?\s*[:]?\s*$"
    r"|(?:(?<!不)正确的?(?:选项|答案)|(?<!不)符合题意的?(?:选项|答案|是|有|项)?)(?:应该?)?(?:是|为)?\s*[:]?\s*$"
    r"|(?:选|选择|选出|挑选|勾选)(?:的是|了|出)?\s*[:]?\s*$|(?:而是|应为|应是|应该是|应当是)\s*$"
    r"|(?:answer is|answers are|answer:)\s*$", re.IGNORECASE)
_NEGATED = re.compile(r"(?:不|没有?|未|别|勿|非)(?:应该?|应当|能|可以?|该|会|要|必|用)?\s*$")
_POLAR_CUE = re.compile(
    rf"(?P<word>{_NEG_WORDS}|{_POS_WORDS})(?P<tail>的?(?:选项|说法|表述|理解|分析|赏析|鉴赏|[一二两三四五]?项)*\s*"
    r"(?:是|为|有|包括|[:])?)\s*$")
_EXCLUSION = re.compile(
    r"(?:排除|除去|去掉|不选|不是|并非|而非|不包括|不含|不可能是|不符合题意的?(?:选项|项|是|有)?(?:是|为)?\s*[:]?)\s*$")
_VERDICT = re.compile(
    r"(?P<excluded>排除|不选|淘汰|不入选|不当选|不是(?:正确)?答案|不是正确选项|不应选|不能选|不该选|不符合题意|不合题意"
    r"|不符合要求)"
    r"|(?P<chosen>(?:是|为)(?:正确)?答案|入选|当选|应选|要选|是正确选项|符合题意|符合要求)"
    r"|(?P<right>没错|没有错|无误|不错|没有?问题|并非错误|不是错误|[√✓✔])"
    r"|(?P<wrong>(?:并非|不是|并不)(?:正确|恰当|准确)|不正确|不恰当|不准确|不合理|不妥当?|不符合|不对|不成立|欠妥|失当"
    r"|错误|有误|谬误|错(?![落开综])|[×✗✘❌])"
    r"|(?P<right2>正确|恰当|准确|合理|妥当|成立|符合|对(?=[的了,。;!\s]|$))")
_HEADER_LEAD = re.compile(r"^[\s>\-+•·#\d.、()]*(?:选项)?$")


@cache
def _group_pattern(allowed: str) -> re.Pattern:
    run = rf"(?<![A-Za-z])[{allowed}]+(?![A-Za-z])"
    unit = rf"(?:选项\s*)?[(\[【]?{run}[)\]】]?(?:\s*(?:选项|项))?"
    sep = r"(?:[ \t]*(?:以及|还有|[、,/+&;和与及或跟]|and)[ \t]*|[ \t]+)?"
    return re.compile(rf"{unit}(?:{sep}{unit})*")


def _groups(text: str, allowed: str) -> list[tuple[int, int]]:
    """Spans of letter groups. A comma between two pieces of two or more letters each ends a group
    (`A和C，B、D错误` is two groups; `A,C,E` is one)."""
    spans = []
    for match in _group_pattern(allowed).finditer(text):
        pieces = [(match.start() + m.start(), match.start() + m.end())
                  for m in re.finditer(r"[^,]+", match.group()) if m.group().strip()]
        start, end = pieces[0]
        for next_start, next_end in pieces[1:]:
            if min(_count(text[start:end], allowed), _count(text[next_start:next_end], allowed)) >= 2:
                spans.append((start, end))
                start = next_start
            end = next_end
        spans.append((start, end))
    return spans


def _count(piece: str, allowed: str) -> int:
    return len(re.findall(f"[{allowed}]", piece))


def _read_group(text: str, start: int, end: int, allowed: str, asks_wrong: bool) -> tuple[int, set[str], str]:
    letters = set(re.findall(f"[{allowed}]", text[start:end]))
    line_start = text.rfind("\n", 0, start) + 1
    clause_start = max(text.rfind(ch, 0, start) for ch in _CLAUSE_END) + 1
    before = text[max(clause_start, start - 24):start]
    cue = _ANSWER_CUE.search(before)
    if cue:
        return start, letters, _EXCLUDED if _NEGATED.search(before[:cue.start()]) else _CUED
    polar = _POLAR_CUE.search(before)
    if polar and polar.group("tail").strip():
        wrong = polar.group("word").startswith("不") or polar.group("word") in ("错误", "有误", "错")
        return start, letters, _CUED if wrong == asks_wrong else _EXCLUDED
    if _EXCLUSION.search(before):
        return start, letters, _EXCLUDED
    after = re.split(r"[,。;!?\n]", text[end:end + 20], maxsplit=1)[0]
    after = re.split(rf"(?<![A-Za-z])[{allowed}](?![A-Za-z])", after, maxsplit=1)[0]
    verdict = _VERDICT.search(after)
    header = text[start:end].endswith((")", "]", "】")) or re.match(r"\s*[:.、]", text[end:])
    if verdict is None and header and _HEADER_LEAD.match(text[line_start:start]):
        line_end = text.find("\n", end)
        verdicts = list(_VERDICT.finditer(text[end:line_end if line_end >= 0 else len(text)]))
        verdict = verdicts[-1] if verdicts else None
    if verdict is None:
        return start, letters, _MENTIONED
    kind = verdict.lastgroup
    if kind in ("chosen", "excluded"):
        return start, letters, _PICKED if kind == "chosen" else _EXCLUDED
    right = kind in ("right", "right2")
    return start, letters, _PICKED if right != asks_wrong else _DROPPED


# --- label texts --------------------------------------------------------------------------------

_LABEL_NEGATOR = re.compile(
    r"(?:不是|并非|而非|绝非|不属于|不算是?|算不上|谈不上|称不上|不能算是?|不能说是|不能归为|不应该?是|不宜归为"
    r"|不像是?|没有|并无|毫无|既无|也无|不带|不含|排除|不选|否定了?)[^,。;!?\n]{0,4}$")
_LABEL_NEGATED_AFTER = re.compile(
    r"^[*”\"'」』】)]*(?:的?(?:说法|判断|观点|看法|理解|结论|分类|选项))?,?(?:是|也|并|则|就)?"
    r"(?:不对|错误|错的|不准确|不恰当|不合适|不成立|不妥|欠妥|站不住|说不通|不符合)"
    r"|^[^,。;!?\n]{0,2}?(?:可以|应该?|应当|被)?排除|^\s*\?\s*不[,是对]")
_RHETORICAL = re.compile(r"^[*”\"'」』】)]*的?[吗么]")
_STRONG_CUE = re.compile(
    r"答案|最终|综上|总之|总的来说|总体|整体|因此|所以|因而|(?<![\u4e00-\u9fff])故|可见|由此|结论|而是|应为|应是|应该是"
    r"|应当是|应属|应归|判断为|判定为|归为|归类为|归入|定为|最符合|最恰当|最合适|最贴切|更符合|更接近|选择|[我应故]选"
    r"|选:|答:|我认为")
_ASSERT_BEFORE = re.compile(
    r"(?:是|为|属于|属|选|选择|:|(?:表达|抒发|流露|体现|传达|透露|表现|蕴含|带有|呈现|充满)(?:出|了|着)?(?:一种|一股)?)"
    r"\s*[*“\"'「『【(]*$")
_ENDS_SENTENCE = re.compile(r"^[*”\"'」』】)]*(?:的)?\s*(?:[。!\n]|$)")
_CONCESSIVE = re.compile(r"^\s*(?:虽然|虽说|虽|尽管|即使|即便|固然|纵然|哪怕)")
_DESCRIBING = re.compile(r"^的?(?:意象|词语|词汇|字眼|色彩|因素|成分|元素|描写|景物|景象|氛围|意味|一面|方面|意义)")
_LEADING = re.compile(r"^[\s*#“\"'「『【(]*(?:(?:最终)?答案|答|情感(?:倾向|类别)?|结论)?\s*[:]?[\s*“\"'「『【(]*$")
_LISTED_GAP = re.compile(r"^[\s“”\"'「」『』【】*、,/和与及或]*$")


def extract_label(response: str, labels: list[str]) -> str | None:
    """The label the response asserts (rules in the module docstring), or None."""
    folded = {convert(_fold(lab), "t2s"): lab for lab in labels if lab}
    if not folded or not response:
        return None
    # markdown bold stays: a bold label is an asserted one
    text = convert(unicodedata.normalize("NFKC", response).replace("`", ""), "t2s")
    pattern = "|".join(re.escape(lab) for lab in sorted(folded, key=len, reverse=True))
    mentions = list(re.finditer(pattern, text))
    listed: set[int] = set()
    run = [0]
    for i in range(1, len(mentions) + 1):
        if i < len(mentions) and _LISTED_GAP.match(text[mentions[i - 1].end():mentions[i].start()]):
            run.append(i)
            continue
        if len(run) >= 3:
            listed.update(run)
        run = [i]
    best: tuple[int, int, str] | None = None
    previous_end = 0
    for i, m in enumerate(mentions):
        start, end = m.span()
        scope_start, previous_end = previous_end, end
        if i in listed:
            continue
        after = text[end:end + 16]
        if (_LABEL_NEGATOR.search(text[scope_start:start]) and not _RHETORICAL.match(after)) \
                or _LABEL_NEGATED_AFTER.match(after):
            continue
        strength = _label_strength(text, start, end)
        if best is None or (strength, start) >= best[:2]:
            best = (strength, start, folded[m.group()])
    return best[2] if best else None


def _label_strength(text: str, start: int, end: int) -> int:
    sentence_start = max(text.rfind(ch, 0, start) for ch in _CLAUSE_END) + 1
    clause_start = max(text.rfind(ch, 0, start) for ch in _CLAUSE_END + ",:") + 1
    sentence, clause, after = text[sentence_start:start], text[clause_start:start], text[end:end + 16]
    if _CONCESSIVE.match(clause) or _DESCRIBING.match(after):
        return 0
    if _STRONG_CUE.search(sentence):
        return 3
    line_start = text.rfind("\n", 0, start) + 1
    bold = text[:start].endswith("**") and after.startswith("**")
    if (bold or _LEADING.match(text[:start]) or _ASSERT_BEFORE.search(clause) or _ENDS_SENTENCE.match(after)
            or (text[line_start:start].strip(" *") == "" and after.split("\n", 1)[0].strip(" *。") == "")):
        return 2
    return 1


# --- fill-in blanks -----------------------------------------------------------------------------

_BLANK_LABEL = re.compile(
    r"第\s*[一二三四五六七八九十\d]+\s*个?\s*(?:空|处|小题)\s*(?:答案)?\s*[:]?"
    r"|(?<![\u4e00-\u9fff])空\s*(?:\d{1,2}|[一二三四五六七八九十]{1,2}\s*:)\s*[:]?"
    r"|\(\s*\d{1,2}\s*\)\s*[:]?|\[\d{1,2}\]\s*[:]?"
    r"|(?m:^)\s*\d{1,2}\s*[.、]\s*")


def normalise(text: str) -> str:
    """For containment checks: NFKC, simplified script, no spaces, punctuation or control characters."""
    text = convert(unicodedata.normalize("NFKC", text), "t2s")
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZC")


def split_blanks(gold: str) -> list[str]:
    """The gold's blanks, normalised: numbered parts, else lines, else sentence pieces."""
    folded = _fold_blanks(gold)
    labels = list(_BLANK_LABEL.finditer(folded))
    if len(labels) >= 2:
        ends = [m.start() for m in labels[1:]] + [len(folded)]
        parts = [folded[m.end():e] for m, e in zip(labels, ends)]
    else:
        parts = re.split(r"[\n;|]+", folded)
        if sum(bool(normalise(p)) for p in parts) < 2:
            parts = re.split(r"[,.。?!、:;\s]+", folded)
    return [n for n in map(normalise, parts) if n]


def blank_hits(response: str, gold: str) -> list[bool]:
    """For each gold blank (`split_blanks`), whether the response has it."""
    blanks = split_blanks(gold)
    folded = _fold_blanks(response)
    labels = list(_BLANK_LABEL.finditer(folded))
    if len(labels) == len(blanks) >= 2:
        ends = [m.start() for m in labels[1:]] + [len(folded)]
        return [b in normalise(folded[m.end():e]) for b, m, e in zip(blanks, labels, ends)]
    text = normalise(_BLANK_LABEL.sub("", folded))
    return [b in text for b in blanks]


def _fold_blanks(text: str) -> str:
    """NFKC, with circled numbers as `(n)` (NFKC alone would make them bare digits)."""
    return unicodedata.normalize("NFKC", text.translate(_CIRCLED))


_CIRCLED = {ord(ch): f"({n})" for n, ch in enumerate("①②③④⑤⑥⑦⑧⑨⑩", 1)}


def _fold(text: str) -> str:
    """NFKC (full-width letters and punctuation to ASCII), without markdown emphasis or code marks."""
    return re.sub(r"\*\*|__|`+", "", unicodedata.normalize("NFKC", text))
