"""items, quarantine, dedup, script variants and prompts: everything before a model is asked."""


from collections import Counter

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq

from pipeline import benchmarks, paths, schema
from pipeline.config import load_duplicate_policy, load_sources
from pipeline.dedup import DedupParams, cluster, conflicting_clusters, evaluation_items
from pipeline.dedup.policy import QUALITY_FLAGS, quality_items, quality_report
from pipeline.prompts import build_prompt_rows
from pipeline.script import make_variant
from pipeline.standardize import build_items
from resources.engines import ModelsResource, SourcesResource

RAW_KEYS = [f"raw_{b}" for b in benchmarks.names()]


def _frame_version(frame: pd.DataFrame, columns: list[str]) -> dg.DataVersion:
    """Data version from content, so an unchanged table does not mark its downstream stale."""
    return dg.DataVersion(schema.stable_hash(frame[columns].astype(str).values.tolist()))


@dg.multi_asset(
    group_name="items", code_version="1", can_subset=False,
    ins={key: dg.AssetIn(key) for key in RAW_KEYS},
    outs={
        "items": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                             description="Every benchmark item in the one schema (pipeline/schema.py)."),
        "quarantine": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                                  description="Rows that could not become items, with file, locator and reason."),
        "corrections_audit": dg.AssetOut(
            io_manager_key="lake", kinds={"parquet"},
            description="One row per correction (applied, stale or unknown item) and per field that "
                        "changed between two versions of a source."),
    },
    # What each output is made from: items and quarantine from the raw rows; the audit from the
    # items (the corrections applied to them, and their diff against the previous build).
    internal_asset_deps={
        "items": {dg.AssetKey.from_coercible(key) for key in RAW_KEYS},
        "quarantine": {dg.AssetKey.from_coercible(key) for key in RAW_KEYS},
        "corrections_audit": {dg.AssetKey("items")},
    },
    check_specs=[dg.AssetCheckSpec("corrections_apply", asset="corrections_audit",
                                   description="every correction still matches its item"),
                 dg.AssetCheckSpec("data_quality", asset="items", description=(
                     "no item is flagged for data quality (" + "; ".join(QUALITY_FLAGS.values()) + "); flagged "
                     "items are left out of evaluation unless the sources file says quality: keep"))],
)
def standardized_items(**raw_frames: pd.DataFrame):
    raw = schema.records(pd.concat(raw_frames.values(), ignore_index=True))
    # The items this asset wrote last time (if any): a new source version is diffed against them.
    previous_file = paths.lake_dir() / "items.parquet"
    previous = pq.read_table(previous_file).to_pylist() if previous_file.is_file() else None
    items, quarantined, audit = build_items(raw, paths.corrections_dir(), previous)
    items_frame = schema.to_frame(items, schema.ITEMS)
    yield dg.Output(items_frame, output_name="items",
                    data_version=_frame_version(items_frame, ["item_id", "content_hash", "answer_hash"]),
                    metadata={"per benchmark": dg.MetadataValue.json(
                        items_frame.groupby("benchmark").size().to_dict())})
    flagged = quality_report(items)
    yield dg.AssetCheckResult(
        check_name="data_quality", asset_key="items", passed=not flagged, severity=dg.AssetCheckSeverity.WARN,
        metadata={"items per flag": dg.MetadataValue.json({f: r["items"] for f, r in flagged.items()}),
                  "first ids": dg.MetadataValue.json({f: r["first ids"] for f, r in flagged.items()})})
    yield dg.Output(schema.to_frame(quarantined, schema.QUARANTINE), output_name="quarantine",
                    metadata={"rows": len(quarantined)})
    statuses = pd.Series([row["status"] for row in audit], dtype=object).value_counts().to_dict()
    yield dg.Output(schema.to_frame(audit, schema.CORRECTIONS_AUDIT), output_name="corrections_audit",
                    metadata={"by status": dg.MetadataValue.json({k: int(v) for k, v in statuses.items()})})
    not_applied = [f"{row['item_id']} {row['field']}: {row['status']}" for row in audit
                   if row["status"] in ("stale", "unknown_item")]
    yield dg.AssetCheckResult(check_name="corrections_apply", asset_key="corrections_audit",
                              passed=not not_applied, severity=dg.AssetCheckSeverity.WARN,
                              metadata={"not applied": dg.MetadataValue.json(not_applied[:100])})


@dg.multi_asset(
    group_name="items", code_version="2", can_subset=False,
    outs={
        "dedup_clusters": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                                      description="Near- and exact-duplicate clusters within each benchmark "
                                                  "(MinHashLSH candidates, exact Jaccard, union-find)."),
        "contamination": dg.AssetOut(io_manager_key="lake", kinds={"parquet"},
                                     description="Duplicate pairs across benchmarks: reported, never dropped."),
    },
    check_specs=[dg.AssetCheckSpec("consistent_gold", asset="dedup_clusters",
                                   description="duplicates within a benchmark share their gold answer")],
)
def dedup(items: pd.DataFrame):
    records = schema.records(items)
    rows, contamination = cluster(records, DedupParams())
    clusters = schema.to_frame(rows, schema.DEDUP_CLUSTERS)
    yield dg.Output(clusters, output_name="dedup_clusters", metadata={
        "clusters": int(clusters["cluster_id"].nunique()) if len(clusters) else 0,
        "items in clusters": len(clusters)})
    pairs = Counter(f"{c['benchmark_a']} x {c['benchmark_b']}" for c in contamination)
    yield dg.Output(schema.to_frame(contamination, schema.CONTAMINATION), output_name="contamination",
                    metadata={"pairs": len(contamination), "per benchmark pair": dg.MetadataValue.json(dict(pairs))})
    conflicts = conflicting_clusters(records, rows)
    yield dg.AssetCheckResult(check_name="consistent_gold", asset_key="dedup_clusters",
                              passed=not conflicts, severity=dg.AssetCheckSeverity.WARN,
                              metadata={"conflicting clusters": len(conflicts),
                                        "first 50": dg.MetadataValue.json(conflicts[:50])})


@dg.asset(group_name="items", io_manager_key="lake", code_version="2", kinds={"parquet"})
def item_variants(items: pd.DataFrame, models: ModelsResource) -> pd.DataFrame:
    """Each item as stored (original), in simplified (OpenCC t2s) and traditional (s2t) script, plus
    any regional form a model asks for (traditional_tw / traditional_hk)."""
    wanted = list(schema.VARIANTS) + sorted({v for spec in models.specs().values() for v in spec.variants}
                                            - set(schema.VARIANTS))
    records = schema.records(items)
    rows = [make_variant(item, variant) for item in records for variant in wanted]
    return schema.to_frame(rows, schema.ITEM_VARIANTS)


@dg.asset(group_name="items", io_manager_key="lake", code_version="3", kinds={"parquet"})
def prompts(items: pd.DataFrame, item_variants: pd.DataFrame, dedup_clusters: pd.DataFrame,
            sources: SourcesResource) -> dg.Output[pd.DataFrame]:
    """Every item variant of the evaluated splits, rendered under each protocol setting of its
    benchmark (its card's protocol.yaml), leaving out items flagged for data quality unless the
    sources file says `quality: keep`, and within-benchmark duplicates when it says
    `duplicates: drop`."""
    policy = load_duplicate_policy(sources.path())
    specs = load_sources(sources.path())
    evaluate = {name: spec.evaluate for name, spec in specs.items() if spec.evaluate}
    usable = quality_items(schema.records(items), {name: spec.quality for name, spec in specs.items()})
    kept = evaluation_items(usable, schema.records(dedup_clusters), policy)
    kept_ids = {it["item_id"] for it in kept}
    variants = [v for v in schema.records(item_variants) if v["item_id"] in kept_ids]
    rows = build_prompt_rows(kept, variants, evaluate)
    frame = schema.to_frame(rows, schema.PROMPTS)
    per_setting = {f"{b}/{s}": int(n) for (b, s), n in frame.groupby(["benchmark", "setting"]).size().items()}
    return dg.Output(frame, data_version=_frame_version(frame, ["item_id", "variant", "setting", "prompt_hash"]),
                     metadata={"per setting": dg.MetadataValue.json(per_setting), "duplicates": policy,
                               "items left out": len(items) - len(kept),
                               "items left out: data quality": len(items) - len(usable),
                               "items left out: duplicates": len(usable) - len(kept)})
