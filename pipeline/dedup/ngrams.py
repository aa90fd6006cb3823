"""Vectorised n-gram hashing over many keys at once, shared by template stripping (keys.py) and
shingling (minhash.py).

The keys are joined into one array of code points (a newline between two keys), so the n-grams
of all keys are hashed by a few numpy operations instead of a Python loop per key;
`Concat.windows` says which positions belong to which key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

POLY = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the polynomial rolling hash
BATCH_CHARS = 1 << 22  # characters per batch: the per-character arrays of one batch stay ~100 MB


def batches(lengths: Sequence[int] | np.ndarray, budget: int = BATCH_CHARS) -> list[tuple[int, int]]:
    """Consecutive (start, end) ranges of keys with about `budget` characters each (a longer key
    is a batch of its own). Work that is done per key gives the same result batch by batch, and
    its temporary arrays scale with the batch instead of the corpus."""
    total = np.cumsum(np.asarray(lengths, dtype=np.int64) + 1)
    cuts, start = [], 0
    while start < len(total):
        base = int(total[start - 1]) if start else 0
        end = max(int(np.searchsorted(total, base + budget, side="right")), start + 1)
        cuts.append((start, end))
        start = end
    return cuts


def gram_hashes(codes: np.ndarray, n: int) -> np.ndarray:
    """64-bit polynomial hash of the n characters starting at each position
    (len(codes) - n + 1 values): sum of c_k * P^(n-k). Every character is multiplied at least
    once, which carries it into the high bits, so the top bits are the well-mixed ones: callers
    take those, never the low bits."""
    m = len(codes) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    h = codes[:m].astype(np.uint64)
    h *= POLY
    for k in range(1, n):
        h += codes[k:k + m]
        h *= POLY
    return h


def sorted_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and their counts, by sorting (much faster than numpy's hash-based
    np.unique on millions of uint64 values)."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered, np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[first], np.diff(np.append(first, len(ordered)))


@dataclass
class Concat:
    """Keys joined by "\n" as code points, with each key's start and length."""
    codes: np.ndarray   # uint32 code points (gram_hashes widens them to 64 bits)
    starts: np.ndarray  # int64, one per key
    lengths: np.ndarray  # int64, one per key

    @classmethod
    def of(cls, keys: Sequence[str]) -> Concat:
        codes = np.frombuffer("\n".join(keys).encode("utf-32-le"), dtype=np.uint32)
        lengths = np.array(list(map(len, keys)), dtype=np.int64)
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(lengths[:-1] + 1, out=starts[1:])
        return cls(codes, starts, lengths)

    def windows(self, n: int, which: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(key index, start position) of every n-gram inside the keys (optionally only `which`)."""
        keys = np.arange(len(self.starts)) if which is None else np.flatnonzero(which)
        counts = np.maximum(self.lengths[keys] - n + 1, 0)
        key_of = np.repeat(keys, counts)
        first = np.repeat(self.starts[keys] - (np.cumsum(counts) - counts), counts)
        return key_of, first + np.arange(len(key_of))
