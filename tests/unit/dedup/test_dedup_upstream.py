"""Dedup on the real public benchmark files (skipped when they are not on this machine).

WenMind drew items from WYWEB (its NER items are GLNER texts, some translation items TLC
sentences) and AC-EVAL reuses WYWRC passages, so the contamination table must not be empty."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import upstream

from pipeline.config import SourceSpec
from pipeline.dedup import DedupParams, analyse, cluster, conflicting_clusters
from pipeline.ingest import parse_source
from pipeline.standardize import standardize


@pytest.fixture(scope="module")
def corpus():
    raw = []
    for benchmark, parts in [("wenmind", ("wenmind", "WenMind_ver1.json")), ("aceval", ("aceval",)),
                             ("wyweb", ("wyweb",))]:
        raw += parse_source(SourceSpec(benchmark, upstream(*parts), "public")).items
    items, _ = standardize(raw)
    analysis = analyse(items)
    rows, contamination = cluster(items, analysis=analysis)
    return items, analysis, rows, contamination


def test_contamination_between_wenmind_wyweb_and_aceval(corpus):
    items, _, _, contamination = corpus
    pairs = Counter((c["benchmark_a"], c["benchmark_b"]) for c in contamination)
    assert pairs[("wenmind", "wyweb")] > 0
    tasks = {it["task"] for it in items if it["benchmark"] == "wyweb"}
    by_id = {it["item_id"]: it for it in items}
    wyweb_tasks = Counter(by_id[c["item_b"]]["task"] for c in contamination
                          if (c["benchmark_a"], c["benchmark_b"]) == ("wenmind", "wyweb"))
    if "glner" in tasks:  # WenMind's 200 NER items are GLNER texts
        assert wyweb_tasks["glner"] >= 190
    if "wywrc" in tasks:  # AC-EVAL asks other questions on WYWRC passages
        assert pairs[("aceval", "wyweb")] > 0
    assert all(c["similarity"] >= DedupParams().contamination_threshold for c in contamination)


def test_clusters_stay_within_a_benchmark_and_are_stable(corpus):
    items, _, rows, contamination = corpus
    benchmarks = {}
    for r in rows:
        assert benchmarks.setdefault(r["cluster_id"], r["benchmark"]) == r["benchmark"]
    assert sum(r["is_representative"] for r in rows) == len(benchmarks)
    assert cluster(items) == (rows, contamination)


def test_duplicates_with_different_gold_are_repeated_prompts(corpus):
    """Within WenMind, a cluster whose gold answers differ must be one prompt asked several
    times (couplets with several reference answers), never two questions on one passage."""
    items, _, rows, _ = corpus
    by_id = {it["item_id"]: it for it in items}
    conflicts = [c for c in conflicting_clusters(items, rows) if c["benchmark"] == "wenmind"]
    assert conflicts
    for c in conflicts:
        assert len({(by_id[i]["question"] or "").replace(" ", "") for i in c["item_ids"]}) == 1, c


def test_templates_do_not_make_a_task_one_cluster(corpus):
    items, analysis, rows, _ = corpus
    clustered = Counter(r["benchmark"] for r in rows)
    sizes = Counter(it["benchmark"] for it in items)
    assert all(clustered[b] < 0.05 * sizes[b] for b in sizes)
    wenmind = [k for k, it in zip(analysis.keys, items) if it["task"] == "classical Chinese to modern Chinese"]
    assert wenmind and not any("翻译为白话文" in k for k in wenmind)
