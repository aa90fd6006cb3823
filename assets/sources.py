"""raw_<benchmark>: each benchmark's own files, parsed as they are; unreadable rows quarantined."""


import dagster as dg

from pipeline import benchmarks, schema
from pipeline.config import load_sources
from pipeline.sources.ingest import parse_source
from pipeline.sources.reading import rows_accounted
from resources.engines import SourcesResource


def build_raw_asset(benchmark: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"raw_{benchmark}", group_name="sources", io_manager_key="lake", code_version="1",
        kinds={"python", "parquet"},
        description=f"{benchmark}: the configured source files parsed row by row; unreadable rows kept "
                    "with file, locator and reason.",
        check_specs=[dg.AssetCheckSpec("rows_reconcile", asset=f"raw_{benchmark}",
                                       description="raw rows = items (with the rows merged into them) "
                                                   "+ quarantined, per file; fails when a file's parser "
                                                   "stopped part-way (its rows are not accounted for)")],
    )
    def raw(context: dg.AssetExecutionContext, sources: SourcesResource):
        specs = load_sources(sources.path())
        if benchmark not in specs:
            context.log.info(f"{benchmark} is not configured in {sources.path()}; producing no rows")
            yield dg.Output(schema.to_frame([], schema.RAW_ROWS), metadata={"items": 0, "quarantined": 0})
            yield dg.AssetCheckResult(check_name="rows_reconcile", passed=True, metadata={"files": 0})
            return
        result = parse_source(specs[benchmark])
        frame = schema.to_frame(result.rows(), schema.RAW_ROWS)
        per_file = rows_accounted(schema.records(frame))
        mismatched = {f: (n, per_file.get(f, 0)) for f, n in result.raw_counts.items() if per_file.get(f, 0) != n}
        yield dg.Output(frame, metadata={
            "items": len(result.items), "quarantined": len(result.quarantine),
            "rows merged into items": sum(per_file.values()) - len(frame),
            "files": len(result.raw_counts), "source_version": specs[benchmark].version,
        }, data_version=dg.DataVersion(schema.stable_hash(frame.astype(str).values.tolist())))
        yield dg.AssetCheckResult(
            check_name="rows_reconcile", passed=not mismatched and not result.incomplete,
            metadata={"files": len(result.raw_counts), "mismatched (raw, kept)": str(mismatched or "none"),
                      "files not read to the end": str(result.incomplete or "none")},
        )

    return raw


raw_assets = [build_raw_asset(b) for b in benchmarks.names()]
