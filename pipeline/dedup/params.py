"""DedupParams: every knob of wenheng's dedup in one frozen config, with the measurement behind
each default. Keys (template stripping), MinHash/LSH and the pair classification all read it.

A run's values come from `dedup:` in the sources file (pipeline/config/sources.py,
`load_dedup_params`: one key per field, each in its range; a key left out keeps the default
here), read by each dedup asset (assets/items.py) and shown on its materializations."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class DedupParams:
    # Defaults measured on the public files (23,811 items: WenMind, AC-EVAL, WYWEB tlc, fspc,
    # xuci, glner, wywrc; exact Jaccard of all pairs; perf/dedup.py --calibrate).
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
