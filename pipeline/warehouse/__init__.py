"""Building the DuckDB warehouse from the parquet lake, then the views and aggregates in sql/.

Publishing is incremental. The warehouse records in `_published` the fingerprint (path, size,
mtime_ns) of every file it loaded; the next publish copies the current warehouse to a temporary
file, replaces only the rows of the files whose fingerprint changed (and of the tables filtered
by them: responses by prompts, scores and judgements by responses), recomputes the derived
tables (`model_task_scores`, `paper_tables`) only for the benchmark x model runs those rows
belong to (and `paper_tables_clean`, the paper tables on the items a user's corpus does not
contaminate, for those runs and for the corpora whose scan changed), and swaps the file in. A
reader (`wenheng query`, a notebook) opens either the old file or the new one, never a half-built
database, and DuckDB's single writer is never contended.
The build is whole when there is no warehouse, or when it was built by other code (its layout
hash: this package, the tables' schemas, pipeline/aggregate/, pipeline/history.py, sql/ and the
cards' tables differ).

At each publish the benchmarks' items, responses and scores are also recorded in the history
(pipeline/history.py: append-only parquet files under data/history/), which the warehouse loads
as `item_history`, `response_history`, `score_history` and `audit_history`.

The lake's files are partitioned by benchmark (and model), or, for the scans of a user's corpora
(`corpus_overlap`, `corpus_quarantine`), by corpus: `partition_columns` says which per table.

The modules: build (publish: the phases, the layout hash, what to recompute), load (lake and
history files into the base tables), units (what the paper tables are computed from),
paper_tables, contamination (paper_tables_clean), sqltext (the SQL of sql/templates/ and
sql/derived/), files (the file being built, and opening the published one). Every table's shape
is declared in pipeline/schema.py."""

from pipeline.warehouse.build import (
    DERIVED_FROM,
    LAYOUT_VERSION,
    PAPER_DERIVED_FROM,
    PublishResult,
    build,
    layout_hash,
    publish,
    scope_keys,
    sql_files,
)
from pipeline.warehouse.contamination import (
    CLEAN_COLUMNS,
    CLEAN_TABLE_TYPES,
    CORPUS_TABLE,
    build_clean_paper_tables,
)
from pipeline.warehouse.files import connect_readonly
from pipeline.warehouse.load import (
    BASE_TABLES,
    CURRENT_ONLY,
    FILTERED_BY,
    PARTITION_COLUMNS,
    TABLE_PARTITIONS,
    Part,
    lake_parts,
    partition_columns,
)
from pipeline.warehouse.paper_tables import PAPER_TABLE_TYPES, Scope, build_paper_tables, published_scores
from pipeline.warehouse.sqltext import Key
from pipeline.warehouse.units import (
    PAPER_MODELS_AT_ONCE,
    UNITS_SQL,
    build_quarantine_placed,
    paper_judge_tasks,
    units,
)

__all__ = [
    "BASE_TABLES", "CLEAN_COLUMNS", "CLEAN_TABLE_TYPES", "CORPUS_TABLE", "CURRENT_ONLY", "DERIVED_FROM",
    "FILTERED_BY", "LAYOUT_VERSION", "PAPER_DERIVED_FROM", "PAPER_MODELS_AT_ONCE", "PAPER_TABLE_TYPES",
    "PARTITION_COLUMNS", "TABLE_PARTITIONS", "UNITS_SQL", "Key", "Part", "PublishResult", "Scope",
    "build", "build_clean_paper_tables", "build_paper_tables", "build_quarantine_placed", "connect_readonly",
    "lake_parts", "layout_hash", "paper_judge_tasks", "partition_columns", "publish", "published_scores",
    "scope_keys", "sql_files", "units",
]
