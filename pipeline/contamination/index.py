"""The benchmarks' n-gram index, built once, and what a set of matched n-grams means per item.

Every item has two fields (the C-Eval split of input and label contamination):
- input: what a model is shown: its context, its question and its options;
- label: its gold as text (for a multiple-choice item the text of the right option(s), not the
  letter) and its references.
Each part of a field (context, question, each option, each reference) is keyed on its own, so no
n-gram spans two parts.

Every n-gram of an item is one of three kinds (`gram_kind`), so a verdict counts only what is the
item's own (overlap.py):
- template: the benchmark's wording, shared by TEMPLATE_MIN_ITEMS or more of its items
  ("下列古诗文翻译错误的一项是", "把文言文翻译为白话文");
- source: inside the classical passage the item is about, as its card says (`passages`: by default
  its context; WenMind's and AC-EVAL's quoted text), or shared with one to TEMPLATE_MIN_ITEMS - 1
  other items of its benchmark (a passage several questions ask about). The n-grams a reference
  corpus of public classical texts holds are source too, decided per scan (overlap.py), not here;
- specific: everything else: the question's own wording, the options, the answer, the translation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.contamination.ngrams import keyed
from pipeline.contamination.passages import item_passages
from pipeline.schema import OPTION_LETTERS

if TYPE_CHECKING:
    import pyarrow as pa

FIELDS = ("input", "label")
SPECIFIC, SOURCE, TEMPLATE = 0, 1, 2
KINDS = ("specific", "source", "template")
MCQ_FORMATS = ("mcq_single", "mcq_multi")
# An n-gram in this many items of one benchmark is its template, not any item's own wording.
# Measured on the real WenMind, AC-EVAL and WYWEB files (perf/contamination.py prints the
# distribution): an instruction or question stem is shared by tens to thousands of items; a passage
# by at most a handful (several questions on one poem, which is source anyway).
TEMPLATE_MIN_ITEMS = 4
# the columns of the items table the index reads
ITEM_COLUMNS = ["item_id", "benchmark", "task", "format", "context", "question", "choices", "answer", "references"]
# bump when the key, the hashing or the field split change: cached shard scans are keyed by it
INDEX_VERSION = "2"
_MIX = np.uint64(0x9E3779B97F4A7C15)


def field_parts(item: dict[str, Any]) -> dict[str, list[str]]:
    """The texts of an item's input and label fields."""
    gold = item.get("answer") or ""
    choices = [c for c in (item.get("choices") or []) if c]
    if item.get("format") in MCQ_FORMATS and choices and gold:
        picked = [choices[OPTION_LETTERS.index(c)] for c in gold.upper()
                  if c in OPTION_LETTERS and OPTION_LETTERS.index(c) < len(choices)]
        gold_parts = picked or [gold]
    else:
        gold_parts = [gold]
    return {"input": [t for t in (item.get("context"), item.get("question"), *choices) if t],
            "label": [t for t in [*gold_parts, *(item.get("references") or [])] if t]}


@dataclass
class ItemIndex:
    """Every n-gram of every item field, its kind, and the sorted distinct hashes a corpus is looked
    up in."""
    n: int
    items: list[dict[str, Any]]       # item_id, benchmark, task, format of each item, in order
    unit_item: np.ndarray             # per unit (item x field): the item's index
    unit_field: np.ndarray            # per unit: 0 input, 1 label
    gram_unit: np.ndarray             # per item n-gram: its unit
    gram_part: np.ndarray             # per item n-gram: its part (runs do not cross parts)
    gram_pos: np.ndarray              # per item n-gram: its position in the key
    gram_hash: np.ndarray             # per item n-gram: its hash
    gram_kind: np.ndarray             # per item n-gram: SPECIFIC, SOURCE or TEMPLATE
    gram_option: np.ndarray           # per item n-gram: whether it is one of the item's options' (also
                                      # where the question repeats an option, as WenMind's do)
    gram_piece: np.ndarray            # per item n-gram: its part, an option's where the question repeats it
    hashes: np.ndarray                # sorted distinct non-template hashes: what a corpus is looked up in
    digest: str                       # of n and `hashes`: a scan of a corpus file is valid for it

    @property
    def units(self) -> int:
        return len(self.unit_item)

    @property
    def gram_item(self) -> np.ndarray:
        return self.unit_item[self.gram_unit]


def build_index(items: Sequence[dict[str, Any]], n: int,
                passages: Callable[[dict[str, Any]], list[str]] = item_passages,
                template_min_items: int = TEMPLATE_MIN_ITEMS) -> ItemIndex:
    """`passages` and `template_min_items` are the card's and the measured cutoff; perf/ passes
    others to measure the rule without them."""
    texts, part_unit, part_option = [], [], []
    unit_item, unit_field = [], []
    for i, item in enumerate(items):
        options = {c for c in (item.get("choices") or []) if c}
        for f, field in enumerate(FIELDS):
            unit = len(unit_item)
            unit_item.append(i)
            unit_field.append(f)
            for k, text in enumerate(field_parts(item)[field]):
                texts.append(text)
                part_unit.append(unit)
                part_option.append(f == 0 and text in options and k > 0)
    key = keyed(texts)
    pos, gram_hash = key.hashes(n)
    part = key.text_of[pos] if len(pos) else np.empty(0, dtype=np.int64)
    part_unit_arr = np.asarray(part_unit, dtype=np.int64)
    unit_item_arr = np.asarray(unit_item, dtype=np.int64)
    gram_unit = part_unit_arr[part] if len(part) else np.empty(0, dtype=np.int64)
    gram_item = unit_item_arr[gram_unit]
    kind = np.full(len(gram_hash), SPECIFIC, dtype=np.int8)
    kind[_in_passage(items, passages, n, gram_item, gram_hash)] = SOURCE
    shared = item_counts(items, gram_item, gram_hash) if len(gram_hash) else np.zeros(0, dtype=np.int64)
    kind[shared >= 2] = SOURCE                  # a passage several questions share
    kind[shared >= template_min_items] = TEMPLATE
    hashes = sorted_distinct(gram_hash[kind != TEMPLATE])
    return ItemIndex(
        n=n, items=[{k: item.get(k) for k in ("item_id", "benchmark", "task", "format")} for item in items],
        unit_item=unit_item_arr, unit_field=np.asarray(unit_field, dtype=np.int64),
        gram_unit=gram_unit, gram_part=part, gram_pos=pos, gram_hash=gram_hash, gram_kind=kind,
        **_pieces(gram_item, gram_hash, part, np.asarray(part_option, dtype=bool)),
        hashes=hashes, digest=_digest(n, hashes))


def index_table(index: ItemIndex) -> pa.Table:
    """The index as rows of the `item_ngrams` lake table (schema.ITEM_NGRAMS): one per item x
    field, its n-grams in order. What one benchmark's prepare run stores, and `merged` reads."""
    import pyarrow as pa

    from pipeline import schema

    if (np.diff(index.gram_unit) < 0).any():   # build_index keys the texts unit by unit
        raise ValueError("the index's n-grams are not in unit order")
    offsets = np.concatenate(([0], np.cumsum(np.bincount(index.gram_unit, minlength=index.units))))

    def lists(values: np.ndarray, kind: pa.DataType) -> pa.ListArray:
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values, kind))

    entry = [index.items[i] for i in index.unit_item.tolist()]
    columns = {"item_id": [e["item_id"] for e in entry], "benchmark": [e["benchmark"] for e in entry],
               "task": [e["task"] for e in entry], "format": [e["format"] for e in entry],
               "field": [FIELDS[f] for f in index.unit_field.tolist()],
               "ngram": pa.array(np.full(index.units, index.n, dtype=np.int32)),
               "hashes": lists(index.gram_hash, pa.uint64()), "kinds": lists(index.gram_kind, pa.int8()),
               "parts": lists(index.gram_part, pa.int32()), "positions": lists(index.gram_pos, pa.int64()),
               "options": lists(index.gram_option, pa.bool_()), "pieces": lists(index.gram_piece, pa.int32())}
    return pa.table(columns, schema=schema.ITEM_NGRAMS)


def table_digest(table: pa.Table) -> str:
    """sha256 of an `item_ngrams` table's values, column by column (its data version)."""
    import pyarrow.compute as pc

    digest = hashlib.sha256()
    for name in table.column_names:
        column = table[name]
        digest.update(name.encode())
        if name in ("item_id", "benchmark", "task", "format", "field"):
            digest.update("\x1f".join(map(str, column.to_pylist())).encode())
        elif name == "ngram":
            digest.update(column.to_numpy().astype(np.int64).tobytes())
        else:
            digest.update(pc.list_value_length(column).to_numpy().astype(np.int64).tobytes())
            digest.update(pc.list_flatten(column).to_numpy().tobytes())
    return digest.hexdigest()


def merged(tables: Sequence[pa.Table], n: int) -> ItemIndex:
    """The index of every benchmark, from their `item_ngrams` tables (the rows of size `n`). Equal to
    `build_index` over all their items: what decides a kind (template, shared passage) is counted
    within one benchmark. Parts and positions are numbered anew per table, past the previous ones."""
    import pyarrow.compute as pc

    chunks: dict[str, list[np.ndarray]] = {k: [] for k in ("unit", "hash", "kind", "part", "pos", "option", "piece")}
    items, fields, units, part_base, pos_base = [], [], 0, 0, 0
    for table in tables:
        table = table.filter(pc.equal(table["ngram"], n))
        rows = table.select(["item_id", "benchmark", "task", "format", "field"]).to_pylist()
        fields += [FIELDS.index(r.pop("field")) for r in rows]
        items += rows[::2]   # each item's input row, then its label row
        flat = {k: pc.list_flatten(table[column]).to_numpy() for k, column in (
            ("hash", "hashes"), ("kind", "kinds"), ("part", "parts"), ("pos", "positions"), ("option", "options"),
            ("piece", "pieces"))}
        chunks["unit"].append(pc.list_parent_indices(table["hashes"]).to_numpy().astype(np.int64) + units)
        for k in ("hash", "kind", "option"):
            chunks[k].append(flat[k])
        for k, base in (("part", part_base), ("piece", part_base), ("pos", pos_base)):
            chunks[k].append(flat[k].astype(np.int64) + base)
        units += table.num_rows
        part_base += int(flat["part"].max()) + 1 if len(flat["part"]) else 0
        pos_base += int(flat["pos"].max()) + n + 1 if len(flat["pos"]) else 0
    if fields != [0, 1] * (len(fields) // 2):
        raise ValueError("an item_ngrams table is not one input row and one label row per item, in order")
    empty = {"unit": np.int64, "hash": np.uint64, "kind": np.int8, "part": np.int64, "pos": np.int64,
             "option": bool, "piece": np.int64}
    arrays = {k: np.concatenate(v).astype(empty[k]) if v else np.empty(0, dtype=empty[k]) for k, v in chunks.items()}
    hashes = sorted_distinct(arrays["hash"][arrays["kind"] != TEMPLATE])
    return ItemIndex(
        n=n, items=items, unit_item=np.arange(units, dtype=np.int64) // 2,
        unit_field=np.asarray(fields, dtype=np.int64),
        gram_unit=arrays["unit"], gram_part=arrays["part"], gram_pos=arrays["pos"], gram_hash=arrays["hash"],
        gram_kind=arrays["kind"], gram_option=arrays["option"], gram_piece=arrays["piece"], hashes=hashes,
        digest=_digest(n, hashes))


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """np.unique's result, by a sort: numpy 2's hash-based unique takes five times as long on
    millions of 64-bit hashes."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _digest(n: int, hashes: np.ndarray) -> str:
    return hashlib.sha256(f"{INDEX_VERSION}|{n}|".encode() + hashes.tobytes()).hexdigest()[:16]


def _pieces(gram_item: np.ndarray, gram_hash: np.ndarray, part: np.ndarray,
            part_option: np.ndarray) -> dict[str, np.ndarray]:
    """gram_option and gram_piece: an n-gram of the question that one of the item's options also
    has is that option's (a question that prints its options holds them twice)."""
    option = part_option[part] if len(part) else np.empty(0, dtype=bool)
    piece = part.copy()
    keys = _pair(gram_item[option], gram_hash[option])
    if len(keys):
        order = np.argsort(keys)
        keys, owner = keys[order], part[option][order]
        rest = np.flatnonzero(~option)
        at = np.minimum(np.searchsorted(keys, _pair(gram_item[rest], gram_hash[rest])), len(keys) - 1)
        hit = keys[at] == _pair(gram_item[rest], gram_hash[rest])
        piece[rest[hit]] = owner[at[hit]]
        option = option.copy()
        option[rest[hit]] = True
    return {"gram_option": option, "gram_piece": piece}


def _pair(item: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One 64-bit value per (item, hash): equal pairs give equal values, others almost never."""
    return hashes ^ (item.astype(np.uint64) * _MIX)


def _in_passage(items: Sequence[dict[str, Any]], passages: Callable[[dict[str, Any]], list[str]], n: int,
                gram_item: np.ndarray, gram_hash: np.ndarray) -> np.ndarray:
    """Per item n-gram: whether it lies in one of its own item's passages."""
    texts, owner = [], []
    for i, item in enumerate(items):
        for text in passages(item):
            texts.append(text)
            owner.append(i)
    if not texts or not len(gram_hash):
        return np.zeros(len(gram_hash), dtype=bool)
    key = keyed(texts)
    pos, hashes = key.hashes(n)
    if not len(pos):
        return np.zeros(len(gram_hash), dtype=bool)
    passage_item = np.asarray(owner, dtype=np.int64)[key.text_of[pos]]
    return np.isin(_pair(gram_item, gram_hash), _pair(passage_item, hashes))


def item_counts(items: Sequence[dict[str, Any]], gram_item: np.ndarray, gram_hash: np.ndarray) -> np.ndarray:
    """Per item n-gram: how many items of its benchmark hold its hash."""
    _, bench_code = np.unique(np.asarray([str(item.get("benchmark")) for item in items], dtype=object),
                              return_inverse=True)
    in_bench = _pair(bench_code[gram_item].astype(np.int64), gram_hash)
    # distinct (item, hash) pairs, then how many items per (benchmark, hash)
    pairs, first = np.unique(_pair(gram_item, gram_hash), return_index=True)
    per_bench, counts = np.unique(in_bench[first], return_counts=True)
    return counts[np.searchsorted(per_bench, in_bench)]


@dataclass
class Runs:
    """Per group of item n-grams (e.g. an item's specific ones): how many, how many found, and the
    longest run of consecutive found ones."""
    ngrams: np.ndarray      # per group: its n-grams
    matched: np.ndarray     # per group: those found in the corpus
    longest: np.ndarray     # per group: characters covered by its longest run of consecutive found n-grams
    evidence: np.ndarray    # per group: the hash of the first n-gram of that run (0 when none)


def runs(index: ItemIndex, found: np.ndarray, group: np.ndarray, groups: int) -> Runs:
    """`group`: per item n-gram, its group (-1: none). A run continues while the next n-gram of the
    same part is found and in the same group."""
    member = group >= 0
    ngrams = np.bincount(group[member], minlength=groups)
    hit = np.flatnonzero(found & member)
    matched = np.bincount(group[hit], minlength=groups)
    longest = np.zeros(groups, dtype=np.int64)
    evidence = np.zeros(groups, dtype=np.uint64)
    if len(hit):
        cont = np.zeros(len(hit), dtype=bool)
        cont[1:] = ((hit[1:] == hit[:-1] + 1)
                    & (index.gram_part[hit[1:]] == index.gram_part[hit[:-1]])
                    & (index.gram_pos[hit[1:]] == index.gram_pos[hit[:-1]] + 1)
                    & (group[hit[1:]] == group[hit[:-1]]))
        run_id = np.cumsum(~cont) - 1
        run_len = np.bincount(run_id)
        run_first = hit[~cont]
        run_group = group[run_first]
        # per group, its longest run (the first of equal ones): sort by group, then length descending
        order = np.lexsort((np.arange(len(run_len)), -run_len, run_group))
        first_of_group = order[np.concatenate(([True], run_group[order][1:] != run_group[order][:-1]))]
        best = run_group[first_of_group]
        longest[best] = run_len[first_of_group] + index.n - 1
        evidence[best] = index.gram_hash[run_first[first_of_group]]
    return Runs(ngrams, matched, longest, evidence)


def found_grams(index: ItemIndex, matched_hashes: np.ndarray) -> np.ndarray:
    """Per item n-gram: whether the corpus holds it (template n-grams are never looked up)."""
    found = _isin_sorted(index.gram_hash, np.unique(matched_hashes))
    return found & (index.gram_kind != TEMPLATE)


def _isin_sorted(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    if not len(table) or not len(values):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return table[at] == values


class Lookup:
    """Membership in the index's hashes: a bitmap of their top bits rules out almost every corpus
    n-gram with one array read; only the few that pass are binary-searched."""
    BITS = 26   # 64 MiB of bools: a 3M-hash index sets ~4% of them

    def __init__(self, hashes: np.ndarray):
        self.hashes = hashes
        self.shift = np.uint64(64 - self.BITS)
        present = np.zeros(1 << self.BITS, dtype=bool)
        if len(hashes):
            present[(hashes >> self.shift).astype(np.int64)] = True
        self.present = present

    def __call__(self, values: np.ndarray) -> np.ndarray:
        if not len(self.hashes) or not len(values):
            return np.zeros(len(values), dtype=bool)
        mask = self.present[(values >> self.shift).astype(np.int64)]
        maybe = np.flatnonzero(mask)
        if len(maybe):
            mask[maybe] = _isin_sorted(values[maybe], self.hashes)
        return mask
