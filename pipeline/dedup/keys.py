"""Match keys: the form of an item's text that dedup compares, never shown or stored.

A key is the item's context, question and options after NFKC, OpenCC t2s (character by
character), lower case and without whitespace, punctuation or symbols, so script and
typography never hide a duplicate. `strip_templates` then removes the instruction template a
task repeats on every item, learnt from the data per benchmark and task: otherwise two short
questions under one long stem would look alike.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Sequence
from functools import cache
from typing import Any

import numpy as np

from pipeline.dedup.ngrams import BATCH_CHARS, POLY, Concat, batches, gram_hashes, sorted_unique
from pipeline.dedup.params import DedupParams
from pipeline.script import convert


def item_text(item: dict[str, Any]) -> str:
    """What two items must share to be duplicates: context, question and options."""
    return "\n".join(filter(None, [item.get("context"), item.get("question"), *(item.get("choices") or [])]))


_DROP_CATEGORIES = ("Cc", "Cf", "Cs")


def _is_content(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] not in "PZS" and category not in _DROP_CATEGORIES


@cache
def char_key(ch: str) -> str:
    """One character's key form: NFKC, OpenCC t2s, lower case; "" for punctuation and the like.

    t2s is applied character by character on purpose: a key must map a character the same way
    wherever it stands, which phrase-level conversion does not (it keeps 乾 in 乾隆)."""
    out = convert(unicodedata.normalize("NFKC", ch), "t2s").lower()
    return "".join(c for c in out if _is_content(c))


def _needs_context(ch: str) -> bool:
    """Characters whose NFKC form depends on their neighbours (combining marks, Hangul jamo)."""
    code = ord(ch)
    return (unicodedata.category(ch)[0] == "M" or 0x1100 <= code <= 0x11FF
            or 0xA960 <= code <= 0xA97F or 0xD7B0 <= code <= 0xD7FF)


def _slow_key(text: str) -> str:
    return "".join(char_key(c) for c in unicodedata.normalize("NFKC", text))


_DELETE = np.uint32(0xFFFFFFFF)
_SLOW = np.uint32(0xFFFFFFFE)
_NL = 10


def match_keys(texts: Sequence[str]) -> list[str]:
    """Keys of many texts at once: NFKC -> OpenCC t2s -> no whitespace, punctuation or symbols.

    Every distinct character is converted once and the corpus is mapped through a lookup table;
    texts with characters whose normal form depends on context take the per-text path. Texts go
    in batches of about BATCH_CHARS characters: a key depends on its own text only."""
    keys: list[str] = []
    for start, end in batches([len(t) for t in texts]):
        keys += _match_keys(texts[start:end])
    return keys


def _match_keys(texts: Sequence[str]) -> list[str]:
    if not texts:
        return []
    big = "\n".join(t.replace("\n", " ") for t in texts)
    codes = np.frombuffer(big.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return [""] * len(texts)
    present = np.flatnonzero(np.bincount(codes))
    table = np.empty(int(present[-1]) + 1, dtype=np.uint32)
    for code in present.tolist():
        ch = chr(code)
        if code == _NL:
            table[code] = _NL
            continue
        key = char_key(ch)
        if len(key) > 1 or _needs_context(ch):
            table[code] = _SLOW
        else:
            table[code] = ord(key) if key else _DELETE
    mapped = table[codes]
    slow = mapped == _SLOW
    slow_items = []
    if slow.any():
        separators = np.flatnonzero(codes == _NL)
        slow_items = np.unique(np.searchsorted(separators, np.flatnonzero(slow))).tolist()
        mapped[slow] = _DELETE
    keys = mapped[mapped != _DELETE].tobytes().decode("utf-32-le").split("\n")
    for i in slow_items:
        keys[i] = _slow_key(texts[i])
    return keys


def strip_templates(keys: Sequence[str], groups: Sequence[Hashable], params: DedupParams) -> list[str]:
    """Remove each group's instruction template from its keys.

    A template fragment is any run of `template_ngram`-grams that occurs in at least
    `template_share` of a group's items (and in at least `template_min_items` of them): prefixes
    ("把文言文翻译为白话文"), suffixes ("请问这首古诗词的体裁是什么"), fixed option lists and the
    fixed parts of fill-in templates alike. What is left is the item's own content. An item that
    would lose everything (a group of identical items) keeps its full key.

    Groups are independent, so whole groups go in batches of about BATCH_CHARS characters (in
    input order within each batch), which bounds the memory of the per-character arrays."""
    if not keys:
        return []
    group_ids: dict[Hashable, int] = {}
    group_of = np.array([group_ids.setdefault(g, len(group_ids)) for g in groups], dtype=np.int64)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    order = np.argsort(group_of, kind="stable")
    group_end = np.cumsum(np.bincount(group_of, minlength=len(group_ids)))
    group_start = group_end - np.bincount(group_of, minlength=len(group_ids))
    group_chars = np.bincount(group_of, weights=lengths + 1, minlength=len(group_ids))
    out = list(keys)
    for start, end in batches(group_chars - 1, BATCH_CHARS):  # runs of whole groups
        members = np.sort(order[group_start[start]:group_end[end - 1]])
        stripped = _strip_batch([keys[i] for i in members.tolist()], group_of[members], params)
        for i, key in zip(members.tolist(), stripped):
            out[i] = key
    return out


def _strip_batch(keys: list[str], group_ids: np.ndarray, params: DedupParams) -> list[str]:
    """strip_templates on whole groups: `group_ids` are the corpus-wide ids (the n-gram hashes
    are made distinct per group with them)."""
    q = params.template_ngram
    ids, group_of = np.unique(group_ids, return_inverse=True)
    group_of = group_of.reshape(-1)
    sizes = np.bincount(group_of, minlength=len(ids))
    needed = np.maximum(np.ceil(params.template_share * sizes), params.template_min_items)
    concat = Concat.of(keys)
    key_of, pos = concat.windows(q)
    if not len(pos):
        return list(keys)
    # top 40 bits of the n-gram hash, made distinct per group
    grams = gram_hashes(concat.codes, q)[pos]
    grams ^= ids[group_of[key_of]].astype(np.uint64) * POLY
    grams >>= np.uint64(24)

    # Candidates come from a sample of each large group (a fragment in half of the items is in
    # far more than 30% of any 128 of them); their exact frequency is then counted on all items.
    sample = np.flatnonzero(_spread_sample(group_of, sizes, _TEMPLATE_SAMPLE)[key_of])
    sampled, count, holder = _runs((grams[sample] << np.uint64(24)) | key_of[sample].astype(np.uint64), 24)
    group = group_of[holder]
    sample_size = np.minimum(sizes, _TEMPLATE_SAMPLE)[group]
    scale = np.where(sizes[group] > _TEMPLATE_SAMPLE, 0.6, 1.0)
    candidates = sampled[count >= np.maximum(np.floor(scale * params.template_share * sample_size),
                                             np.minimum(params.template_min_items, sample_size))]
    if not len(candidates):
        return list(keys)
    hit, which = _lookup(candidates, grams)
    _, df, holder = _runs((which.astype(np.uint64) << np.uint64(40)) | key_of[hit].astype(np.uint64), 40)
    frequent = df >= needed[group_of[holder]]
    template_starts = pos[hit[frequent[which]]]

    covered = np.zeros(len(concat.codes), dtype=bool)
    for k in range(q):
        covered[template_starts + k] = True
    left = concat.lengths - _per_key_sum(covered, concat)
    for i in np.flatnonzero((left == 0) & (concat.lengths > 0)).tolist():
        covered[concat.starts[i]:concat.starts[i] + concat.lengths[i]] = False
    kept = concat.codes[~covered]
    return kept.tobytes().decode("utf-32-le").split("\n")


_TEMPLATE_SAMPLE = 128


def _spread_sample(group_of: np.ndarray, sizes: np.ndarray, per_group: int) -> np.ndarray:
    """Up to `per_group` items of each group, evenly spread over the group in input order."""
    order = np.argsort(group_of, kind="stable")
    group_start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rank = np.empty(len(group_of), dtype=np.int64)
    rank[order] = np.arange(len(group_of)) - group_start[group_of[order]]
    size = sizes[group_of]
    return (size <= per_group) | ((rank * per_group) // size != ((rank - 1) * per_group) // size)


def _runs(codes: np.ndarray, low_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For (value << low_bits | item) codes: each distinct value (sorted), the number of distinct
    items holding it, and one of those items."""
    distinct, _ = sorted_unique(codes)
    values, counts = sorted_unique(distinct >> np.uint64(low_bits))
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return values, counts, (distinct[first] & np.uint64((1 << low_bits) - 1)).astype(np.int64)


def _lookup(table: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of `values` found in the sorted `table`, and where each is in the table.
    A bitmap on the top bits first rules out most values without a binary search."""
    bits = 20
    present = np.zeros(1 << bits, dtype=bool)
    present[(table >> np.uint64(40 - bits)).astype(np.int64)] = True
    maybe = np.flatnonzero(present[(values >> np.uint64(40 - bits)).astype(np.int64)])
    at = np.minimum(np.searchsorted(table, values[maybe]), len(table) - 1)
    found = table[at] == values[maybe]
    return maybe[found], at[found]


def _per_key_sum(flags: np.ndarray, concat: Concat) -> np.ndarray:
    """How many positions of each key are set in `flags`."""
    if not len(concat.starts):
        return np.zeros(0, dtype=np.int64)
    # a key's slice plus its separator; the appended False is the slice of an empty last key
    return np.add.reduceat(np.append(flags, False), concat.starts, dtype=np.int64)
