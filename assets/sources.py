"""raw_items[benchmark]: each benchmark's own files, parsed as they are; unreadable rows quarantined.

Every item stage is partitioned by benchmark (`benchmark_partitions`, one key per card in the
registry), so a change to one benchmark's files or corrections rebuilds only its partitions.

The assets' modules import pandas, pyarrow and the modules that do their work inside the assets'
functions: loading the definitions (`dagster dev`, every `wenheng` command) then imports none of
them (perf/startup.py). Lake frames are annotated `Frame` (resources/lake.py), which Dagster
resolves without pandas. (No `from __future__ import annotations` in these modules: Dagster
compares a `context` annotation with its context classes as written, and a string is none of them.)"""

import warnings
from typing import TYPE_CHECKING

import dagster as dg

from pipeline import benchmarks
from pipeline.config import load_sources
from pipeline.groups import SOURCES
from resources.engines import SourcesResource

if TYPE_CHECKING:
    import pandas as pd

benchmark_partitions = dg.StaticPartitionsDefinition(list(benchmarks.names()))


def partition_check(name: str, asset: str, description: str, **kwargs) -> dg.AssetCheckSpec:
    """A check evaluated once per benchmark partition of its asset."""
    with warnings.catch_warnings():   # a check per partition is a preview feature in Dagster 1.13
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=asset, partitions_def=kwargs.pop("partitions_def", benchmark_partitions),
                                 description=description, **kwargs)


def observed(name: str, description: str, group: str = SOURCES,
             partitions_def: dg.PartitionsDefinition = benchmark_partitions) -> dg.AssetsDefinition:
    """An asset that no run builds: configuration observed as data. `wenheng run` and the stale
    sensor report an observation, with a digest of it as the data version, whenever the digest
    changed (pipeline/run_inputs.py), so Dagster's own stale rule and the UI see a change as
    wenheng's plan does. Always partitioned: Dagster reads an unpartitioned external asset's data
    version from materializations only, so a setting every benchmark shares is observed per
    benchmark, as that benchmark's stages read it."""
    return dg.AssetsDefinition(specs=[dg.AssetSpec(name, group_name=group, partitions_def=partitions_def,
                                                   kinds={"yaml"}, description=description + " Observed, not built.")])


benchmark_files = observed("benchmark_files", "The benchmark's source files (names, sizes, modification times) "
                                              "and its entry in the sources file.")
benchmark_corrections = observed("benchmark_corrections", "The corrections to the benchmark's items "
                                                          "(data/corrections/).")
# The settings the later item stages read, each observed where its readers are
prompt_settings = observed("prompt_settings", "What the benchmark's variants and prompts are built for besides "
                           "its items: the (variant, setting) pairs data/models.yaml asks of it, the regional "
                           "variants any model asks, and the sources file's duplicates and quality policies and "
                           "evaluated splits for it.")
dedup_settings = observed("dedup_settings", "The sources file's `dedup:` parameters (pipeline/dedup/params.py), "
                          "which the benchmark's item signatures, clusters and contamination are computed with.")
index_settings = observed("index_settings", "The n-gram sizes of data/corpora.yaml, which each benchmark's "
                          "contamination index (item_ngrams) is built for.")


def content_version(frame: "pd.DataFrame", columns: list[str] | None = None) -> dg.DataVersion:
    """Data version from content, so an unchanged partition does not mark its downstream stale
    (pipeline/sources/digest.py: vectorised, column by column)."""
    from pipeline.sources.digest import frame_digest

    return dg.DataVersion(frame_digest(frame, columns))


@dg.asset(
    group_name=SOURCES, io_manager_key="lake", code_version="2", kinds={"python", "parquet"},
    partitions_def=benchmark_partitions, deps=[benchmark_files],
    description="One benchmark's configured source files parsed row by row; unreadable rows kept with "
                "file, locator and reason.",
    check_specs=[partition_check("rows_reconcile", "raw_items",
                                 "raw rows = items (with the rows merged into them) + quarantined, per file; "
                                 "fails when a file's parser stopped part-way (its rows are not accounted for)")],
)
def raw_items(context: dg.AssetExecutionContext, sources: SourcesResource):
    from pipeline import schema
    from pipeline.ingest import parse_source
    from pipeline.sources.accounting import rows_accounted

    benchmark = context.partition_key
    specs = load_sources(sources.path())
    if benchmark not in specs:
        context.log.info(f"{benchmark} is not configured in {sources.path()}; producing no rows")
        frame = schema.to_frame([], schema.RAW_ROWS)
        yield dg.Output(frame, metadata={"items": 0, "quarantined": 0}, data_version=content_version(frame))
        yield dg.AssetCheckResult(check_name="rows_reconcile", passed=True, metadata={"files": 0})
        return
    result = parse_source(specs[benchmark])
    rows = result.rows()
    frame = schema.to_frame(rows, schema.RAW_ROWS)
    per_file = rows_accounted(rows)   # the rows the frame holds, counted before they are encoded
    mismatched = {f: (n, per_file.get(f, 0)) for f, n in result.raw_counts.items() if per_file.get(f, 0) != n}
    yield dg.Output(frame, metadata={
        "items": len(result.items), "quarantined": len(result.quarantine),
        "rows merged into items": sum(per_file.values()) - len(frame),
        "files": len(result.raw_counts), "source_version": specs[benchmark].version,
    }, data_version=content_version(frame))
    yield dg.AssetCheckResult(
        check_name="rows_reconcile", passed=not mismatched and not result.incomplete,
        metadata={"files": len(result.raw_counts), "mismatched (raw, kept)": str(mismatched or "none"),
                  "files not read to the end": str(result.incomplete or "none")},
    )
