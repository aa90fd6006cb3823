"""One row per item x corpus: what share of each field's n-grams the corpus holds, the longest
run of them, evidence, and the verdict.

The rule (documented in the README, "Contamination against your own corpus"): an item is
contaminated when the corpus holds at least `threshold` (default 0.5) of the n-grams of its input
or of its label. Not "any one 13-gram", which flags every item that quotes a famous poem. An item
whose fields are both shorter than n characters (after normalisation) has no n-gram to look up: its
status is `too_short` and `contaminated` is null, never a silent false.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.engines import CorpusScan
from pipeline.contamination.index import FIELDS, ItemIndex, overlap


def overlap_rows(index: ItemIndex, scan: CorpusScan, corpus: str, spec: CorpusSpec) -> list[dict[str, Any]]:
    matches = scan.matches
    hashes = matches.column("hash").to_numpy() if matches.num_rows else np.empty(0, dtype=np.uint64)
    units = overlap(index, hashes)
    order = np.argsort(hashes)
    sorted_hashes = hashes[order]
    evidence_columns = {name: matches.column(name).to_pylist() for name in ("path", "doc_id", "offset", "snippet")}

    def evidence(h: int) -> dict[str, Any]:
        at = int(order[np.searchsorted(sorted_hashes, np.uint64(h))])
        return {k: v[at] for k, v in evidence_columns.items()}

    ngrams, matched, longest, first_hash = (a.tolist() for a in (units.ngrams, units.matched, units.longest,
                                                                    units.evidence))
    rows = []
    for i, item in enumerate(index.items):
        row: dict[str, Any] = {**item, "corpus": corpus, "corpus_version": spec.version, "ngram": index.n,
                               "threshold": spec.threshold}
        flagged = []
        for f, name in enumerate(FIELDS):
            u = 2 * i + f
            total = ngrams[u]
            share = matched[u] / total if total else None
            row[f"{name}_ngrams"], row[f"{name}_matched"] = total, matched[u]
            row[f"{name}_share"], row[f"{name}_longest"] = share, longest[u]
            ev = evidence(first_hash[u]) if matched[u] else {}
            row[f"{name}_file"], row[f"{name}_doc"] = ev.get("path"), ev.get("doc_id")
            row[f"{name}_offset"], row[f"{name}_snippet"] = ev.get("offset"), ev.get("snippet")
            if share is not None and share >= spec.threshold:
                flagged.append(name)
        rows.append(row | verdict(flagged, ngrams[2 * i] + ngrams[2 * i + 1] > 0))
    return rows


def verdict(flagged: list[str], checked: bool) -> dict[str, object]:
    """An item's status, contaminated and kind from the fields at or above the threshold (input,
    label: in that order) and whether it had any n-gram to look up (too short: no verdict)."""
    return {"status": "checked" if checked else "too_short", "contaminated": bool(flagged) if checked else None,
            "kind": {("input", "label"): "input_and_label", ("input",): "input", ("label",): "label"}.get(
                tuple(flagged))}


def share_histogram(shares: list[float | None], bins: int = 10) -> dict[str, int]:
    """How many shares fall in each tenth (and how many fields had no n-gram)."""
    out = {f"{b / bins:.1f}-{(b + 1) / bins:.1f}": 0 for b in range(bins)}
    out["no n-gram"] = 0
    for s in shares:
        if s is None:
            out["no n-gram"] += 1
        else:
            b = min(int(s * bins), bins - 1)
            out[f"{b / bins:.1f}-{(b + 1) / bins:.1f}"] += 1
    return out

