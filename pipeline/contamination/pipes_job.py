"""The Ray engine's scan, as a Dagster Pipes subprocess of the `corpus_overlap` asset:

    python -m pipeline.contamination.pipes_job      (launched by dg.PipesSubprocessClient)

It reads the corpus spec, the items' n-gram index (`item_ngrams`) and the output folder from the Pipes extras,
scans with Ray (a local Ray on this machine's cores, or the cluster at the spec's `ray_address`),
streams its progress lines to Dagster's log, writes overlap.parquet and quarantine.parquet to the
output folder (and reading.parquet) and sends the summary back as a custom message."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from dagster_pipes import open_dagster_pipes

from pipeline import schema
from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.run import compute_overlap, item_index, reading_row, summary


def main() -> None:
    with open_dagster_pipes() as pipes:
        extras = pipes.extras
        spec = CorpusSpec.model_validate(extras["spec"])
        index = item_index(extras["index_files"], extras["items_files"], spec.ngram, log=pipes.log.info)
        references = {k: CorpusSpec.model_validate(v) for k, v in (extras.get("references") or {}).items()}
        result = compute_overlap(spec, extras["corpus"], index, Path(extras["cache_dir"]), engine="ray",
                                 log=pipes.log.info, references=references)
        out = Path(extras["out_dir"])
        pq.write_table(pa.Table.from_pylist(result.rows, schema=schema.CORPUS_OVERLAP), out / "overlap.parquet")
        pq.write_table(pa.Table.from_pylist(result.quarantine, schema=schema.CORPUS_QUARANTINE),
                       out / "quarantine.parquet")
        pq.write_table(pa.Table.from_pylist([reading_row(extras["corpus"], result.scan)], schema=schema.CORPUS_READING),
                       out / "reading.parquet")
        pipes.report_custom_message(summary(result))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:   # Ctrl-C reached the process group: the launching step reports the stop
        sys.exit(130)
