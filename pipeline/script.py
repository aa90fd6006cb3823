"""Simplified / traditional script: detection and variants, with the official OpenCC binding.

The original text is never modified; variants are separate rows (see schema.ITEM_VARIANTS)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from operator import ne
from typing import TYPE_CHECKING, Any

# numpy, pandas, pyarrow and OpenCC are imported where they are used: pipeline.config imports this
# module for VARIANT_CONFIGS, and the definitions load it (pandas alone costs 0.35 s at start-up)
if TYPE_CHECKING:
    import numpy as np
    import opencc
    import pandas as pd
    import pyarrow as pa


@cache
def converter(config: str) -> opencc.OpenCC:
    """OpenCC configs: s2t / t2s (OpenCC standard), s2tw / s2hk (regional forms), t2tw, ..."""
    import opencc

    return opencc.OpenCC(config)


def convert(text: str | None, config: str) -> str | None:
    return None if text is None else converter(config).convert(text)


def detect_script(text: str) -> str:
    """simplified / traditional / mixed, or neutral when no character differs between scripts.

    A character that t2s changes is traditional-only; one that s2t changes is simplified-only.
    A few stray forms (OpenCC normalises some shared variants) do not make a text mixed."""
    return _judge(text, convert(text, "t2s"), convert(text, "s2t"))


def detect_scripts(texts: Sequence[str]) -> list[str]:
    """`[detect_script(t) for t in texts]`, with the conversions batched (convert_many)."""
    return list(map(_judge, texts, convert_many(texts, "t2s"), convert_many(texts, "s2t")))


def _judge(text: str, as_simplified: str, as_traditional: str) -> str:
    if len(as_simplified) == len(text) == len(as_traditional):
        # most texts are in one script: one side is unchanged, which a string compare tells at C speed
        n_trad = 0 if as_simplified == text else sum(map(ne, text, as_simplified))
        n_simp = 0 if as_traditional == text else sum(map(ne, text, as_traditional))
    else:  # phrase-level conversion changed the length: fall back to whole-text comparison
        n_trad, n_simp = int(as_simplified != text), int(as_traditional != text)
    if n_trad == n_simp == 0:
        return "neutral"
    if n_trad >= 3 * n_simp:
        return "traditional"
    if n_simp >= 3 * n_trad:
        return "simplified"
    return "mixed"


# Variant name -> OpenCC config. "traditional" is OpenCC's own standard; the regional forms
# (Taiwan: 為 裡 著, Hong Kong: 為 裏 説) are there for models trained mostly on one of them.
VARIANT_CONFIGS = {
    "original": None,
    "simplified": "t2s",
    "traditional": "s2t",
    "traditional_tw": "s2tw",
    "traditional_hk": "s2hk",
}
TEXT_FIELDS = ("context", "question", "answer")
LIST_FIELDS = ("choices", "references")


def make_variant(item: dict[str, Any], variant: str, config: str | None = None) -> dict[str, Any]:
    """One item's text in one script. `config` overrides the variant's default (e.g. s2twp)."""
    if config is None and variant not in VARIANT_CONFIGS:
        raise ValueError(f"unknown script variant {variant!r}; expected one of {', '.join(VARIANT_CONFIGS)}")
    config = config or VARIANT_CONFIGS[variant]
    row = {"item_id": item["item_id"], "variant": variant, "benchmark": item["benchmark"]}
    for name in TEXT_FIELDS:
        row[name] = item.get(name) if config is None else convert(item.get(name), config)
    for name in LIST_FIELDS:
        values = list(item.get(name) if item.get(name) is not None else [])
        row[name] = values if config is None else [convert(v, config) for v in values]
    return row



def make_variants(items: Iterable[dict[str, Any]], variants: Sequence[str]) -> list[dict[str, Any]]:
    """`[make_variant(item, v) for item in items for v in variants]`, with each variant's texts
    converted by a few large OpenCC calls (convert_many) instead of one call per field."""
    items = list(items)
    for variant in variants:
        if variant not in VARIANT_CONFIGS:
            raise ValueError(f"unknown script variant {variant!r}; expected one of {', '.join(VARIANT_CONFIGS)}")
    if not variants:
        return []
    texts: list[str] = []  # every text of every item, field by field
    for item in items:
        texts += [item[name] for name in TEXT_FIELDS if item.get(name) is not None]
        for name in LIST_FIELDS:
            texts += item.get(name) if item.get(name) is not None else []
    configs = {VARIANT_CONFIGS[v] for v in variants} - {None}
    converted = {None: texts, **{config: convert_many(texts, config) for config in configs}}
    rows, start = [], 0
    for item in items:
        for variant in variants:
            source, k = converted[VARIANT_CONFIGS[variant]], start
            row = {"item_id": item["item_id"], "variant": variant, "benchmark": item["benchmark"]}
            for name in TEXT_FIELDS:
                if item.get(name) is None:
                    row[name] = None
                else:
                    row[name], k = source[k], k + 1
            for name in LIST_FIELDS:
                n = len(item.get(name) if item.get(name) is not None else [])
                row[name], k = source[k:k + n], k + n
            rows.append(row)
        start = k
    return rows


@cache
def variant_columns() -> pa.Schema:
    """The columns of schema.ITEM_VARIANTS (tested equal; schema imports this module for
    detect_script, so an import from there would be a circle)."""
    import pyarrow as pa

    return pa.schema([
        ("item_id", pa.string()), ("variant", pa.string()), ("benchmark", pa.string()),
        *((name, pa.string()) for name in TEXT_FIELDS[:2]), ("choices", pa.list_(pa.string())),
        ("answer", pa.string()), ("references", pa.list_(pa.string())),
    ])


_SOURCE = ("item_id", "benchmark", *TEXT_FIELDS, *LIST_FIELDS)   # what an item's variants are made of


def variants_table(items: pd.DataFrame, variants: Sequence[str], previous: pa.Table | None = None
                   ) -> tuple[pa.Table, dict[str, int]]:
    """make_variants on a frame of items, as a table (variant_columns()), and {"reused": n,
    "converted": m} items. `previous` is the table as last built: an item whose `original` row
    there holds its benchmark and texts unchanged, and which has a row for every variant asked,
    takes those rows as they are; only new or edited items are converted (so a new OpenCC
    release is seen by the edited items only, until the table is built without `previous`)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    columns = variant_columns()
    for variant in variants:
        if variant not in VARIANT_CONFIGS:
            raise ValueError(f"unknown script variant {variant!r}; expected one of {', '.join(VARIANT_CONFIGS)}")
    current = pa.Table.from_pandas(items[list(_SOURCE)], schema=pa.schema([columns.field(n) for n in _SOURCE]),
                                   preserve_index=False)
    variants = list(variants)
    kept = np.zeros(current.num_rows, dtype=bool)
    rows_of: dict[str, np.ndarray] = {}   # per variant: each item's row in `previous` (-1: none)
    if previous is not None and previous.num_rows and current.num_rows and variants:
        previous = previous.select(columns.names).cast(columns).replace_schema_metadata(None)
        ids = pd.Index(previous.column("item_id").to_numpy(zero_copy_only=False))
        variant = previous.column("variant").to_numpy(zero_copy_only=False)
        wanted = current.column("item_id").to_numpy(zero_copy_only=False)
        for name in dict.fromkeys(["original", *variants]):
            mine = np.append(np.flatnonzero(variant == name), -1)   # found -1: the -1 at the end
            index = ids[mine[:-1]]
            rows_of[name] = mine[index.get_indexer(wanted)] if index.is_unique else np.full(len(wanted), -1)
        kept = np.logical_and.reduce([rows >= 0 for rows in rows_of.values()])
        if kept.any():
            kept[kept] = _same_source(current.filter(kept), previous.take(rows_of["original"][kept]))
    fresh = np.flatnonzero(~kept)
    made = make_variants(current.take(fresh).to_pylist(), variants) if len(fresh) else []
    counts = {"reused": int(kept.sum()), "converted": len(fresh)}
    table = pa.Table.from_pylist(made, schema=columns)
    if not kept.any():
        return table, counts
    # item-major, variant-minor, as make_variants orders them: kept items' rows from `previous`,
    # the others' from the new rows (numbered after previous's)
    order = np.empty((current.num_rows, len(variants)), dtype=np.int64)
    for j, name in enumerate(variants):
        order[kept, j] = rows_of[name][kept]
    order[~kept] = previous.num_rows + np.arange(len(fresh) * len(variants)).reshape(len(fresh), len(variants))
    return pa.concat_tables([previous, table]).take(order.reshape(-1)), counts


def _same_source(now: pa.Table, before: pa.Table) -> np.ndarray:
    """Row by row: does `before` (original variant rows) hold `now`'s benchmark and texts? A null
    list now is the empty list make_variants writes for it."""
    import numpy as np
    import pyarrow.compute as pc

    same = np.ones(now.num_rows, dtype=bool)
    for name in ("benchmark", *TEXT_FIELDS):
        a, b = now.column(name), before.column(name)
        equal = pc.fill_null(pc.equal(a, b), False)
        same &= pc.or_(equal, pc.and_(a.is_null(), b.is_null())).to_numpy(zero_copy_only=False)
    for name in LIST_FIELDS:
        a, b = now.column(name).combine_chunks(), before.column(name).combine_chunks()
        lengths = pc.fill_null(pc.list_value_length(a), 0).to_numpy()
        same &= lengths == pc.fill_null(pc.list_value_length(b), 0).to_numpy()
        rows = np.flatnonzero(same & (lengths > 0))
        if len(rows):   # the same lengths, so the elements line up
            x, y = a.take(rows).flatten(), b.take(rows).flatten()
            equal = pc.or_(pc.fill_null(pc.equal(x, y), False), pc.and_(x.is_null(), y.is_null()))
            parent = pc.list_parent_indices(a.take(rows)).to_numpy()
            differs = rows[np.unique(parent[~equal.to_numpy(zero_copy_only=False)])]
            same[differs] = False
    return same


_SEPARATOR = "\x1e"  # joins texts for one OpenCC call: no dictionary entry holds it, so no phrase spans it
_BATCH_CHARS = 1 << 22


def convert_many(texts: Sequence[str], config: str) -> list[str]:
    """`[convert(t, config) for t in texts]` in one OpenCC call per ~4M characters: the texts
    are joined by a separator OpenCC leaves alone and split again. A batch in which a text
    holds the separator itself is converted text by text."""
    opencc_convert = converter(config).convert
    out: list[str] = []
    start = 0
    while start < len(texts):
        end, size = start, 0
        while end < len(texts) and (end == start or size + len(texts[end]) < _BATCH_CHARS):
            size += len(texts[end]) + 1
            end += 1
        chunk = texts[start:end]
        joined = _SEPARATOR.join(chunk)
        parts = opencc_convert(joined).split(_SEPARATOR) if joined.count(_SEPARATOR) == len(chunk) - 1 else []
        out += parts if len(parts) == len(chunk) else [opencc_convert(t) for t in chunk]
        start = end
    return out
