"""Simplified / traditional script: detection and variants, with the official OpenCC binding.

The original text is never modified; variants are separate rows (see schema.ITEM_VARIANTS)."""

from __future__ import annotations

from functools import cache
from typing import Any

import opencc


@cache
def converter(config: str) -> opencc.OpenCC:
    """OpenCC configs: s2t / t2s (OpenCC standard), s2tw / s2hk (regional forms), t2tw, ..."""
    return opencc.OpenCC(config)


def convert(text: str | None, config: str) -> str | None:
    return None if text is None else converter(config).convert(text)


def detect_script(text: str) -> str:
    """simplified / traditional / mixed, or neutral when no character differs between scripts.

    A character that t2s changes is traditional-only; one that s2t changes is simplified-only.
    A few stray forms (OpenCC normalises some shared variants) do not make a text mixed."""
    as_simplified, as_traditional = convert(text, "t2s"), convert(text, "s2t")
    if len(as_simplified) == len(text) == len(as_traditional):
        n_trad = sum(a != b for a, b in zip(text, as_simplified))
        n_simp = sum(a != b for a, b in zip(text, as_traditional))
    else:  # phrase-level conversion changed the length: fall back to whole-text comparison
        n_trad, n_simp = int(as_simplified != text), int(as_traditional != text)
    if n_trad == n_simp == 0:
        return "neutral"
    if n_trad >= 3 * n_simp:
        return "traditional"
    if n_simp >= 3 * n_trad:
        return "simplified"
    return "mixed"


# Variant name -> OpenCC config. "traditional" is OpenCC's own standard; the regional forms
# (Taiwan: 為 裡 著, Hong Kong: 為 裏 説) are there for models trained mostly on one of them.
VARIANT_CONFIGS = {
    "original": None,
    "simplified": "t2s",
    "traditional": "s2t",
    "traditional_tw": "s2tw",
    "traditional_hk": "s2hk",
}
TEXT_FIELDS = ("context", "question", "answer")
LIST_FIELDS = ("choices", "references")


def make_variant(item: dict[str, Any], variant: str, config: str | None = None) -> dict[str, Any]:
    """One item's text in one script. `config` overrides the variant's default (e.g. s2twp)."""
    if config is None and variant not in VARIANT_CONFIGS:
        raise ValueError(f"unknown script variant {variant!r}; expected one of {', '.join(VARIANT_CONFIGS)}")
    config = config or VARIANT_CONFIGS[variant]
    row = {"item_id": item["item_id"], "variant": variant, "benchmark": item["benchmark"]}
    for name in TEXT_FIELDS:
        row[name] = item.get(name) if config is None else convert(item.get(name), config)
    for name in LIST_FIELDS:
        values = list(item.get(name) if item.get(name) is not None else [])
        row[name] = values if config is None else [convert(v, config) for v in values]
    return row
