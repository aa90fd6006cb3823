"""The benchmarks' n-gram index, built once, and what a set of matched n-grams means per item.

Every item has two fields (the C-Eval split of input and label contamination):
- input: its context and question, what a model is shown;
- label: its gold as text (for a multiple-choice item the text of the right option(s), not the
  letter) and its references.
Distractor options belong to neither. Each part of a field (context, question, each option, each
reference) is keyed on its own, so no n-gram spans two parts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.contamination.ngrams import keyed
from pipeline.schema import OPTION_LETTERS

FIELDS = ("input", "label")
MCQ_FORMATS = ("mcq_single", "mcq_multi")
# the columns of the items table the index reads
ITEM_COLUMNS = ["item_id", "benchmark", "task", "format", "context", "question", "choices", "answer", "references"]
# bump when the key, the hashing or the field split change: cached shard scans are keyed by it
INDEX_VERSION = "1"


def field_parts(item: dict[str, Any]) -> dict[str, list[str]]:
    """The texts of an item's input and label fields."""
    gold = item.get("answer") or ""
    choices = list(item.get("choices") or [])
    if item.get("format") in MCQ_FORMATS and choices and gold:
        picked = [choices[OPTION_LETTERS.index(c)] for c in gold.upper()
                  if c in OPTION_LETTERS and OPTION_LETTERS.index(c) < len(choices)]
        gold_parts = picked or [gold]
    else:
        gold_parts = [gold]
    return {"input": [t for t in (item.get("context"), item.get("question")) if t],
            "label": [t for t in [*gold_parts, *(item.get("references") or [])] if t]}


@dataclass
class ItemIndex:
    """Every n-gram of every item field, and the sorted distinct hashes a corpus is looked up in."""
    n: int
    items: list[dict[str, Any]]       # item_id, benchmark, task of each item, in order
    unit_item: np.ndarray             # per unit (item x field): the item's index
    unit_field: np.ndarray            # per unit: 0 input, 1 label
    gram_unit: np.ndarray             # per item n-gram: its unit
    gram_part: np.ndarray             # per item n-gram: its part (runs do not cross parts)
    gram_pos: np.ndarray              # per item n-gram: its position in the key
    gram_hash: np.ndarray             # per item n-gram: its hash
    hashes: np.ndarray                # sorted distinct hashes: what a corpus is looked up in
    digest: str                       # of n and `hashes`: a scan of a corpus file is valid for it

    @property
    def units(self) -> int:
        return len(self.unit_item)


def build_index(items: Sequence[dict[str, Any]], n: int) -> ItemIndex:
    texts, part_unit = [], []
    unit_item, unit_field = [], []
    for i, item in enumerate(items):
        for f, field in enumerate(FIELDS):
            unit = len(unit_item)
            unit_item.append(i)
            unit_field.append(f)
            for text in field_parts(item)[field]:
                texts.append(text)
                part_unit.append(unit)
    key = keyed(texts)
    pos, gram_hash = key.hashes(n)
    part = key.text_of[pos] if len(pos) else np.empty(0, dtype=np.int64)
    part_unit_arr = np.asarray(part_unit, dtype=np.int64)
    hashes = np.unique(gram_hash)
    digest = hashlib.sha256(f"{INDEX_VERSION}|{n}|".encode() + hashes.tobytes()).hexdigest()[:16]
    return ItemIndex(
        n=n, items=[{k: item.get(k) for k in ("item_id", "benchmark", "task")} for item in items],
        unit_item=np.asarray(unit_item, dtype=np.int64), unit_field=np.asarray(unit_field, dtype=np.int64),
        gram_unit=part_unit_arr[part] if len(part) else np.empty(0, dtype=np.int64), gram_part=part,
        gram_pos=pos, gram_hash=gram_hash, hashes=hashes, digest=digest)


@dataclass
class UnitOverlap:
    ngrams: np.ndarray      # per unit: its n-grams
    matched: np.ndarray     # per unit: those found in the corpus
    longest: np.ndarray     # per unit: characters covered by its longest run of consecutive matched n-grams
    evidence: np.ndarray    # per unit: the hash of the first n-gram of that run (0 when none)


def overlap(index: ItemIndex, matched_hashes: np.ndarray) -> UnitOverlap:
    """Per unit: how many of its n-grams the corpus holds, and its longest run of them."""
    units = index.units
    found = _isin_sorted(index.gram_hash, np.sort(matched_hashes))
    ngrams = np.bincount(index.gram_unit, minlength=units)
    matched = np.bincount(index.gram_unit[found], minlength=units)
    longest = np.zeros(units, dtype=np.int64)
    evidence = np.zeros(units, dtype=np.uint64)
    hit = np.flatnonzero(found)
    if len(hit):
        # a run continues when the previous matched n-gram is the one just before, in the same part
        cont = np.zeros(len(hit), dtype=bool)
        cont[1:] = ((hit[1:] == hit[:-1] + 1)
                    & (index.gram_part[hit[1:]] == index.gram_part[hit[:-1]])
                    & (index.gram_pos[hit[1:]] == index.gram_pos[hit[:-1]] + 1))
        run_id = np.cumsum(~cont) - 1
        run_len = np.bincount(run_id)
        run_first = hit[~cont]
        run_unit = index.gram_unit[run_first]
        # per unit, its longest run (the first of equal ones): sort by unit, then length descending
        order = np.lexsort((np.arange(len(run_len)), -run_len, run_unit))
        first_of_unit = order[np.concatenate(([True], run_unit[order][1:] != run_unit[order][:-1]))]
        best_unit = run_unit[first_of_unit]
        longest[best_unit] = run_len[first_of_unit] + index.n - 1
        evidence[best_unit] = index.gram_hash[run_first[first_of_unit]]
    return UnitOverlap(ngrams, matched, longest, evidence)


def _isin_sorted(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    if not len(table) or not len(values):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return table[at] == values


class Lookup:
    """Membership in the index's hashes: a bitmap of their top bits rules out almost every corpus
    n-gram with one array read; only the few that pass are binary-searched."""
    BITS = 26   # 64 MiB of bools: a 3M-hash index sets ~4% of them

    def __init__(self, hashes: np.ndarray):
        self.hashes = hashes
        self.shift = np.uint64(64 - self.BITS)
        present = np.zeros(1 << self.BITS, dtype=bool)
        if len(hashes):
            present[(hashes >> self.shift).astype(np.int64)] = True
        self.present = present

    def __call__(self, values: np.ndarray) -> np.ndarray:
        if not len(self.hashes) or not len(values):
            return np.zeros(len(values), dtype=bool)
        mask = self.present[(values >> self.shift).astype(np.int64)]
        maybe = np.flatnonzero(mask)
        if len(maybe):
            mask[maybe] = _isin_sorted(values[maybe], self.hashes)
        return mask
