"""Which items are evaluated: the duplicate policy, once dedup has found the clusters, and the
data-quality policy.

Duplicates: `flag` evaluates every item and only records the clusters; `drop` leaves out the
copies that repeat their cluster's representative, gold answer included. A cluster whose gold
answers differ is a conflict to fix, never a copy to drop (`conflicting_clusters` lists them for
a warning).

Data quality: an adapter that checks its items' options marks them with `metadata.quality_flags`
(`option_quality_flags`): an option that is scraped HTML, an empty option, the gold text repeated
in another option. Such an item cannot be answered as asked; under `quality: drop` (the default)
it is left out of evaluation, under `quality: keep` it is asked like any other. The flags that
count are those of the item as it stands (`quality_flags`), so a correction that repairs the
options brings the item back.

This module imports nothing of the configuration, which reads POLICIES and QUALITY_POLICIES from
here.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.rows import OPTION_LETTERS, answer_hash

POLICIES = ("flag", "drop")  # values of `duplicates:` in the sources file; flag is the default
QUALITY_POLICIES = ("drop", "keep")  # values of `quality:`; drop (leave flagged items out) is the default

QUALITY_FLAGS_KEY = "quality_flags"  # in an item's metadata: the flags below, [] when it is clean
QUALITY_FLAGS = {
    "html_option": "an option holds HTML markup (a scraped page, not an answer)",
    "empty_option": "an option is empty",
    "gold_repeated": "the gold option's text is repeated in another option, so two letters are right",
}
# A tag (<div class="biaoti">, </div>, <br/>) or a character entity (&nbsp; &#160;). A lone `<`
# standing for a bracket (an OCR slip in WYWRC) is not markup.
_HTML = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>|&(?:[A-Za-z]+|#[0-9]+);")


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


def asked_part(item: Mapping[str, Any]) -> str | None:
    """Which part of a question group the item asks (`metadata.part`, e.g. CP-DUE's OQ asks
    "best" and "worst" about the same three poems), None for an item that is not part of one.
    Items asking different parts are near-copies with different golds by design."""
    metadata = item.get("metadata")
    if isinstance(metadata, str):
        if '"part"' not in metadata:   # most items: no JSON parse
            return None
        metadata = json.loads(metadata)
    part = (metadata or {}).get("part") if isinstance(metadata, dict) else None
    return None if part is None else str(part)


def conflicting_clusters(items: Sequence[dict[str, Any]], cluster_rows: Sequence[dict[str, Any]]
                         ) -> list[dict[str, Any]]:
    """Clusters whose members asking the same thing do not all share one gold answer (for a
    warning check): [{"cluster_id", "benchmark", "item_ids"}], sorted. Members that ask different
    parts of a question group (`asked_part`) are compared only with members asking the same part."""
    answers = {it["item_id"]: it.get("answer_hash") or answer_hash(it) for it in items}
    parts = {it["item_id"]: asked_part(it) for it in items}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in cluster_rows:
        groups[(r["benchmark"], r["cluster_id"])].append(r["item_id"])

    def conflicting(ids: list[str]) -> bool:
        by_part: dict[str | None, set] = defaultdict(set)
        for i in ids:
            by_part[parts.get(i)].add(answers.get(i))
        return any(len(golds) > 1 for golds in by_part.values())

    return [{"cluster_id": cid, "benchmark": bench, "item_ids": sorted(ids)}
            for (bench, cid), ids in sorted(groups.items()) if conflicting(ids)]


def option_quality_flags(choices: Sequence[str], answer: str | None) -> list[str]:
    """The data-quality flags of a single-choice item's options (names from QUALITY_FLAGS, in that
    order); `answer` is the gold letter. Two equal distractors are not a flag: the item still has
    one right answer."""
    texts = [c.strip() for c in choices]
    gold = OPTION_LETTERS.index(answer) if answer and answer in OPTION_LETTERS[:len(texts)] else None
    found = {
        "html_option": any(_HTML.search(c) for c in texts),
        "empty_option": any(not c for c in texts),
        "gold_repeated": gold is not None and bool(texts[gold])
                         and any(c == texts[gold] for i, c in enumerate(texts) if i != gold),
    }
    return [flag for flag in QUALITY_FLAGS if found[flag]]


def quality_flags(item: dict[str, Any]) -> list[str]:
    """An item's data-quality flags as it stands now: items whose adapter checks their options
    (metadata has QUALITY_FLAGS_KEY) are checked again on their current options, so a correction
    (data/corrections) that repairs an option clears its flag; other items have none."""
    if QUALITY_FLAGS_KEY not in (item.get("metadata") or {}):
        return []
    return option_quality_flags(item.get("choices") or [], item.get("answer"))


def quality_items(items: Sequence[dict[str, Any]], quality: Mapping[str, str]) -> list[dict[str, Any]]:
    """The items the data-quality policy lets through, in their original order: `quality` maps a
    benchmark to `drop` (flagged items are left out; also for a benchmark not in it) or `keep`."""
    bad = sorted({q for q in quality.values() if q not in QUALITY_POLICIES})
    if bad:
        raise ValueError(f"unknown quality policy {bad[0]!r}; expected one of {', '.join(QUALITY_POLICIES)}")
    return [it for it in items if quality.get(it["benchmark"], "drop") == "keep" or not quality_flags(it)]


def quality_report(items: Sequence[dict[str, Any]], first: int = 20) -> dict[str, dict[str, Any]]:
    """For a data-quality check: per flag found, how many items carry it and the first `first` ids
    ({flag: {"items": n, "first ids": [...]}}, flags in QUALITY_FLAGS order)."""
    ids: dict[str, list[str]] = defaultdict(list)
    for item in items:
        for flag in quality_flags(item):
            ids[flag].append(item["item_id"])
    return {flag: {"items": len(ids[flag]), "first ids": ids[flag][:first]} for flag in QUALITY_FLAGS if ids[flag]}
