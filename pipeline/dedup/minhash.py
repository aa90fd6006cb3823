"""MinHash, LSH banding and exact verification, vectorised over all keys at once.

Keys are cut into character n-grams (`shingle_hashes`); `signatures` computes the same MinHash
values as datasketch's MinHash (affine32 permutations, same seed) for every key in a few numpy
passes; `candidate_pairs` gives the pairs MinHashLSH would return, from one sort per band; and
`verified_pairs` keeps a candidate only if the exact Jaccard similarity of its shingle sets
reaches the threshold, so LSH can be tuned for recall (`lsh_bands`) and false positives cost
little. The equality with datasketch is tested (tests/unit/dedup/test_dedup_script.py); the speed-up over
its one-MinHash-per-item loop is measured by perf/dedup.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from pipeline.dedup.ngrams import POLY, Concat, batches, gram_hashes, sorted_unique
from pipeline.dedup.params import DedupParams, lsh_bands


def _mix64(h: np.ndarray) -> None:
    """splitmix64 finalizer, in place. Polynomial hashes of overlapping n-grams are related; fed
    to MinHash as they are, their minima agree far more often than the sets do (7x the LSH
    candidates on real keys), so shingle hashes are mixed once."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)


def shingle_hashes(keys: Sequence[str], params: DedupParams) -> tuple[np.ndarray, np.ndarray]:
    """Character n-gram hashes of every key, concatenated, and the offsets of each key's slice.

    5-grams (short_ngram for keys shorter than short_len); a key shorter than its n is one
    shingle; an empty key has none. Repeats inside one key are kept (MinHash ignores them).
    Keys are hashed in batches (ngrams.batches) straight into the one output array."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    n_of = np.where(lengths < params.short_len, params.short_ngram, params.ngram)
    counts = np.where(lengths >= n_of, lengths - n_of + 1, (lengths > 0).astype(np.int64))
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    for start, end in batches(lengths):
        part = out[offsets[start]:offsets[end]]
        _shingles_into(part, Concat.of(keys[start:end]), n_of[start:end], offsets[start:end + 1] - offsets[start])
        _mix64(part)
    return out, offsets


def _shingles_into(out: np.ndarray, concat: Concat, n_of: np.ndarray, offsets: np.ndarray) -> None:
    lengths = concat.lengths
    for n in np.unique(n_of).tolist():
        which = (n_of == n) & (lengths >= n)
        key_of, pos = concat.windows(n, which)
        out[offsets[key_of] + pos - concat.starts[key_of]] = gram_hashes(concat.codes, n)[pos]
    short = np.flatnonzero((lengths > 0) & (lengths < n_of))
    whole = concat.codes[concat.starts[short]].astype(np.uint64)  # the whole key is the one shingle
    whole *= POLY
    for k in range(1, int(lengths[short].max(initial=1))):
        more = lengths[short] > k
        whole[more] += concat.codes[concat.starts[short[more]] + k]
        whole[more] *= POLY
    out[offsets[short]] = whole


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
    """datasketch's own permutations for (num_perm, seed): those `MinHash(num_perm, seed).permutations`
    draws for its default affine32 scheme (an odd `a`, any `b`), drawn here the same way rather
    than imported: datasketch pulls in scipy, some 38 MB that a `wenheng run` would carry to its
    end for two arrays (tests/unit/dedup/test_dedup_script.py checks them against datasketch's)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a.reshape(-1, 1), b.reshape(-1, 1)


def signatures(hashes: np.ndarray, offsets: np.ndarray, params: DedupParams,
               chunk: int = 8192) -> np.ndarray:
    """MinHash values (one row per key with shingles) equal to datasketch's
    `MinHash(num_perm, seed, hashfunc=int).update_batch(_fold32(shingles))`, computed for all
    keys at once: permutation-major blocks of about `chunk` shingles stay in cache."""
    a, b = _permutations(params.num_perm, params.seed)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    starts = offsets[nonempty]
    values = np.empty(len(hashes), dtype=np.uint32)
    for s0 in range(0, len(hashes), 1 << 22):  # in slices: the 64-bit temporaries stay small
        values[s0:s0 + (1 << 22)] = _fmix32(_fold32(hashes[s0:s0 + (1 << 22)]))
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
def _band_ranges(params: DedupParams) -> list[tuple[int, int]]:
    bands, rows = lsh_bands(params.lsh_threshold, params.num_perm, params.lsh_recall)
    return [(i * rows, (i + 1) * rows) for i in range(bands)]


def candidate_pairs(sigs: np.ndarray, indices: Sequence[int], params: DedupParams) -> np.ndarray:
    """Pairs (i < j) of `indices` that share a bucket in at least one MinHashLSH band.

    The same pairs as inserting every signature into a datasketch MinHashLSH with these bands
    and querying it (tested), but bucketed with one sort per band instead of a Python call per
    item and band, which made insertion the slowest step of the whole run."""
    indices = np.asarray(indices, dtype=np.int64)
    found = []
    for start, end in _band_ranges(params):
        band = sigs[indices, start:end].astype(np.uint64)
        bucket = np.zeros(len(indices), dtype=np.uint64)
        for column in band.T:  # 64-bit digest of the band; a collision only adds a candidate
            bucket *= POLY
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
    pairs, _ = sorted_unique(np.concatenate(found))
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
    # each involved key's shingle set (repeats dropped), sorted, key after key; one sort per
    # batch of keys, since the key number is the high part of what is sorted
    sets = []
    for start, end in batches(lengths - 1, _VERIFY_BLOCK):
        owner = np.repeat(np.arange(start, end, dtype=np.uint64), lengths[start:end])
        owner <<= np.uint64(40)
        owner |= hashes[_ranges(offsets[involved[start:end]], lengths[start:end])] >> np.uint64(24)
        sets.append(sorted_unique(owner)[0])
        del owner
    distinct = np.concatenate(sets)
    del sets
    size = np.bincount((distinct >> np.uint64(40)).astype(np.int64), minlength=len(involved))
    first = np.concatenate(([0], np.cumsum(size)[:-1]))
    distinct &= np.uint64((1 << 40) - 1)
    values = distinct
    found = []
    # blocks of pairs with at most _VERIFY_BLOCK shingles between them (and pair numbers that
    # fit in 24 bits): the concatenated sets of a block are what gets sorted
    volume = size[local[candidates[:, 0]]] + size[local[candidates[:, 1]]]
    for start, end in batches(np.minimum(volume, _VERIFY_BLOCK) - 1, _VERIFY_BLOCK):
        for block in range(start, end, 1 << 20):
            found += _verify_block(candidates[block:min(end, block + (1 << 20))], local, size, first, values,
                                   threshold)
    return found


_VERIFY_BLOCK = 1 << 23  # shingles per sort in verified_pairs: ~64 MB per uint64 array


def _verify_block(pairs: np.ndarray, local: np.ndarray, size: np.ndarray, first: np.ndarray,
                  values: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for one block of candidate pairs, from their sorted shingle sets."""
    a, b = local[pairs[:, 0]], local[pairs[:, 1]]
    number = np.arange(len(pairs), dtype=np.uint64) << np.uint64(40)
    tagged = np.concatenate([np.repeat(number, size[a]) | values[_ranges(first[a], size[a])],
                             np.repeat(number, size[b]) | values[_ranges(first[b], size[b])]])
    seen, count = sorted_unique(tagged)
    shared = np.bincount((seen[count == 2] >> np.uint64(40)).astype(np.int64), minlength=len(pairs))
    similarity = shared / (size[a] + size[b] - shared)
    keep = np.flatnonzero(similarity >= threshold)
    return list(zip(pairs[keep, 0].tolist(), pairs[keep, 1].tolist(), similarity[keep].tolist()))


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions starts[k] .. starts[k] + lengths[k] - 1 for every k, concatenated."""
    total = int(lengths.sum())
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total)
