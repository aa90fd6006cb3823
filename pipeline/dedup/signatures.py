"""Dedup from stored signatures: each item's match keys and MinHash, reused by content.

`item_signatures` gives one row per item (SIGNATURES_SCHEMA): its template-free match key, its
full key, the MinHash of the template-free key and `key_hash`, a hash of that key and of every
DedupParams field. A previous table's rows whose key_hash matches are taken as they are, so
only new or changed keys are shingled and hashed. Keys are still computed for every item,
because a task's template is learnt from all its items.

`clusters_from_signatures` and `contamination_from_signatures` give exactly what `cluster()`
gives on the same items (its cluster rows, its contamination rows): candidates come from the
stored MinHashes by LSH banding, and only the keys of candidate pairs are shingled again for the
exact Jaccard check. Keys depend on their own benchmark and task only, so rows computed one
benchmark at a time serve the contamination check across all of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.dedup.clusters import (
    Analysis,
    _classify,
    _Stopwatch,
    cluster,
    contamination_rows,
    exact_across,
    exact_duplicate_groups,
)
from pipeline.dedup.keys import item_text, match_keys, strip_templates
from pipeline.dedup.minhash import candidate_pairs, shingle_hashes, signatures, verified_pairs
from pipeline.dedup.params import DedupParams
from pipeline.schema import ITEM_SIGNATURES

_DEFAULTS = DedupParams()

SIGNATURES_SCHEMA = ITEM_SIGNATURES   # the lake table item_signatures (pipeline/schema.py)


def _params_fingerprint(params: DedupParams) -> str:
    return json.dumps(dataclasses.asdict(params), sort_keys=True)


def _key_hashes(keys: Iterable[str], params: DedupParams) -> list[str]:
    """sha256 of the parameters' fingerprint, a newline and each key (hex): the fingerprint is
    hashed once and the hash state copied for each key."""
    start = hashlib.sha256(f"{_params_fingerprint(params)}\n".encode())
    hashes = []
    for key in keys:
        h = start.copy()
        h.update(key.encode("utf-8", "surrogatepass"))
        hashes.append(h.hexdigest())
    return hashes


def item_signatures(records: Sequence[dict[str, Any]], params: DedupParams = _DEFAULTS,
                    previous: Iterable[dict[str, Any]] = ()) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(rows in SIGNATURES_SCHEMA's shape, one per record in order, and {"reused": n, "computed":
    m}): items whose key_hash is found in `previous` take its MinHash; the others are hashed now
    (each distinct key once). Items with an empty key have no MinHash and count as neither."""
    full_keys = match_keys([item_text(it) for it in records])
    keys = strip_templates(full_keys, [(it.get("benchmark"), it.get("task")) for it in records], params)
    hashes = _key_hashes(keys, params)
    known = {row["key_hash"]: row["minhash"] for row in previous if row.get("minhash") is not None}
    fresh = list(dict.fromkeys(h for h, k in zip(hashes, keys) if k and h not in known))
    if fresh:
        first_key = dict(zip(hashes, keys))
        shingles, offsets = shingle_hashes([first_key[h] for h in fresh], params)
        values = signatures(shingles, offsets, params).astype("<u4")
        known.update(zip(fresh, (row.tobytes() for row in values)))
    fresh_set = set(fresh)
    counts = {"reused": sum(1 for h, k in zip(hashes, keys) if k and h not in fresh_set),
              "computed": sum(1 for h, k in zip(hashes, keys) if k and h in fresh_set)}
    rows = [{"item_id": it["item_id"], "benchmark": it["benchmark"], "key_hash": h, "key": k, "full_key": f,
             "minhash": known[h] if k else None}
            for it, h, k, f in zip(records, hashes, keys, full_keys)]
    return rows, counts


def clusters_from_signatures(records: Sequence[dict[str, Any]], signature_rows: SignatureRows,
                             params: DedupParams = _DEFAULTS) -> list[dict[str, Any]]:
    """`cluster(records, params)[0]`: the duplicate clusters within each benchmark."""
    return cluster(records, params, analysis_from_signatures(records, signature_rows, params, "within"))[0]


def contamination_from_signatures(records: Sequence[dict[str, Any]], signature_rows: SignatureRows,
                                  params: DedupParams = _DEFAULTS) -> list[dict[str, Any]]:
    """`cluster(records, params)[1]`: the contamination pairs across benchmarks. Records need only
    item_id, benchmark, task, content_hash and answer_hash."""
    analysis = analysis_from_signatures(records, signature_rows, params, "across")
    benchmark = [it["benchmark"] for it in records]
    return contamination_rows(records, analysis.contamination + exact_across(analysis.exact, benchmark))


# Signature rows as dicts (SIGNATURES_SCHEMA's shape), or the same columns as a pandas frame or an
# Arrow table (as the lake stores them), which are read column by column.
SignatureRows = Iterable[dict[str, Any]] | pd.DataFrame | pa.Table
_COLUMNS = ("item_id", "key_hash", "key", "full_key", "minhash")


def _signature_columns(signature_rows: SignatureRows) -> dict[str, Any]:
    """The columns analysis reads: lists of item_id, key_hash, key and full_key, and the MinHash
    values as one Arrow binary array (never a bytes object per row)."""
    if isinstance(signature_rows, pd.DataFrame):
        signature_rows = pa.Table.from_pandas(signature_rows[list(_COLUMNS)], preserve_index=False,
                                              schema=pa.schema([SIGNATURES_SCHEMA.field(n) for n in _COLUMNS]))
    if isinstance(signature_rows, pa.Table):
        columns: dict[str, Any] = {name: signature_rows.column(name).to_pylist() for name in _COLUMNS[:-1]}
        columns["minhash"] = signature_rows.column("minhash").combine_chunks()
        return columns
    rows = list(signature_rows)
    columns = {name: [row[name] for row in rows] for name in _COLUMNS[:-1]}
    columns["minhash"] = pa.array([row["minhash"] for row in rows], type=pa.binary())
    return columns


def _minhash_matrix(minhash: pa.Array, rows: list[int], num_perm: int) -> tuple[np.ndarray, int | None]:
    """(the MinHash values of `rows`, one row each, and None), or (empty, the position in `rows`
    of the first one that is null or not num_perm values long)."""
    taken = minhash.take(pa.array(rows, type=pa.int64())) if rows else minhash.slice(0, 0)
    if isinstance(taken, pa.ChunkedArray):
        taken = taken.combine_chunks()
    width = 4 * num_perm
    lengths = pc.fill_null(pc.binary_length(taken), -1).to_numpy(zero_copy_only=False)
    wrong = np.flatnonzero(lengths != width)
    if len(wrong):
        return np.empty((0, num_perm), dtype="<u4"), int(wrong[0])
    offsets = np.frombuffer(taken.buffers()[1], dtype=np.int32)[taken.offset:taken.offset + len(taken) + 1]
    data = np.frombuffer(taken.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]] if len(taken) else \
        np.empty(0, dtype=np.uint8)
    return data.view("<u4").reshape(-1, num_perm), None


def analysis_from_signatures(records: Sequence[dict[str, Any]], signature_rows: SignatureRows,
                             params: DedupParams = _DEFAULTS, scope: str = "all") -> Analysis:
    """The Analysis `analyse(records, params)` gives, from signature rows (any superset of the
    records' rows; a later row of an item_id wins). `scope` "within" leaves out what only
    concerns pairs across benchmarks, "across" what only concerns pairs within one (its clusters
    or its contamination are then exact, the other side is partial)."""
    if scope not in ("all", "within", "across"):
        raise ValueError(f"unknown scope {scope!r}; expected all, within or across")
    timings: dict[str, float] = {}
    tick = _Stopwatch(timings)
    table = _signature_columns(signature_rows)
    position = dict(zip(table["item_id"], range(len(table["item_id"]))))
    at = [position.get(it["item_id"], -1) for it in records]
    if -1 in at:
        missing = [it["item_id"] for it, p in zip(records, at) if p < 0]
        raise ValueError(f"no signature row for {len(missing)} items (first: {missing[0]}); "
                         "run item_signatures on them first")
    keys = [table["key"][p] for p in at]
    full_keys = [table["full_key"][p] for p in at]
    key_ids: dict[str, int] = {}
    members: list[list[int]] = []
    first_row: list[int] = []   # the signature row of each distinct key's first item
    for i, key in enumerate(keys):
        if key:
            k = key_ids.setdefault(key, len(key_ids))
            if k == len(members):
                members.append([])
                first_row.append(at[i])
            members[k].append(i)
    sigs, wrong = _minhash_matrix(table["minhash"], first_row, params.num_perm)
    if wrong is None:
        made = _key_hashes([table["key"][p] for p in first_row], params)
        wrong = next((n for n, p in enumerate(first_row) if table["key_hash"][p] != made[n]), None)
    if wrong is not None:
        raise ValueError(f"the signature row of {table['item_id'][first_row[wrong]]} was made with other dedup "
                         "parameters (or edited): run item_signatures again")
    tick("load")
    candidates = candidate_pairs(sigs, range(len(members)), params)
    if scope != "all" and len(candidates):
        candidates = candidates[_in_scope(candidates, members, [it["benchmark"] for it in records], scope)]
    tick("lsh")
    near = _verify(list(key_ids), candidates, params)
    tick("shingles and verify")
    groups = [(members[k], None, 1.0) for k in range(len(members)) if len(members[k]) > 1]
    groups += [(members[u], members[v], sim) for u, v, sim in near]
    if scope == "across":  # pairs across tasks of one benchmark are never contamination
        benchmark = [it["benchmark"] for it in records]
        groups = [g for g in groups if len({benchmark[i] for part in g[:2] if part for i in part}) > 1]
    same_key, duplicates, contamination = _classify(records, full_keys, groups, params)
    tick("classify")
    exact = exact_duplicate_groups(records)
    tick("exact")
    return Analysis(keys, full_keys, same_key, duplicates, contamination, exact, timings)


def _in_scope(candidates: np.ndarray, members: list[list[int]], benchmark: list[str], scope: str) -> np.ndarray:
    """Which candidate key pairs can give an item pair within one benchmark ("within") or across
    two ("across")."""
    names = {k: frozenset(benchmark[i] for i in members[k]) for k in np.unique(candidates).tolist()}
    if scope == "within":
        return np.fromiter((bool(names[u] & names[v]) for u, v in candidates.tolist()), dtype=bool,
                           count=len(candidates))
    return np.fromiter((len(names[u] | names[v]) > 1 for u, v in candidates.tolist()), dtype=bool,
                       count=len(candidates))


def _verify(distinct: list[str], candidates: np.ndarray, params: DedupParams) -> list[tuple[int, int, float]]:
    """verified_pairs on the candidate keys only: the shingles of the keys no candidate names
    are never computed."""
    if not len(candidates):
        return []
    involved = np.unique(candidates)
    shingles, offsets = shingle_hashes([distinct[k] for k in involved.tolist()], params)
    local = np.searchsorted(involved, candidates)
    return [(int(involved[p]), int(involved[q]), sim)
            for p, q, sim in verified_pairs(shingles, offsets, local, params.lsh_threshold)]
