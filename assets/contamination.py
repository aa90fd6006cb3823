"""Contamination against a user's own corpus: `corpus_overlap`, `corpus_quarantine` and
`corpus_reading`, one partition per corpus of data/corpora.yaml (pipeline/contamination).

Every benchmark's items are read from the lake (all of them: a corpus is compared with every item).
The local engine scans in this step; the Ray engine runs in a subprocess launched through Dagster
Pipes (`pipeline/contamination/pipes_job.py`): its logs and summary stream back to this step, and
the Ray driver (its runtime, threads and memory) lives and dies outside the step process. Pipes
needs nothing beyond Dagster, and the same command works against a cluster (`ray_address`);
dagster-ray would add a dependency to manage clusters that `ray start` or KubeRay already run.
"""

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from assets.items import built_partitions
from assets.sources import benchmark_partitions, content_version, index_settings, observed
from pipeline import paths, progress
from pipeline.groups import CORPORA, ITEMS
from pipeline.settings import settings
from resources.engines import CorporaResource
from resources.lake import Frame, partition_file

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.contamination.corpora import CorpusSpec

corpora_partitions = dg.DynamicPartitionsDefinition(name="corpora")
# A corpus's entry in data/corpora.yaml and its files, observed as data (assets/sources.py: observed)
corpus_files = observed(
    "corpus_files", "The corpus's entry in data/corpora.yaml, the reference corpora its verdicts set apart, their "
    "files (names, sizes, modification times) and the scan engine; a remote corpus is not observed (its files "
    "are listed only by the scan).", CORPORA, corpora_partitions)


@dg.multi_asset(
    group_name=CORPORA, code_version="1", can_subset=False, partitions_def=corpora_partitions,
    # every benchmark's n-gram index, read from the lake (and its items, to check the index is theirs)
    deps=[dg.AssetDep("item_ngrams", partition_mapping=dg.AllPartitionMapping()),
          dg.AssetDep("items", partition_mapping=dg.AllPartitionMapping()), corpus_files],
    outs={
        "corpus_overlap": dg.AssetOut(
            io_manager_key="lake", kinds={"parquet"},
            description="One row per benchmark item x corpus: what the corpus holds of the item's own "
                        "n-grams (specific) and of the passage it quotes (source), with evidence, and its "
                        "level: item_with_answer, item, source_only, clean or too_short."),
        "corpus_quarantine": dg.AssetOut(
            io_manager_key="lake", kinds={"parquet"},
            description="Corpus files that could not be read, with the reason; the others were scanned."),
        "corpus_reading": dg.AssetOut(
            io_manager_key="lake", kinds={"parquet"},
            description="What the corpus's files held: documents read, bad lines skipped, empty files, "
                        "invalid UTF-8, the first bad line's reason."),
    },
)
def corpus_overlap(context: dg.AssetExecutionContext, corpora: CorporaResource,
                   pipes_subprocess_client: dg.PipesSubprocessClient):
    """Scans the corpus (only its files that changed since the last scan, unless the items' n-gram
    index changed) and compares it with every built benchmark item."""
    from pipeline import schema
    from pipeline.contamination.run import compute_overlap, item_index, reading_row, summary

    name = context.partition_key
    specs = corpora.specs()
    if name not in specs:
        raise dg.Failure(f"corpus {name!r} is not in {corpora.path()} (configured: {', '.join(specs) or 'none'})")
    spec = specs[name]
    engine = settings().scan_engine or spec.engine
    items_files = [str(f) for f in built_partitions("items")]
    if not items_files:
        raise dg.Failure("no benchmark items are built yet: run `wenheng run` (or materialize `items`) first")
    index_files = [str(f) for f in built_partitions("item_ngrams")]
    references = {k: v for k, v in specs.items() if v.reference}
    if engine == "ray":
        rows, quarantine, reading, info = _scan_with_ray(context, pipes_subprocess_client, spec, name,
                                                         {"items_files": items_files, "index_files": index_files},
                                                         references)
    else:
        log = _progress_log(context)
        index = item_index(index_files, items_files, spec.ngram, log=log)
        result = compute_overlap(spec, name, index, paths.cache_dir(), engine="local", log=log,
                                 references=references)
        rows, quarantine, info = result.rows, result.quarantine, summary(result)
        reading = [reading_row(name, result.scan)]
    overlap = schema.to_frame(rows, schema.CORPUS_OVERLAP)
    bad = schema.to_frame(quarantine, schema.CORPUS_QUARANTINE)
    read = schema.to_frame(reading, schema.CORPUS_READING)
    yield dg.Output(overlap, output_name="corpus_overlap", data_version=content_version(overlap),
                    metadata=_metadata(name, info, overlap))
    yield dg.Output(bad, output_name="corpus_quarantine", data_version=content_version(bad),
                    metadata={"files": len(bad), "first": dg.MetadataValue.json(quarantine[:20])})
    yield dg.Output(read, output_name="corpus_reading", data_version=content_version(read),
                    metadata={k: v for k, v in reading[0].items() if k != "corpus" and v is not None})


@dg.asset(
    group_name=ITEMS, io_manager_key="lake", code_version="1", kinds={"parquet"}, partitions_def=benchmark_partitions,
    deps=[dg.AssetDep("items"), index_settings],   # items: read from the lake for the columns the index needs
    description="One benchmark's contamination index: each item's input and label n-grams, each marked "
                "template (shared by many items), source (the passage it quotes) or specific, for each n-gram "
                "size the corpora use. Every corpus_overlap scan reads it.")
def item_ngrams(context: dg.AssetExecutionContext, corpora: CorporaResource) -> dg.Output[Frame]:
    """Built once per prepare run, as datatrove builds its n-gram index apart from the filter that
    reads it: a scan only looks corpus n-grams up in it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.contamination.corpora import ngram_sizes
    from pipeline.contamination.index import ITEM_COLUMNS, KINDS, build_index, index_table, table_digest

    items = pq.read_table(partition_file(paths.lake_dir(), "items", context.partition_key),
                          columns=ITEM_COLUMNS).to_pylist()
    indexes = [build_index(items, n) for n in ngram_sizes(corpora.path())]
    table = pa.concat_tables([index_table(index) for index in indexes])
    kinds = {f"{index.n}-grams": {kind: int((index.gram_kind == k).sum()) for k, kind in enumerate(KINDS)}
             for index in indexes}
    return dg.Output(table.to_pandas(), data_version=dg.DataVersion(table_digest(table)),
                     metadata={"items": len(items), "n-gram sizes": [index.n for index in indexes],
                               "n-grams by kind": dg.MetadataValue.json(kinds)})


def _progress_log(context: dg.AssetExecutionContext):
    """Progress lines to the run's log and to the terminal `wenheng` claimed (inside a step, stderr
    is a pipe), so a long scan is seen as it goes."""
    stream = progress.default_stream()

    def log(line: str) -> None:
        context.log.info(line)
        print(f"[wenheng]   {line}", file=stream, flush=True)
    return log


def _scan_with_ray(context, client: dg.PipesSubprocessClient, spec: "CorpusSpec", name: str,
                   lake_files: dict[str, list[str]],
                   references: dict) -> tuple[list[dict], list[dict], list[dict], dict]:
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="wenheng-scan-") as out:
        invocation = client.run(
            context=context, command=[sys.executable, "-m", "pipeline.contamination.pipes_job"],
            extras={"corpus": name, "spec": spec.model_dump(), **lake_files,
                    "references": {k: v.model_dump() for k, v in references.items()},
                    "cache_dir": str(paths.cache_dir()), "out_dir": out},
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.PROJECT_ROOT),
                                                                           os.environ.get("PYTHONPATH")]))})
        messages = invocation.get_custom_messages()
        info = messages[-1] if messages else {}
        rows = pq.read_table(Path(out) / "overlap.parquet").to_pylist()
        quarantine = pq.read_table(Path(out) / "quarantine.parquet").to_pylist()
        reading = pq.read_table(Path(out) / "reading.parquet").to_pylist()
    return rows, quarantine, reading, info


def _metadata(name: str, info: dict, overlap: "pd.DataFrame") -> dict:
    """The scan's facts (`info`) and what its rows say, counted by the warehouse's own views."""
    from pipeline.contamination.overlap import LEVELS
    from pipeline.contamination.tables import rows_report

    report = rows_report(overlap, name)
    table = ["| benchmark | items | checked | contaminated | rate | " + " | ".join(LEVELS) + " |",
             "| --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in LEVELS) + " |"]
    for b in report.benchmarks:
        rate = "-" if b["rate"] is None else f"{100 * b['rate']:.1f}%"
        table.append(f"| {b['benchmark']} | {b['n_items']} | {b['n_checked']} | {b['n_contaminated']} | {rate} | "
                     + " | ".join(str(b[f"n_{level}"]) for level in LEVELS) + " |")
    histogram = ["| specific share | items |", "| --- | ---: |",
                 *(f"| {k} | {v} |" for k, v in report.histogram.items())]
    levels = {level: sum(b[f"n_{level}"] for b in report.benchmarks) for level in LEVELS}
    examples = {"contaminated": report.flagged, "source_only": report.source_only,
                "clean, with some of its own n-grams found": report.not_flagged}
    keep = ("engine", "files", "files scanned", "files reused", "files quarantined", "MB", "seconds", "ngram", "index")
    return {**{k: info[k] for k in keep if k in info},
            "items": report.items, "contaminated": report.contaminated, "too short": report.too_short,
            **{f"reading: {k}": v for k, v in info.get("reading", {}).items()},
            "levels": dg.MetadataValue.json(levels),
            "per benchmark": dg.MetadataValue.md("\n".join(table)),
            "specific shares": dg.MetadataValue.md("\n".join(histogram)),
            "examples": dg.MetadataValue.json(examples)}
