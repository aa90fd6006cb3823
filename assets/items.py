"""items, quarantine, dedup, script variants and prompts: everything before a model is asked.

Each stage is partitioned by benchmark like raw_items, so a corrected WYWEB item rebuilds WYWEB's
items, clusters, variants and prompts only. `contamination` compares benchmarks with each other,
so it alone reads every benchmark's items."""

import dataclasses
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from assets.sources import (
    benchmark_corrections,
    benchmark_partitions,
    content_version,
    dedup_settings,
    partition_check,
    prompt_settings,
)
from pipeline import benchmarks, paths
from pipeline.config import load_dedup_params, load_duplicate_policy, load_sources
from pipeline.corrections import DIFF_FIELDS
from pipeline.dedup.params import DedupParams
from pipeline.dedup.policy import QUALITY_FLAGS, conflicting_clusters, evaluation_items, quality_items, quality_report
from pipeline.groups import ITEMS
from pipeline.prompts import asked_pairs, build_prompt_columns
from resources.engines import ModelsResource, SourcesResource
from resources.lake import Frame, partition_file

if TYPE_CHECKING:
    import pyarrow as pa


def _previous(asset: str, benchmark: str, columns: list[str]) -> list[dict] | None:
    """This benchmark's partition of `asset` as last built, with `columns`; None before the first
    build. The items are what a new source version is diffed against (and whose scripts are
    reused); the corrections audit says which corrections were applied, so one since removed is
    `reverted`, not an upstream change."""
    import pyarrow.parquet as pq

    file = partition_file(paths.lake_dir(), asset, benchmark)
    return pq.read_table(file, columns=columns).to_pylist() if file.is_file() else None


_AUDITED = ["item_id", "field", "old", "reason", "date", "status", "origin"]   # what `reverted` reads


# What build_items reads of the previous build: the compared fields, their hashes, versions and
# places for the diff, and each text's script (known_scripts)
_DIFFED = ["item_id", "benchmark", "source_version", *DIFF_FIELDS, "content_hash", "answer_hash", "script",
           "source_file", "source_locator"]


@dg.multi_asset(
    group_name=ITEMS, code_version="2", can_subset=False, partitions_def=benchmark_partitions,
    ins={"raw_items": dg.AssetIn("raw_items")}, deps=[benchmark_corrections],
    outs={
        "items": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                             description="The benchmark's items in the one schema (pipeline/schema.py)."),
        "quarantine": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                                  description="Rows that could not become items, with file, locator and reason."),
        "corrections_audit": dg.AssetOut(
            io_manager_key="lake", kinds={"parquet"},
            description="One row per correction (applied, stale, out_of_scope or unknown_item), per field "
                        "that changed between two builds of the benchmark's source (changed_upstream), per "
                        "correction the previous build applied that is gone (reverted) and per item removed "
                        "or added (removed_upstream / added_upstream)."),
    },
    # What each output is made from: items from the raw rows and the corrections, quarantine from
    # the raw rows; the audit from the items (the corrections applied to them, and their diff
    # against the previous build).
    internal_asset_deps={
        "items": {dg.AssetKey("raw_items"), dg.AssetKey("benchmark_corrections")},
        "quarantine": {dg.AssetKey("raw_items")},
        "corrections_audit": {dg.AssetKey("items")},
    },
    check_specs=[partition_check("corrections_apply", "corrections_audit", "every correction still matches its item"),
                 partition_check("data_quality", "items", (
                     "no item is flagged for data quality (" + "; ".join(QUALITY_FLAGS.values()) + "); flagged "
                     "items are left out of evaluation unless the sources file says quality: keep"))],
)
def standardized_items(context: dg.AssetExecutionContext, raw_items: Frame, sources: SourcesResource):
    import pandas as pd

    from pipeline import schema
    from pipeline.standardize import all_quarantined, build_items

    benchmark = context.partition_key
    # the configured sources: corrections scoped to a source path are matched against them
    specs = load_sources(sources.path())
    items, quarantined, audit = build_items(schema.records(raw_items), paths.corrections_dir(),
                                            _previous("items", benchmark, _DIFFED), sources=specs,
                                            previous_audit=_previous("corrections_audit", benchmark, _AUDITED))
    spec = specs.get(benchmark)
    empty = all_quarantined(benchmark, items, quarantined, spec is not None and spec.allow_empty)
    if empty:   # the quarantine rows are kept (to read why), then the step fails with one line
        yield dg.Output(schema.to_frame(quarantined, schema.QUARANTINE), output_name="quarantine")
        raise dg.Failure(description=empty)
    items_frame = schema.to_frame(items, schema.ITEMS)
    yield dg.Output(items_frame, output_name="items",
                    data_version=content_version(items_frame, ["item_id", "content_hash", "answer_hash"]),
                    metadata={"per split": dg.MetadataValue.json(items_frame.groupby("split").size().to_dict())})
    flagged = quality_report(items)
    yield dg.AssetCheckResult(
        check_name="data_quality", asset_key="items", passed=not flagged, severity=dg.AssetCheckSeverity.WARN,
        metadata={"items per flag": dg.MetadataValue.json({f: r["items"] for f, r in flagged.items()}),
                  "first ids": dg.MetadataValue.json({f: r["first ids"] for f, r in flagged.items()})})
    quarantine_frame = schema.to_frame(quarantined, schema.QUARANTINE)
    yield dg.Output(quarantine_frame, output_name="quarantine", data_version=content_version(quarantine_frame))
    statuses = pd.Series([row["status"] for row in audit], dtype=object).value_counts().to_dict()
    audit_frame = schema.to_frame(audit, schema.CORRECTIONS_AUDIT)
    yield dg.Output(audit_frame, output_name="corrections_audit", data_version=content_version(audit_frame),
                    metadata={"by status": dg.MetadataValue.json({k: int(v) for k, v in statuses.items()})})
    not_applied = [f"{row['item_id']} {row['field']}: {row['status']}" for row in audit
                   if row["status"] in ("stale", "unknown_item")]
    yield dg.AssetCheckResult(check_name="corrections_apply", asset_key="corrections_audit",
                              passed=not not_applied, severity=dg.AssetCheckSeverity.WARN,
                              metadata={"not applied": dg.MetadataValue.json(not_applied[:100])})


def _dedup_params(sources: SourcesResource) -> tuple[DedupParams, dict[str, dg.MetadataValue]]:
    """The dedup parameters of the sources file (`dedup:`), read once per step, and the metadata
    that shows them on the materialization."""
    params = load_dedup_params(sources.path())
    return params, {"dedup_params": dg.MetadataValue.json(dataclasses.asdict(params))}


# What an item's match key is made of (pipeline.dedup.keys: item_text), and where it belongs.
_KEYED = ["item_id", "benchmark", "task", "context", "question", "choices"]
# What clusters and contamination read of the items: who they are, where, and the hashes exact
# copies (and consistent golds) share.
_CLUSTERED = ["item_id", "benchmark", "task", "content_hash", "answer_hash"]


@dg.asset(group_name=ITEMS, io_manager_key="lake", code_version="1", kinds={"parquet"},
          partitions_def=benchmark_partitions, deps=[dedup_settings])
def item_signatures(context: dg.AssetExecutionContext, items: Frame, sources: SourcesResource) -> dg.Output[Frame]:
    """Each item's dedup match keys and MinHash signature (pipeline/dedup/signatures.py), keyed by
    a hash of the key and the dedup parameters (`dedup:` in the sources file): the rows of the
    previous build whose key is unchanged are reused, so only new or edited items are hashed."""
    import pandas as pd
    import pyarrow.parquet as pq

    from pipeline import schema
    from pipeline.dedup.signatures import SIGNATURES_SCHEMA
    from pipeline.dedup.signatures import item_signatures as item_signatures_of

    params, shown = _dedup_params(sources)
    previous_file = partition_file(paths.lake_dir(), "item_signatures", context.partition_key)
    # what reuse needs of the previous rows: the MinHash of each key hash
    previous = (pq.read_table(previous_file, columns=["key_hash", "minhash"]).to_pylist()
                if previous_file.is_file() else ())
    rows, counts = item_signatures_of(schema.records(items[_KEYED]), params, previous)
    frame = pd.DataFrame(rows, columns=SIGNATURES_SCHEMA.names)
    return dg.Output(frame, data_version=content_version(frame, ["item_id", "key_hash", "full_key"]),
                     metadata={"reused": counts["reused"], "computed": counts["computed"], **shown})


@dg.asset(
    group_name=ITEMS, io_manager_key="lake", code_version="5", kinds={"parquet"},
    partitions_def=benchmark_partitions, deps=[dedup_settings],
    check_specs=[partition_check("consistent_gold", "dedup_clusters",
                                 "duplicates within the benchmark share their gold answer")],
)
def dedup_clusters(items: Frame, item_signatures: Frame, sources: SourcesResource):
    """Near- and exact-duplicate clusters within the benchmark (MinHashLSH candidates from the
    stored signatures, exact Jaccard, union-find), with the parameters of `dedup:` in the
    sources file."""
    from pipeline import schema
    from pipeline.dedup.signatures import clusters_from_signatures

    params, shown = _dedup_params(sources)
    # metadata: which part of a question group an item asks (consistent_gold compares like with like)
    records = schema.records(items[[*_CLUSTERED, "metadata"]])
    rows = clusters_from_signatures(records, item_signatures, params)   # read column by column
    clusters = schema.to_frame(rows, schema.DEDUP_CLUSTERS)
    yield dg.Output(clusters, data_version=content_version(clusters), metadata={
        "clusters": int(clusters["cluster_id"].nunique()) if len(clusters) else 0,
        "items in clusters": len(clusters), **shown})
    conflicts = conflicting_clusters(records, rows)
    yield dg.AssetCheckResult(check_name="consistent_gold", passed=not conflicts, severity=dg.AssetCheckSeverity.WARN,
                              metadata={"conflicting clusters": len(conflicts),
                                        "first 50": dg.MetadataValue.json(conflicts[:50])})


def built_partitions(asset: str) -> list[Path]:
    """The lake files of every benchmark partition of `asset` built so far, by benchmark name (a
    partition not built yet is simply absent)."""
    files = (partition_file(paths.lake_dir(), asset, name) for name in sorted(benchmarks.names()))
    return [file for file in files if file.is_file()]


def _built_partitions(asset: str, columns: list[str]) -> "list[pa.Table]":
    """The non-empty built partitions of `asset`, read for `columns` only."""
    import pyarrow.parquet as pq

    tables = (pq.read_table(file, columns=columns) for file in built_partitions(asset))
    return [table for table in tables if table.num_rows]


@dg.asset(
    group_name=ITEMS, io_manager_key="lake", code_version="4", kinds={"parquet"},
    # every benchmark's items and signatures, read from the lake for the columns it compares (not
    # loaded whole through the IO manager); one not built yet (not configured, or not run) is absent
    deps=[dg.AssetDep("items"), dg.AssetDep("item_signatures"), dedup_settings],
)
def contamination(sources: SourcesResource) -> dg.Output[Frame]:
    """Duplicate pairs across benchmarks, from the stored signatures (`contamination_threshold`
    of `dedup:` in the sources file): reported, never dropped."""
    import pyarrow as pa

    from pipeline import schema
    from pipeline.dedup.signatures import contamination_from_signatures

    params, shown = _dedup_params(sources)
    items = _built_partitions("items", _CLUSTERED)
    records = pa.concat_tables(items).to_pylist() if items else []
    signatures = _built_partitions("item_signatures", ["item_id", "key_hash", "key", "full_key", "minhash"])
    pairs = contamination_from_signatures(records, pa.concat_tables(signatures) if signatures else [],
                                          params) if records else []
    frame = schema.to_frame(pairs, schema.CONTAMINATION)
    per_pair = Counter(f"{c['benchmark_a']} x {c['benchmark_b']}" for c in pairs)
    return dg.Output(frame, data_version=content_version(frame),
                     metadata={"pairs": len(pairs), "benchmarks": len(items),
                               "per benchmark pair": dg.MetadataValue.json(dict(per_pair)), **shown})


@dg.asset(group_name=ITEMS, io_manager_key="lake", code_version="3", kinds={"parquet"},
          partitions_def=benchmark_partitions, deps=[prompt_settings])
def item_variants(context: dg.AssetExecutionContext, items: Frame, models: ModelsResource) -> dg.Output[Frame]:
    """Each item as stored (original), in simplified (OpenCC t2s) and traditional (s2t) script, plus
    any regional form a model asks for (traditional_tw / traditional_hk). The rows of the previous
    build are reused for items whose text is unchanged; only new or edited items are converted."""
    import pyarrow.parquet as pq

    from pipeline.prompts import variants_built
    from pipeline.script import variants_table

    wanted = variants_built(models.specs().values())
    previous_file = partition_file(paths.lake_dir(), "item_variants", context.partition_key)
    previous = pq.read_table(previous_file) if previous_file.is_file() else None
    table, counts = variants_table(items, wanted, previous)   # a few large OpenCC calls per variant
    frame = table.to_pandas()
    return dg.Output(frame, data_version=content_version(frame), metadata=counts)


# What prompts read of the items (the quality and duplicate policies, the protocol's templates,
# budgets, topics and few-shot pools) and of their variants (the texts a prompt shows): no
# question, context or references of the original item, no references of a variant.
_PROMPTED = ["item_id", "benchmark", "split", "task", "task_group", "domain", "format", "choices", "answer",
             "metadata", "answer_hash", "source_file", "source_locator"]
_RENDERED = ["item_id", "variant", "benchmark", "context", "question", "choices", "answer"]


@dg.asset(group_name=ITEMS, io_manager_key="lake", code_version="5", kinds={"parquet"},
          partitions_def=benchmark_partitions, deps=[prompt_settings])
def prompts(context: dg.AssetExecutionContext, items: Frame, item_variants: Frame, dedup_clusters: Frame,
            sources: SourcesResource, models: ModelsResource) -> dg.Output[Frame]:
    """Every item variant of the evaluated splits, rendered under each protocol setting of its
    benchmark (its card's protocol.yaml) that a model of models.yaml asks of it in that variant
    (its `variants` x its `settings`, by default the protocol's `default_settings`), leaving out
    items flagged for data quality unless the sources file says `quality: keep`, and
    within-benchmark duplicates when it says `duplicates: drop`; at most WENHENG_LIMIT evaluated
    items when that is set. A pair no model asks is not rendered; a model or setting added to
    models.yaml adds its rows at the next build, and the rows of the pairs already asked stay
    as they were (prompt_settings, observed as data, holds the pairs asked)."""
    import pandas as pd
    import pyarrow as pa

    from pipeline import schema

    benchmark = context.partition_key
    asked = asked_pairs(models.specs().values(), benchmark)
    policy = load_duplicate_policy(sources.path())
    spec = load_sources(sources.path()).get(benchmark)
    evaluate = {benchmark: spec.evaluate} if spec and spec.evaluate else {}
    usable = quality_items(schema.records(items[_PROMPTED]), {benchmark: spec.quality} if spec else {})
    kept = evaluation_items(usable, schema.records(dedup_clusters), policy)
    kept_ids = {it["item_id"] for it in kept}
    # only the variants some model asks (every item has a row of each: item_variants)
    wanted = item_variants["item_id"].isin(kept_ids) & item_variants["variant"].isin(sorted({v for v, _ in asked}))
    variants = schema.records(item_variants.loc[wanted, _RENDERED])
    limit = sources.limit()
    columns = build_prompt_columns(kept, variants, evaluate, limit=limit,   # messages already JSON text
                                   asked={benchmark: asked})
    nullable_ints = {pa.int64(): pd.Int64Dtype()}   # as schema.to_frame gives integer columns
    frame = pa.Table.from_pydict(columns, schema=schema.PROMPTS).to_pandas(types_mapper=nullable_ints.get)
    per_setting = {str(s): int(n) for s, n in frame.groupby("setting").size().items()}
    return dg.Output(frame, data_version=content_version(frame, ["item_id", "variant", "setting", "prompt_hash"]),
                     metadata={"per setting": dg.MetadataValue.json(per_setting), "duplicates": policy,
                               "pairs asked": dg.MetadataValue.json(sorted(f"{v} x {s}" for v, s in asked)),
                               "limit": limit if limit is not None else "none",
                               "items asked": int(frame["item_id"].nunique()),
                               "items left out": len(items) - len(kept),
                               "items left out: data quality": len(items) - len(usable),
                               "items left out: duplicates": len(usable) - len(kept)})
