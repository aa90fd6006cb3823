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

from pipeline.dedup.clusters import analyse, cluster
from pipeline.dedup.params import DedupParams
from pipeline.dedup.policy import conflicting_clusters, evaluation_items
from pipeline.dedup.signatures import (
    SIGNATURES_SCHEMA,
    clusters_from_signatures,
    contamination_from_signatures,
    item_signatures,
)

__all__ = ["SIGNATURES_SCHEMA", "DedupParams", "analyse", "cluster", "clusters_from_signatures",
           "conflicting_clusters", "contamination_from_signatures", "evaluation_items", "item_signatures"]
