"""The duplicate policy: which items are evaluated once dedup has found the clusters.

`flag` evaluates every item and only records the clusters; `drop` leaves out the copies that
repeat their cluster's representative, gold answer included. A cluster whose gold answers
differ is a conflict to fix, never a copy to drop (`conflicting_clusters` lists them for a
warning). This module imports nothing of the configuration, which reads POLICIES from here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pipeline.schema import answer_hash

POLICIES = ("flag", "drop")  # values of `duplicates:` in the sources file; flag is the default


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
