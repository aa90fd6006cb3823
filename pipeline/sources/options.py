"""Option letters: the letter an adapter gives the option at an index (A, B, C, …), in the
order of pipeline.schema.OPTION_LETTERS that prompts and scorers use."""

from __future__ import annotations

from pipeline.rows import OPTION_LETTERS


def letter(index: int) -> str:
    return OPTION_LETTERS[index]
