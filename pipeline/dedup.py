"""Near-duplicate detection and cross-benchmark contamination.

Each item becomes a match key: NFKC, OpenCC t2s, no whitespace, punctuation or symbols, and
without the instruction template its task repeats on every item (learnt from the data, per
benchmark and task). Keys are cut into character n-grams, hashed with datasketch's MinHash
(affine32 permutations), candidate pairs come from MinHashLSH banding and are kept only if
their exact Jaccard similarity reaches the threshold: `threshold` for duplicates within a
benchmark (union-find turns them into clusters), `contamination_threshold` for pairs across
benchmarks (reported, never dropped). Exact duplicates (same question, choices and answer) are
matched on the fields themselves.

Originals are never modified: keys exist only for matching. The heavy steps run on numpy arrays
over the whole corpus at once, so the cost per item stays small (benchmarks/dedup.py).
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from pipeline.schema import answer_hash, content_hash
from pipeline.script import convert

POLICIES = ("flag", "drop")


@dataclass(frozen=True)
class DedupParams:
    # Defaults measured on the public files (23,811 items: WenMind, AC-EVAL, WYWEB tlc, fspc,
    # xuci, glner, wywrc; exact Jaccard of all pairs; benchmarks/dedup.py --calibrate).
    # Within one task, 17 of the 18 pairs at 0.80-0.90 have different gold answers (one passage
    # or option list, another question), none of the 5 at >= 0.90: duplicates need 0.9. Across
    # benchmarks, the pairs from 0.5 up that we read were one passage under other questions
    # (AC-EVAL summarization <- WYWRC, WenMind NER <- GLNER): contamination is reported from 0.5.
    # With bands tuned for 99% recall at 0.5, 64 permutations found every real pair and every
    # edited copy just above the threshold (128 and 256 missed one or two), in half the time:
    # 0.65 s against 0.88 s and 1.34 s for MinHash, LSH and verification.
    num_perm: int = 64
    threshold: float = 0.9      # exact Jaccard for two items of one benchmark to be duplicates
    contamination_threshold: float = 0.5  # exact Jaccard for a pair across benchmarks to be reported
    ngram: int = 5
    short_ngram: int = 3        # for keys shorter than short_len: 5-grams of a short text are too few
    short_len: int = 30
    template_ngram: int = 4     # template fragments are runs of n-grams of this size ...
    template_share: float = 0.5  # ... found in at least this share of a task's items ...
    template_min_items: int = 3  # ... and in at least this many, so a duplicate pair is never a template
    lsh_recall: float = 0.99     # chance that a pair right at the lower threshold becomes a candidate
    seed: int = 1               # datasketch MinHash seed

    @property
    def lsh_threshold(self) -> float:
        return min(self.threshold, self.contamination_threshold)


# ---------------------------------------------------------------------------------------------
# Match keys

def item_text(item: dict[str, Any]) -> str:
    """What two items must share to be duplicates: context, question and options."""
    return "\n".join(filter(None, [item.get("context"), item.get("question"), *(item.get("choices") or [])]))


_DROP_CATEGORIES = ("Cc", "Cf", "Cs")


def _is_content(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] not in "PZS" and category not in _DROP_CATEGORIES


@cache
def _char_key(ch: str) -> str:
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
    return "".join(_char_key(c) for c in unicodedata.normalize("NFKC", text))


_DELETE = np.uint32(0xFFFFFFFF)
_SLOW = np.uint32(0xFFFFFFFE)
_NL = 10


def match_keys(texts: Sequence[str]) -> list[str]:
    """Keys of many texts at once: NFKC -> OpenCC t2s -> no whitespace, punctuation or symbols.

    Every distinct character is converted once and the corpus is mapped through a lookup table;
    texts with characters whose normal form depends on context take the per-text path."""
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
        key = _char_key(ch)
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


def match_key(text: str) -> str:
    """NFKC -> OpenCC t2s -> drop whitespace, punctuation and symbols. Only for matching."""
    return match_keys([text])[0]


# ---------------------------------------------------------------------------------------------
# Vectorised n-gram hashing over a concatenation of keys ("\n" between keys)

_POLY = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the polynomial rolling hash


def _mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer. Polynomial hashes of overlapping n-grams are related; fed to
    MinHash as they are, their minima agree far more often than the sets do (7x the LSH
    candidates on real keys), so shingle hashes are mixed once."""
    h = h ^ (h >> np.uint64(30))
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


def _gram_hashes(codes: np.ndarray, n: int) -> np.ndarray:
    """64-bit polynomial hash of the n characters starting at each position
    (len(codes) - n + 1 values): sum of c_k * P^(n-k). Every character is multiplied at least
    once, which carries it into the high bits, so the top bits are the well-mixed ones: callers
    take those, never the low bits."""
    m = len(codes) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    h = codes[:m] * _POLY
    for k in range(1, n):
        h += codes[k:k + m]
        h *= _POLY
    return h


def _sorted_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and their counts, by sorting (much faster than numpy's hash-based
    np.unique on millions of uint64 values)."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered, np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[first], np.diff(np.append(first, len(ordered)))


@dataclass
class _Concat:
    """Keys joined by "\n" as code points, with each key's start and length."""
    codes: np.ndarray   # uint64
    starts: np.ndarray  # int64, one per key
    lengths: np.ndarray  # int64, one per key

    @classmethod
    def of(cls, keys: Sequence[str]) -> _Concat:
        codes = np.frombuffer("\n".join(keys).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
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


def strip_templates(keys: Sequence[str], groups: Sequence[Hashable], params: DedupParams) -> list[str]:
    """Remove each group's instruction template from its keys.

    A template fragment is any run of `template_ngram`-grams that occurs in at least
    `template_share` of a group's items (and in at least `template_min_items` of them): prefixes
    ("把文言文翻译为白话文"), suffixes ("请问这首古诗词的体裁是什么"), fixed option lists and the
    fixed parts of fill-in templates alike. What is left is the item's own content. An item that
    would lose everything (a group of identical items) keeps its full key."""
    if not keys:
        return []
    q = params.template_ngram
    group_ids: dict[Hashable, int] = {}
    group_of = np.array([group_ids.setdefault(g, len(group_ids)) for g in groups], dtype=np.int64)
    sizes = np.bincount(group_of, minlength=len(group_ids))
    needed = np.maximum(np.ceil(params.template_share * sizes), params.template_min_items)
    concat = _Concat.of(keys)
    key_of, pos = concat.windows(q)
    if not len(pos):
        return list(keys)
    # top 40 bits of the n-gram hash, made distinct per group
    grams = (_gram_hashes(concat.codes, q)[pos] ^ (group_of[key_of].astype(np.uint64) * _POLY)) >> np.uint64(24)

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
    kept = concat.codes[~covered].astype(np.uint32)
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
    distinct, _ = _sorted_unique(codes)
    values, counts = _sorted_unique(distinct >> np.uint64(low_bits))
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


def _per_key_sum(flags: np.ndarray, concat: _Concat) -> np.ndarray:
    """How many positions of each key are set in `flags`."""
    if not len(concat.starts):
        return np.zeros(0, dtype=np.int64)
    return np.add.reduceat(flags, concat.starts, dtype=np.int64)  # a key's slice plus its separator


def content_keys(items: Sequence[dict[str, Any]], params: DedupParams = DedupParams()) -> list[str]:
    """Each item's match key without its task's template (benchmark and task define the group)."""
    keys = match_keys([item_text(it) for it in items])
    return strip_templates(keys, [(it.get("benchmark"), it.get("task")) for it in items], params)


def shingle_hashes(keys: Sequence[str], params: DedupParams) -> tuple[np.ndarray, np.ndarray]:
    """Character n-gram hashes of every key, concatenated, and the offsets of each key's slice.

    5-grams (short_ngram for keys shorter than short_len); a key shorter than its n is one
    shingle; an empty key has none. Repeats inside one key are kept (MinHash ignores them)."""
    concat = _Concat.of(keys)
    lengths = concat.lengths
    n_of = np.where(lengths < params.short_len, params.short_ngram, params.ngram)
    counts = np.where(lengths >= n_of, lengths - n_of + 1, (lengths > 0).astype(np.int64))
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    for n in np.unique(n_of).tolist():
        which = (n_of == n) & (lengths >= n)
        key_of, pos = concat.windows(n, which)
        out[offsets[key_of] + pos - concat.starts[key_of]] = _gram_hashes(concat.codes, n)[pos]
    short = np.flatnonzero((lengths > 0) & (lengths < n_of))
    whole = concat.codes[concat.starts[short]] * _POLY  # the whole key is the one shingle
    for k in range(1, int(lengths[short].max(initial=1))):
        more = lengths[short] > k
        whole[more] += concat.codes[concat.starts[short[more]] + k]
        whole[more] *= _POLY
    out[offsets[short]] = whole
    return _mix64(out), offsets


def _fold32(hashes: np.ndarray) -> np.ndarray:
    """The 32-bit value handed to MinHash (datasketch's hashfunc output for one shingle)."""
    return (hashes >> np.uint64(32)).astype(np.uint32)


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3 finalizer, as datasketch applies it before its affine32 permutations."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = MinHash(num_perm=num_perm, seed=seed).permutations
    return a.reshape(-1, 1), b.reshape(-1, 1)


def signatures(hashes: np.ndarray, offsets: np.ndarray, params: DedupParams,
               chunk: int = 8192) -> np.ndarray:
    """MinHash values (one row per key with shingles) equal to datasketch's
    `MinHash(num_perm, seed, hashfunc=int).update_batch(_fold32(shingles))`, computed for all
    keys at once: permutation-major blocks of about `chunk` shingles stay in cache."""
    a, b = _permutations(params.num_perm, params.seed)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    starts = offsets[nonempty]
    values = _fmix32(_fold32(hashes))
    out = np.empty((params.num_perm, len(nonempty)), dtype=np.uint32)
    cuts = np.unique(np.append(np.searchsorted(starts, np.arange(0, len(values), chunk)), len(starts)))
    buf = np.empty((params.num_perm, chunk), dtype=np.uint32)
    for i0, i1 in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        s0 = int(starts[i0])
        s1 = int(starts[i1]) if i1 < len(starts) else len(values)
        if s1 - s0 > buf.shape[1]:
            buf = np.empty((params.num_perm, s1 - s0), dtype=np.uint32)
        block = buf[:, :s1 - s0]
        np.multiply(a, values[s0:s1], out=block)
        np.add(block, b, out=block)
        out[:, i0:i1] = np.minimum.reduceat(block, starts[i0:i1] - s0, axis=1)
    result = np.full((len(offsets) - 1, params.num_perm), 0xFFFFFFFF, dtype=np.uint32)  # empty MinHash
    result[nonempty] = out.T
    return result


@lru_cache(maxsize=32)
def lsh_bands(threshold: float, num_perm: int, recall: float) -> tuple[int, int]:
    """MinHashLSH (bands, rows): the longest bands for which a pair at exactly `threshold`
    still shares a band with probability >= `recall`, 1 - (1 - t^r)^b.

    datasketch's own choice balances false positives against false negatives, which puts the
    middle of the S-curve on the threshold: at 0.8 with 128 permutations it gives (9, 13),
    which finds a pair at J = 0.81 less than half the time. Exact verification removes false
    positives cheaply, so the bands are tuned for recall instead."""
    best = None
    for rows in range(1, num_perm // 2 + 1):
        hit = threshold ** rows
        bands = 2 if hit >= 1.0 else max(2, math.ceil(math.log(1 - recall) / math.log1p(-hit)))
        if bands * rows > num_perm:
            break  # longer bands need even more of them
        best = (bands, rows)
    if best is None:
        raise ValueError(f"num_perm={num_perm} is too small for threshold {threshold} at recall {recall}")
    return best


def _band_ranges(params: DedupParams) -> list[tuple[int, int]]:
    bands, rows = lsh_bands(params.lsh_threshold, params.num_perm, params.lsh_recall)
    return [(i * rows, (i + 1) * rows) for i in range(bands)]


def lsh_index(sigs: np.ndarray, indices: Sequence[int], params: DedupParams) -> MinHashLSH:
    """A datasketch MinHashLSH holding `indices` (keys are the indices), e.g. to query new items."""
    lsh = MinHashLSH(num_perm=params.num_perm,
                     params=lsh_bands(params.lsh_threshold, params.num_perm, params.lsh_recall))
    with lsh.insertion_session() as session:
        for i in indices:
            session.insert(i, LeanMinHash(seed=params.seed, hashvalues=sigs[i], scheme="affine32"),
                           check_duplication=False)
    return lsh


def candidate_pairs(sigs: np.ndarray, indices: Sequence[int], params: DedupParams) -> np.ndarray:
    """Pairs (i < j) of `indices` that share a bucket in at least one MinHashLSH band.

    The same pairs as inserting every signature into lsh_index() and querying it (tested), but
    bucketed with one sort per band instead of a Python call per item and band, which made
    insertion the slowest step of the whole run."""
    indices = np.asarray(indices, dtype=np.int64)
    found = []
    for start, end in _band_ranges(params):
        band = sigs[indices, start:end].astype(np.uint64)
        bucket = np.zeros(len(indices), dtype=np.uint64)
        for column in band.T:  # 64-bit digest of the band; a collision only adds a candidate
            bucket *= _POLY
            bucket += column
        order = np.argsort(bucket, kind="stable")
        ordered = bucket[order]
        run_start = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        run_size = np.diff(np.append(run_start, len(ordered)))
        two = run_start[run_size == 2]  # most shared buckets hold a pair: no loop for those
        a, b = indices[order[two]], indices[order[two + 1]]
        found.append((np.minimum(a, b) << 32) | np.maximum(a, b))
        for first, size in zip(run_start[run_size > 2].tolist(), run_size[run_size > 2].tolist()):
            members = np.sort(indices[order[first:first + size]])
            left, right = _pair_positions(size)
            found.append((members[left] << 32) | members[right])
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    pairs, _ = _sorted_unique(np.concatenate(found))
    return np.stack([pairs >> 32, pairs & 0xFFFFFFFF], axis=1)


@lru_cache(maxsize=256)
def _pair_positions(size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(size, k=1)


def verified_pairs(hashes: np.ndarray, offsets: np.ndarray, candidates: np.ndarray,
                   threshold: float) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for the candidates whose exact Jaccard similarity of shingle sets reaches
    the threshold. All pairs at once: both sets of every pair go into one sorted array, where a
    shingle the two share shows up twice."""
    if not len(candidates):
        return []
    involved = np.unique(candidates)
    local = np.full(len(offsets) - 1, -1, dtype=np.int64)
    local[involved] = np.arange(len(involved))
    lengths = np.diff(offsets)[involved]
    owner = np.repeat(np.arange(len(involved), dtype=np.uint64), lengths)
    shingles = hashes[_ranges(offsets[involved], lengths)] >> np.uint64(24)
    distinct, _ = _sorted_unique((owner << np.uint64(40)) | shingles)  # sets: repeats dropped
    size = np.bincount((distinct >> np.uint64(40)).astype(np.int64), minlength=len(involved))
    first = np.concatenate(([0], np.cumsum(size)[:-1]))
    values = distinct & np.uint64((1 << 40) - 1)
    found = []
    for block in range(0, len(candidates), 1 << 20):  # pair numbers must fit in 24 bits
        pairs = candidates[block:block + (1 << 20)]
        a, b = local[pairs[:, 0]], local[pairs[:, 1]]
        number = np.arange(len(pairs), dtype=np.uint64) << np.uint64(40)
        tagged = np.concatenate([np.repeat(number, size[a]) | values[_ranges(first[a], size[a])],
                                 np.repeat(number, size[b]) | values[_ranges(first[b], size[b])]])
        seen, count = _sorted_unique(tagged)
        shared = np.bincount((seen[count == 2] >> np.uint64(40)).astype(np.int64), minlength=len(pairs))
        similarity = shared / (size[a] + size[b] - shared)
        keep = np.flatnonzero(similarity >= threshold)
        found += zip(pairs[keep, 0].tolist(), pairs[keep, 1].tolist(), similarity[keep].tolist())
    return found


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions starts[k] .. starts[k] + lengths[k] - 1 for every k, concatenated."""
    total = int(lengths.sum())
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total)


# ---------------------------------------------------------------------------------------------
# Pairs and clusters

@dataclass
class Analysis:
    """What dedup finds in a list of items (all indices refer to that list).

    Within a benchmark, items of one task are compared on their template-free keys; items of
    different tasks on their full keys, because there the instruction is what tells the two
    questions apart (the same poem to translate, or to name). Across benchmarks the
    template-free keys are compared: that is where a benchmark re-wraps another one's text."""
    keys: list[str]                                # template-free match keys
    full_keys: list[str]                           # match keys with the template
    same_key: list[list[int]]                      # same benchmark, task and key
    duplicates: list[tuple[int, int, float]]       # verified pairs within a benchmark
    contamination: list[tuple[int, int, float]]    # verified pairs across benchmarks
    exact: list[list[int]]                         # same question, context, choices and answer
    timings: dict[str, float] = field(default_factory=dict)


def analyse(items: Sequence[dict[str, Any]], params: DedupParams = DedupParams()) -> Analysis:
    """Keys, candidates and verified pairs for a list of items; cluster() turns it into rows.
    `timings` says how long each step took (benchmarks/dedup.py prints it)."""
    timings: dict[str, float] = {}
    tick = _Stopwatch(timings)
    full_keys = match_keys([item_text(it) for it in items])
    keys = strip_templates(full_keys, [(it.get("benchmark"), it.get("task")) for it in items], params)
    tick("keys")
    # items with the same key are hashed once
    key_ids: dict[str, int] = {}
    members: list[list[int]] = []
    for i, key in enumerate(keys):
        if key:
            k = key_ids.setdefault(key, len(key_ids))
            if k == len(members):
                members.append([])
            members[k].append(i)
    hashes, offsets = shingle_hashes(list(key_ids), params)
    tick("shingles")
    sigs = signatures(hashes, offsets, params)
    tick("minhash")
    candidates = candidate_pairs(sigs, range(len(key_ids)), params)
    tick("lsh")
    near = verified_pairs(hashes, offsets, candidates, params.lsh_threshold)
    groups = [(members[k], None, 1.0) for k in range(len(members)) if len(members[k]) > 1]
    groups += [(members[u], members[v], sim) for u, v, sim in near]
    same_key, duplicates, contamination = _classify(items, full_keys, groups, params)
    tick("verify")
    exact = exact_duplicate_groups(items)
    tick("exact")
    return Analysis(keys, full_keys, same_key, duplicates, contamination, exact, timings)


def _classify(items, full_keys, groups, params):
    """Item pairs behind matching keys -> same-key groups, duplicates and contamination.
    `groups` holds (items, None, 1.0) for the items of one key and (items, items, similarity)
    for two keys that matched."""
    benchmark = [it.get("benchmark") for it in items]
    task = [it.get("task") for it in items]
    same_key: list[list[int]] = []
    duplicates, contamination, cross_task = [], [], []
    for left, right, sim in groups:
        if right is None:  # one key: split it by benchmark and task, then pair the parts
            parts: dict[tuple, list[int]] = defaultdict(list)
            for i in left:
                parts[(benchmark[i], task[i])].append(i)
            same_key += [part for part in parts.values() if len(part) > 1]
            pairs = [(i, j) for a, b in _pairs(list(parts.values())) for i in a for j in b]
        else:
            pairs = [(i, j) for i in left for j in right]
        for i, j in pairs:
            i, j = min(i, j), max(i, j)
            if benchmark[i] != benchmark[j]:
                if sim >= params.contamination_threshold:
                    contamination.append((i, j, sim))
            elif task[i] == task[j]:
                if sim >= params.threshold:
                    duplicates.append((i, j, sim))
            else:
                cross_task.append((i, j))
    if cross_task:
        judged = sorted({x for pair in cross_task for x in pair})
        hashes, offsets = shingle_hashes([full_keys[i] for i in judged], params)
        position = {item: p for p, item in enumerate(judged)}
        checked = np.array([[position[i], position[j]] for i, j in cross_task], dtype=np.int64)
        for p, q, sim in verified_pairs(hashes, offsets, checked, params.threshold):
            duplicates.append((judged[p], judged[q], sim))
    return same_key, sorted(duplicates), sorted(contamination)


def _pairs(parts: list[list[int]]):
    return [(parts[x], parts[y]) for x in range(len(parts)) for y in range(x + 1, len(parts))]


class _Stopwatch:
    def __init__(self, timings: dict[str, float]):
        self.timings, self.last = timings, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - self.last
        self.last = now


def exact_duplicate_groups(items: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Items with the same question, context, choices and answer (field matching on hashes)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[(it.get("content_hash") or content_hash(it), it.get("answer_hash") or answer_hash(it))].append(i)
    return [members for members in groups.values() if len(members) > 1]


def near_duplicate_pairs(items: Sequence[dict[str, Any]], params: DedupParams = DedupParams()
                         ) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for every verified pair, within or across benchmarks, i < j."""
    analysis = analyse(items, params)
    pairs = {(i, j): 1.0 for group in analysis.same_key for i, j in combinations(group, 2)}
    pairs.update({(i, j): sim for i, j, sim in analysis.duplicates + analysis.contamination})
    return sorted((i, j, sim) for (i, j), sim in pairs.items())


def cluster(items: Sequence[dict[str, Any]], params: DedupParams = DedupParams(),
            analysis: Analysis | None = None):
    """Returns (cluster_rows, contamination_rows) in the shapes of schema.DEDUP_CLUSTERS and
    schema.CONTAMINATION.

    Clusters never cross benchmarks: a cluster holds duplicates within one benchmark, its id is
    its lowest item_id, and that item is its representative (the copy kept under the `drop`
    policy). Only items in clusters of two or more appear. Across benchmarks nothing is
    dropped: every verified pair is a contamination row instead."""
    analysis = analysis or analyse(items, params)
    benchmark = [it["benchmark"] for it in items]
    uf = _UnionFind(len(items))
    best = np.zeros(len(items))
    exact_members = set()
    for group in analysis.same_key:
        for i in group[1:]:
            uf.union(group[0], i)
        best[group] = 1.0
    for i, j, sim in analysis.duplicates:
        uf.union(i, j)
        best[i], best[j] = max(best[i], sim), max(best[j], sim)
    exact_across = []
    for group in analysis.exact:
        per_benchmark: dict[str, list[int]] = defaultdict(list)
        for i in group:
            per_benchmark[benchmark[i]].append(i)
        for part in per_benchmark.values():
            if len(part) > 1:
                for i in part[1:]:
                    uf.union(part[0], i)
                best[part] = 1.0
                exact_members.update(part)
        exact_across += [(min(i, j), max(i, j), 1.0) for a, b in _pairs(list(per_benchmark.values()))
                         for i in a for j in b]
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(items)):
        members[uf.find(i)].append(i)
    rows = []
    for group in members.values():
        if len(group) < 2:
            continue
        cluster_id = min(items[i]["item_id"] for i in group)
        for i in group:
            rows.append({
                "item_id": items[i]["item_id"], "benchmark": benchmark[i], "cluster_id": cluster_id,
                "cluster_size": len(group), "is_representative": items[i]["item_id"] == cluster_id,
                "max_jaccard": float(best[i]), "exact_duplicate": i in exact_members,
            })
    rows.sort(key=lambda r: (r["benchmark"], r["cluster_id"], r["item_id"]))
    return rows, contamination_rows(items, analysis.contamination + exact_across)


def contamination_rows(items: Sequence[dict[str, Any]], pairs: Sequence[tuple[int, int, float]]
                       ) -> list[dict[str, Any]]:
    """One row per pair of items from different benchmarks (benchmark_a sorts first)."""
    best: dict[tuple[int, int], float] = {}
    for i, j, sim in pairs:
        a, b = sorted((i, j), key=lambda k: (items[k]["benchmark"], items[k]["item_id"]))
        best[(a, b)] = max(best.get((a, b), 0.0), sim)
    rows = [{"benchmark_a": items[a]["benchmark"], "item_a": items[a]["item_id"],
             "benchmark_b": items[b]["benchmark"], "item_b": items[b]["item_id"], "similarity": sim}
            for (a, b), sim in best.items()]
    rows.sort(key=lambda r: (r["benchmark_a"], r["benchmark_b"], r["item_a"], r["item_b"]))
    return rows


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)


# ---------------------------------------------------------------------------------------------
# Policy

def evaluation_items(items: Sequence[dict[str, Any]], cluster_rows: Sequence[dict[str, Any]],
                     policy: str = "flag") -> list[dict[str, Any]]:
    """The items to evaluate under a duplicate policy, in their original order.

    flag: every item; duplicates are only recorded in dedup_clusters.
    drop: a duplicate that is not its cluster's representative is left out, unless its gold
    answer differs from the representative's: that is a conflict to fix (conflicting_clusters),
    not a redundant copy. Clusters never cross benchmarks, so nothing is dropped because
    another benchmark has the same item."""
    if policy not in POLICIES:
        raise ValueError(f"unknown duplicate policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if policy == "flag":
        return list(items)
    answers = {it["item_id"]: it.get("answer_hash") or answer_hash(it) for it in items}
    dropped = {r["item_id"] for r in cluster_rows
               if not r["is_representative"] and answers.get(r["item_id"]) == answers.get(r["cluster_id"])}
    return [it for it in items if it["item_id"] not in dropped]


def conflicting_clusters(items: Sequence[dict[str, Any]], cluster_rows: Sequence[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
    """Clusters whose members do not all share one gold answer (for a warning check):
    [{"cluster_id", "benchmark", "item_ids"}], sorted."""
    answers = {it["item_id"]: it.get("answer_hash") or answer_hash(it) for it in items}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in cluster_rows:
        groups[(r["benchmark"], r["cluster_id"])].append(r["item_id"])
    return [{"cluster_id": cid, "benchmark": bench, "item_ids": sorted(ids)}
            for (bench, cid), ids in sorted(groups.items())
            if len({answers.get(i) for i in ids}) > 1]
