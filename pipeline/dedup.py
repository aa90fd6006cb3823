"""Near-duplicate detection: a script- and punctuation-blind match key, character n-gram
MinHashes (datasketch), LSH candidates verified by exact Jaccard, union-find clusters."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Sequence

import numpy as np
from datasketch import MinHash, MinHashLSH

from pipeline.script import convert


@dataclass(frozen=True)
class DedupParams:
    num_perm: int = 128
    threshold: float = 0.8      # verified Jaccard needed to call two items duplicates
    ngram: int = 5
    short_ngram: int = 3        # for keys shorter than short_len: 5-grams of a short text are too few
    short_len: int = 30


def match_key(text: str) -> str:
    """NFKC -> OpenCC t2s -> drop whitespace, punctuation and symbols. Only for matching."""
    text = convert(unicodedata.normalize("NFKC", text), "t2s")
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZSC")


def item_text(item: dict[str, Any]) -> str:
    return "\n".join(filter(None, [item.get("context"), item.get("question"), *(item.get("choices") or [])]))


def shingles(key: str, params: DedupParams) -> set[str]:
    n = params.short_ngram if len(key) < params.short_len else params.ngram
    if len(key) <= n:
        return {key} if key else set()
    return {key[i:i + n] for i in range(len(key) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


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


def near_duplicate_pairs(items: Sequence[dict[str, Any]], params: DedupParams) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for every verified pair, i < j, in item order."""
    sets = [shingles(match_key(item_text(it)), params) for it in items]
    encoded = [[s.encode("utf-8") for s in sorted(sh)] for sh in sets]
    hashes = MinHash.bulk(encoded, num_perm=params.num_perm)
    lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm)
    with lsh.insertion_session() as session:
        for i, mh in enumerate(hashes):
            if sets[i]:
                session.insert(i, mh, check_duplication=False)
    pairs = []
    for i, mh in enumerate(hashes):
        if not sets[i]:
            continue
        for j in lsh.query(mh):
            if j > i:
                sim = jaccard(sets[i], sets[j])
                if sim >= params.threshold:
                    pairs.append((i, j, sim))
    return sorted(pairs)


def exact_duplicate_pairs(items: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """Same question, choices and answer (field matching on hashes)."""
    groups: dict[tuple, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault((it["content_hash"], it["answer_hash"]), []).append(i)
    return [pair for members in groups.values() for pair in combinations(members, 2)]


def cluster(items: Sequence[dict[str, Any]], params: DedupParams = DedupParams()):
    """Returns (cluster_rows, contamination_rows). Only items in clusters of two or more appear.

    Within a benchmark the lowest item_id of a cluster is its representative; across benchmarks
    nothing is dropped, each pair is reported as contamination instead."""
    near = near_duplicate_pairs(items, params)
    exact = set(exact_duplicate_pairs(items))
    uf = _UnionFind(len(items))
    best = np.zeros(len(items))
    for i, j, sim in near:
        uf.union(i, j)
        best[i], best[j] = max(best[i], sim), max(best[j], sim)
    for i, j in exact:
        uf.union(i, j)
        best[i] = best[j] = 1.0
    members: dict[int, list[int]] = {}
    for i in range(len(items)):
        members.setdefault(uf.find(i), []).append(i)
    exact_members = {i for pair in exact for i in pair}
    rows = []
    for group in members.values():
        if len(group) < 2:
            continue
        cluster_id = min(items[i]["item_id"] for i in group)
        first_per_benchmark: dict[str, str] = {}
        for i in group:
            b, iid = items[i]["benchmark"], items[i]["item_id"]
            first_per_benchmark[b] = min(first_per_benchmark.get(b, iid), iid)
        for i in group:
            it = items[i]
            rows.append({
                "item_id": it["item_id"], "benchmark": it["benchmark"], "cluster_id": cluster_id,
                "cluster_size": len(group),
                "is_representative": first_per_benchmark[it["benchmark"]] == it["item_id"],
                "max_jaccard": float(best[i]), "exact_duplicate": i in exact_members,
            })
    similarity = {(i, j): sim for i, j, sim in near}
    similarity.update({pair: 1.0 for pair in exact})
    contamination = []
    for (i, j), sim in sorted(similarity.items()):
        a, b = sorted((items[i], items[j]), key=lambda it: (it["benchmark"], it["item_id"]))
        if a["benchmark"] != b["benchmark"]:
            contamination.append({
                "benchmark_a": a["benchmark"], "item_a": a["item_id"],
                "benchmark_b": b["benchmark"], "item_b": b["item_id"], "similarity": sim,
            })
    return rows, contamination
