"""One row per item x corpus: what of the item the corpus holds, with evidence, and its level.

Only what is the item's own counts (the kinds of pipeline/contamination/index.py): the benchmark's
template wording is never looked up, and the classical passage an item quotes (its card's
`passages`, and whatever a reference corpus of public classical texts holds) is reported apart.
The levels, in order:

- item_with_answer: one document holds the item's input and its label (each at least `threshold`
  of the field's n-grams, template set aside), within WINDOW_CHARS, and with them at least
  `threshold` of the item's specific n-grams: an instruction pair, a Q&A page, a translation pair.
  For multiple choice: the question's own wording with the right option and without most of the
  others (with all of them it is `item`: the right one is among the options shown);
- item: one document holds at least `threshold` of the specific n-grams of the item's input or of
  its label: its own wording, options, answer or translation, together. One document, because a
  copy of an item sits in one place, while quotations of its passages (four famous lines offered as
  options) are spread over many. For multiple choice that document must hold the item's specific
  n-grams in the question's own wording and an option, or in three options: one option alone, or
  two from one poem, is a quotation (an item whose specific n-grams all lie in one option is never
  `item`). Its label (the right option) is one of the options: it counts with the input only;
- source_only: the corpus holds at least `threshold` of the item's passage and nothing that makes
  it `item`: a quotation, not leakage;
- clean: none of these;
- too_short: the item has no n-gram of its own (all of it is template or passage, or shorter than
  n characters after normalisation): a copy of it cannot be told from a quotation, no verdict.

`status` is checked when the item has n-grams of its own, else too_short (its level may still be
source_only: the corpus holds its passage). `contaminated` is level in (item, item_with_answer) for
checked items, null for the others. The raw shares per field
(input_*, label_*) count every non-template n-gram, source included: what the corpus holds at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.engines import CorpusScan
from pipeline.contamination.index import (
    FIELDS,
    MCQ_FORMATS,
    SOURCE,
    SPECIFIC,
    TEMPLATE,
    ItemIndex,
    Runs,
    found_grams,
    runs,
)

LEVELS = ("item_with_answer", "item", "source_only", "clean", "too_short")
CONTAMINATED = ("item_with_answer", "item")
WINDOW_CHARS = 5000   # how far apart an item's question and answer may sit in one document
EVIDENCE = ("file", "doc", "offset", "snippet")


def overlap_rows(index: ItemIndex, scan: CorpusScan, corpus: str, spec: CorpusSpec,
                 reference: np.ndarray | None = None) -> list[dict[str, Any]]:
    """`reference`: the item n-gram hashes found in the reference corpora (source, not leakage)."""
    matches = scan.matches
    hashes = matches.column("hash").to_numpy() if matches.num_rows else np.empty(0, dtype=np.uint64)
    found = found_grams(index, hashes)
    kind = gram_kinds(index, reference)
    items = len(index.items)
    field = index.unit_field[index.gram_unit]
    item = index.gram_item
    own = kind != TEMPLATE
    by_field = runs(index, found, np.where(own, index.gram_unit, -1), index.units)
    spec_field = runs(index, found, np.where(kind == SPECIFIC, index.gram_unit, -1), index.units)
    source = runs(index, found, np.where(kind == SOURCE, item, -1), items)
    specific = runs(index, found, np.where(kind == SPECIFIC, item, -1), items)
    per_doc = per_document(index, kind, found, field, matches)
    best = best_shares(index, kind, field, per_doc)
    answered = colocated(index, kind, field, per_doc, matches, spec.threshold)
    evidence = Evidence(matches)
    rows = []
    for i, entry in enumerate(index.items):
        row: dict[str, Any] = {**{k: entry[k] for k in ("item_id", "benchmark", "task")}, "corpus": corpus,
                               "corpus_version": spec.version, "ngram": index.n, "threshold": spec.threshold}
        flags = {}
        for f, name in enumerate(FIELDS):
            u = 2 * i + f
            row.update(_counts(name, by_field, u, evidence))
            row[f"{name}_specific_ngrams"] = int(spec_field.ngrams[u])
            row[f"{name}_specific_matched"] = int(spec_field.matched[u])
            row[f"{name}_document_share"] = share = best[name][i]
            flags[name] = share is not None and share >= spec.threshold
        row.update(_counts("specific", specific, i, evidence))
        row.update(_counts("source", source, i, evidence))
        row["template_ngrams"] = 0
        row["input_flagged"], row["label_flagged"] = flags["input"], flags["label"]
        hit = answered.get(i)
        row["answer_file"], row["answer_doc"], row["answer_offset"] = hit or (None, None, None)
        rows.append(row)
    _template_counts(index, rows)
    for row in rows:
        row["level"] = level(row)
        row["status"] = "checked" if row["specific_ngrams"] else "too_short"
        row["contaminated"] = row["level"] in CONTAMINATED if row["status"] == "checked" else None
    return rows


def gram_kinds(index: ItemIndex, reference: np.ndarray | None) -> np.ndarray:
    """The index's kinds, with the specific n-grams a reference corpus holds made source."""
    kind = index.gram_kind.copy()
    if reference is not None and len(reference):
        kind[(kind == SPECIFIC) & np.isin(index.gram_hash, reference)] = SOURCE
    return kind


def level(row: dict[str, Any]) -> str:
    if row["answer_doc"] is not None:
        return "item_with_answer"
    if row["input_flagged"] or row["label_flagged"]:
        return "item"
    if row["source_ngrams"] and row["source_matched"] / row["source_ngrams"] >= row["threshold"]:
        return "source_only"
    return "clean" if row["specific_ngrams"] else "too_short"


def _counts(name: str, runs_: Runs, at: int, evidence: Evidence) -> dict[str, Any]:
    n, m = int(runs_.ngrams[at]), int(runs_.matched[at])
    out = {f"{name}_ngrams": n, f"{name}_matched": m, f"{name}_share": m / n if n else None,
           f"{name}_longest": int(runs_.longest[at])}
    ev = evidence(int(runs_.evidence[at])) if m else {}
    out.update({f"{name}_{k}": ev.get(k) for k in EVIDENCE})
    return out


def _template_counts(index: ItemIndex, rows: list[dict[str, Any]]) -> None:
    counts = np.bincount(index.gram_item[index.gram_kind == TEMPLATE], minlength=len(rows))
    for row, c in zip(rows, counts.tolist()):
        row["template_ngrams"] = c


class Evidence:
    """The first document (smallest path, id, offset) that holds a hash."""

    def __init__(self, matches: pa.Table):
        self.hashes = matches.column("hash").to_numpy() if matches.num_rows else np.empty(0, dtype=np.uint64)
        self.columns = {k: matches.column(c).to_pylist() for k, c in
                        (("file", "path"), ("doc", "doc_id"), ("offset", "offset"), ("snippet", "snippet"))}

    def __call__(self, h: int) -> dict[str, Any]:
        at = int(np.searchsorted(self.hashes, np.uint64(h)))   # rows are sorted by hash, then document
        return {k: v[at] for k, v in self.columns.items()}


def per_document(index: ItemIndex, kind: np.ndarray, found: np.ndarray, field: np.ndarray,
                 matches: pa.Table) -> Any:
    """Per (item, document) that holds some of the item's n-grams: how many of its input's and its
    label's (template set aside), of its specific ones per field, and where (first, last offset)."""
    import pandas as pd

    g = np.flatnonzero(found)
    columns = ["item", "doc", "row", "input", "label", "input_specific", "label_specific", "specific", "first",
               "last", "stem", "options", "parts"]
    if not len(g) or not matches.num_rows:
        return pd.DataFrame(columns=columns)
    m_hash = matches.column("hash").to_numpy()
    lo, hi = np.searchsorted(m_hash, index.gram_hash[g], "left"), np.searchsorted(m_hash, index.gram_hash[g], "right")
    count = hi - lo
    gram = np.repeat(g, count)
    row = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) + np.repeat(lo, count)
    docs = pa.compute.binary_join_element_wise(matches["path"], matches["doc_id"], "\x00")
    doc_code = pa.compute.dictionary_encode(docs).combine_chunks().indices.to_numpy()
    specific = kind[gram] == SPECIFIC
    input_specific = specific & (field[gram] == 0)
    frame = pd.DataFrame({"item": index.gram_item[gram], "doc": doc_code[row], "row": row,
                          # the input part of a specific n-gram (NaN: not one, which nunique skips)
                          "part": np.where(input_specific, index.gram_piece[gram], np.nan),
                          "offset": matches["offset"].to_numpy()[row], "input": field[gram] == 0,
                          "label": field[gram] == 1, "input_specific": specific & (field[gram] == 0),
                          "label_specific": specific & (field[gram] == 1), "specific": specific,
                          "stem": input_specific & ~index.gram_option[gram],
                          "options": input_specific & index.gram_option[gram]})
    return frame.groupby(["item", "doc"], sort=True).agg(
        row=("row", "min"), input=("input", "sum"), label=("label", "sum"),
        input_specific=("input_specific", "sum"), label_specific=("label_specific", "sum"),
        specific=("specific", "sum"), first=("offset", "min"), last=("offset", "max"),
        stem=("stem", "sum"), options=("options", "sum"), parts=("part", "nunique")).reset_index()


def best_shares(index: ItemIndex, kind: np.ndarray, field: np.ndarray, per_doc: Any) -> dict[str, list]:
    """Per field, per item: the largest share of the field's specific n-grams that one document
    holds (None: the field has none; a multiple-choice label: None, it is one of the options). For
    multiple choice, only documents that hold them spread over its parts count (the rule above)."""
    items = len(index.items)
    out = {}
    mcq = _mcq(index)
    counted = per_doc
    if len(per_doc):
        at = per_doc["item"].to_numpy(dtype=np.int64)
        parts = per_doc["parts"].to_numpy()
        spread = (parts >= 3) | ((parts >= 2) & (per_doc["stem"].to_numpy() > 0))
        counted = per_doc[~mcq[at] | spread | _single_stem(index, kind, field)[at]]
    for f, name in enumerate(FIELDS):
        total = np.bincount(index.gram_item[(kind == SPECIFIC) & (field == f)], minlength=items)
        most = np.zeros(items, dtype=np.int64)
        if len(counted):
            np.maximum.at(most, counted["item"].to_numpy(dtype=np.int64),
                          counted[f"{name}_specific"].to_numpy(dtype=np.int64))
        none = (total == 0) | (mcq if name == "label" else False)
        out[name] = [None if no else m / t for no, m, t in zip(none.tolist(), most.tolist(), total.tolist())]
    return out


def _single_stem(index: ItemIndex, kind: np.ndarray, field: np.ndarray) -> np.ndarray:
    """Per item: its specific input n-grams lie in one part, and that part is not an option (the
    question's own wording, which one document may hold alone)."""
    items = len(index.items)
    mine = (kind == SPECIFIC) & (field == 0)
    item, part = index.gram_item[mine], index.gram_piece[mine]
    pairs = np.unique(np.stack([item, part]), axis=1) if len(item) else np.empty((2, 0), dtype=np.int64)
    parts = np.bincount(pairs[0], minlength=items)
    in_option = np.zeros(items, dtype=bool)
    in_option[item[index.gram_option[mine]]] = True
    return (parts == 1) & ~in_option


def colocated(index: ItemIndex, kind: np.ndarray, field: np.ndarray, per_doc: Any, matches: pa.Table,
              threshold: float) -> dict[int, tuple[str, str, int]]:
    """Per item whose question and answer one document holds together (the level's rule above):
    that document (the smallest), as (file, doc, offset of the first of its n-grams)."""
    if not len(per_doc):
        return {}
    need = _needed(index, kind, field, threshold)
    at = per_doc["item"].to_numpy(dtype=np.int64)
    held = {k: per_doc[k].to_numpy() for k in ("input", "label", "specific", "stem", "options")}
    near = per_doc["last"].to_numpy() - per_doc["first"].to_numpy() <= WINDOW_CHARS
    ok = ((held["input"] >= need["input"][at]) & (held["label"] >= need["label"][at])
          & (held["specific"] >= need["specific"][at]) & need["eligible"][at] & near)
    # multiple choice: the question's wording and the right option, not most of the others
    ok |= (need["mcq"][at] & (held["stem"] >= need["stem"][at]) & (held["label"] >= need["label"][at])
           & (held["options"] - held["label"] < need["others"][at]) & near)
    paths, ids = matches["path"], matches["doc_id"]
    out: dict[int, tuple[str, str, int]] = {}
    for i, r, first in per_doc[ok][["item", "row", "first"]].itertuples(index=False):
        if int(i) not in out:   # rows are sorted by item, then document: the smallest document
            out[int(i)] = (paths[int(r)].as_py(), ids[int(r)].as_py(), int(first))
    return out


def _mcq(index: ItemIndex) -> np.ndarray:
    return np.fromiter((e.get("format") in MCQ_FORMATS for e in index.items), dtype=bool, count=len(index.items))


def _needed(index: ItemIndex, kind: np.ndarray, field: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """Per item: the n-grams one document must hold of its input, its label, its specific n-grams
    and (multiple choice) its question's wording, the fewest of its other options that count as
    most of them, and which rule applies."""
    items = len(index.items)
    own = kind != TEMPLATE
    spec = kind == SPECIFIC

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(index.gram_item[mask], minlength=items)

    inputs, labels, specific = count(own & (field == 0)), count(own & (field == 1)), count(spec)
    stem, options = count(spec & (field == 0) & ~index.gram_option), count(spec & (field == 0) & index.gram_option)
    mcq = _mcq(index)
    return {"input": np.maximum(np.ceil(threshold * inputs), 1), "label": np.maximum(np.ceil(threshold * labels), 1),
            "specific": np.maximum(np.ceil(threshold * specific), 1), "stem": np.maximum(np.ceil(threshold * stem), 1),
            "others": np.maximum(np.ceil(threshold * np.maximum(options - labels, 0)), 1),
            "eligible": (labels > 0) & (specific > 0) & ~mcq, "mcq": mcq & (labels > 0) & (stem > 0)}
