"""Where an item's classical passage is: the text it quotes and asks about, which a corpus may hold
without holding the item (quoting the Analects is not leakage).

An item's passages are its context (WYWEB's passage, CP-DUE's poem, Fùxì's text) and, inside its
question, what its benchmark's layout marks as quoted. WenMind and AC-EVAL put the passage inside the
question; their layouts, written once here and named by their cards (`BenchmarkCard.passages`):
- a label before it: 内容：, 古诗词内容：, 题目：, 题干：, 原文：, 材料：, 诗句：;
- after an instruction line that ends with a colon (把文言文翻译为白话文：\\n<passage>);
- before a pointer back to it at the start (<passage>。上面句子中……, <passage> 请问这首古诗词……);
- between quotation marks: “…”, 「…」, 『…』, ‘…’ (four characters or more);
- in the answer: its quoted and labelled spans, and, for the tasks a card names, the whole answer
  (a poem recited, the next line of one).
Option lines (A、 A. A．...) are never passage. The spans are found on the raw text; the index keys
them like any text, so script and punctuation do not matter.
"""

from __future__ import annotations

import re
from typing import Any

MIN_CHARS = 4
_OPTION = re.compile(r"^\s*(?:[A-H][、.．:：)）]|[（(][A-H][)）])")
_LABELLED = re.compile(r"(?:古诗词内容|诗词内容|内容|题目|题干|原文|材料|诗句|文段|句子)\s*[:：]\s*([^\n]+)")
_QUOTED = re.compile("|".join(f"{a}([^{b}]{{{MIN_CHARS},}}){b}" for a, b in ("“”", "「」", "『』", "‘’")))
_POINTER = re.compile(r"(?:上面|上述|以上|这首|这句|此句|该句|从上面|请问这|根据上|下列|诗歌|本诗|此诗|诗中|对这)")
_OPTION_START = re.compile(r"\s[A-H][、.．]")
_ASKS = re.compile(r"^\s*问题|[？?]\s*$")   # match(): a 问题 line; search(): also one that ends asking


def context_passages(item: dict[str, Any]) -> list[str]:
    """The default: an item's context is its passage."""
    context = item.get("context")
    return [context] if isinstance(context, str) and context.strip() else []


def question_passages(question: str | None) -> list[str]:
    """The passages a question quotes, by the layouts above."""
    if not isinstance(question, str) or not question:
        return []
    spans = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]
    spans += [m.group(1) for m in _LABELLED.finditer(question)]
    lines = question.split("\n")
    # after an instruction line ending with a colon, every line that is not an option; after
    # another first line, every line but options and the question (问题：…, or a last line asking);
    # before a question line, every line
    rest = [line for line in lines[1:] if not _OPTION.match(line)]
    if not lines[0].rstrip().endswith((":", "：")):
        rest = [line for k, line in enumerate(rest) if not (_ASKS.match(line) or
                                                             (k == len(rest) - 1 and _ASKS.search(line)))]
    spans += rest
    if any(_ASKS.match(line) for line in lines[1:]):
        spans.append(lines[0])
    head = _before_pointer(lines[0])
    if head:
        spans.append(head)
    return [_without_options(s).strip() for s in spans if len(s.strip()) >= MIN_CHARS]


def answer_passages(answer: str | None) -> list[str]:
    """What an answer quotes: its quoted and labelled spans (内容：…, “…”)."""
    if not isinstance(answer, str) or not answer:
        return []
    spans = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(answer)]
    spans += [m.group(1) for m in _LABELLED.finditer(answer)]
    return [s.strip() for s in spans if len(s.strip()) >= MIN_CHARS]


def _before_pointer(line: str) -> str | None:
    """`<passage>。上面句子中…` -> the passage (a pointer back to it after at least MIN_CHARS)."""
    m = _POINTER.search(line, MIN_CHARS)
    return line[:m.start()] if m else None


def _without_options(text: str) -> str:
    """A span cut before the first inline option (`… A、… B、…`)."""
    m = _OPTION_START.search(text)
    return text[:m.start()] if m else text


def item_passages(item: dict[str, Any]) -> list[str]:
    """An item's passages as its card says (`BenchmarkCard.passages`; a benchmark no card names:
    its context)."""
    from pipeline.benchmarks import cards

    card = cards().get(item.get("benchmark"))
    find = card.passages if card is not None and card.passages is not None else context_passages
    return find(item)


def quoted_passages(item: dict[str, Any]) -> list[str]:
    """Context, the question's quoted passages and the answer's: for benchmarks that quote inside
    the question."""
    return context_passages(item) + question_passages(item.get("question")) + answer_passages(item.get("answer"))


def classical(questions: frozenset[str] = frozenset(), answers: frozenset[str] = frozenset()):
    """`quoted_passages`, plus the whole question of the tasks in `questions` (the question is the
    poem or the sentence asked about) and the whole answer of those in `answers` (the answer is a
    classical text itself: a poem recited or written to keywords, the next line, the original)."""
    def passages(item: dict[str, Any]) -> list[str]:
        found = quoted_passages(item)
        for tasks, name in ((questions, "question"), (answers, "answer")):
            text = item.get(name)
            if item.get("task") in tasks and isinstance(text, str) and text.strip():
                found.append(text)
        return found
    return passages
