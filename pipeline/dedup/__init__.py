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
over the whole corpus at once, so the cost per item stays small (perf/dedup.py).

One module per step, around one config (params.DedupParams):
    keys      match keys and template stripping
    ngrams    vectorised n-gram hashing shared by keys and minhash
    minhash   shingles, MinHash signatures, LSH candidates, exact verification
    clusters  pairs -> clusters (union-find) and contamination rows
    signatures  keys and MinHash per item, reused by content; clusters and contamination from them
    policy    flag / drop: which items are evaluated
"""

import importlib

# Each name is imported from its module on first use: pipeline.config imports dedup.params and
# dedup.policy, which run this file first, and the steps import numpy and pandas (0.4 s of
# start-up for the definitions).
_MODULE_OF = {"analyse": "clusters", "cluster": "clusters", "DedupParams": "params",
              "conflicting_clusters": "policy", "evaluation_items": "policy", "SIGNATURES_SCHEMA": "signatures",
              "clusters_from_signatures": "signatures", "contamination_from_signatures": "signatures",
              "item_signatures": "signatures"}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
