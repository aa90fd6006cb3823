"""From items to duplicate clusters and contamination rows.

`analyse` computes the match keys, hashes each distinct key once, and turns the verified key
pairs into item pairs: within a benchmark they are duplicates (from `threshold` up), across
benchmarks contamination (from `contamination_threshold` up). Exact duplicates (same question,
choices and answer) are matched on the fields themselves. `cluster` joins duplicates with
union-find into clusters that never cross a benchmark, and reports every cross-benchmark pair
as a contamination row instead: another benchmark having an item is never a reason to drop it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pipeline.dedup.keys import item_text, match_keys, strip_templates
from pipeline.dedup.minhash import candidate_pairs, shingle_hashes, signatures, verified_pairs
from pipeline.dedup.params import DedupParams
from pipeline.schema import answer_hash, content_hash

_DEFAULTS = DedupParams()  # frozen: one shared default


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


def analyse(items: Sequence[dict[str, Any]], params: DedupParams = _DEFAULTS) -> Analysis:
    """Keys, candidates and verified pairs for a list of items; cluster() turns it into rows.
    `timings` says how long each step took (perf/dedup.py prints it)."""
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
    """Items with the same question, context, choices and answer (field matching on hashes): the
    groups of two or more, in the order of their first item, each in item order."""
    if not items:
        return []
    contents = [it.get("content_hash") or content_hash(it) for it in items]
    # one string per item (its length prefix keeps the pair apart), not a tuple: no objects for
    # the garbage collector to walk
    keys = np.array([f"{len(c)}:{c}{it.get('answer_hash') or answer_hash(it)}" for c, it in zip(contents, items)],
                    dtype=object)
    codes = pd.factorize(keys)[0]   # numbered in order of first appearance
    repeated = np.flatnonzero(np.bincount(codes)[codes] > 1)
    if not len(repeated):
        return []
    ordered = repeated[np.argsort(codes[repeated], kind="stable")]
    cuts = np.flatnonzero(np.diff(codes[ordered])) + 1
    return [group.tolist() for group in np.split(ordered, cuts)]


def cluster(items: Sequence[dict[str, Any]], params: DedupParams = _DEFAULTS,
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
    for group in analysis.exact:
        for part in _by_benchmark(group, benchmark):
            if len(part) > 1:
                for i in part[1:]:
                    uf.union(part[0], i)
                best[part] = 1.0
                exact_members.update(part)
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
    return rows, contamination_rows(items, analysis.contamination + exact_across(analysis.exact, benchmark))


def _by_benchmark(group: list[int], benchmark: Sequence[str]) -> list[list[int]]:
    per_benchmark: dict[str, list[int]] = defaultdict(list)
    for i in group:
        per_benchmark[benchmark[i]].append(i)
    return list(per_benchmark.values())


def exact_across(exact: Sequence[list[int]], benchmark: Sequence[str]) -> list[tuple[int, int, float]]:
    """The pairs of exact duplicates (groups of item indices) whose items are in different
    benchmarks, (i, j, 1.0) with i < j."""
    return [(min(i, j), max(i, j), 1.0) for group in exact for a, b in _pairs(_by_benchmark(group, benchmark))
            for i in a for j in b]


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
