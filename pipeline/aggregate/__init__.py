"""Paper-shaped tables from per-item scores, each number with its n, coverage and a 95% interval.

A benchmark card's `tables.yaml` declares the tables its paper publishes: which rows a table has,
which items a row covers, how its number is computed (`METRICS`) and how rows nest (`mean_of`:
the unweighted mean of sub-groups' numbers, as AC-EVAL averages subjects within a level and then
the levels). Without `mean_of` a row is computed over its items at once (micro): the mean score,
or a corpus metric from summed per-item statistics (corpus BLEU/chrF, micro-F1).

Intervals are a seeded Poisson bootstrap: replicate b gives each scoring unit (an item, or a
group for group metrics) a Poisson(1) weight derived from a hash of its id, b and the seed, so the
same unit carries the same weight for every model (paired comparisons) and in any process. Every
replicate recomputes the row exactly like the point estimate, nesting included; the interval is
the 2.5th-97.5th percentile of the replicates. Where questions share a passage or poem, a card
declares `cluster: context`: the weight is then drawn per cluster (every question about one text
carries the same weight), the cluster bootstrap, so that correlated answers do not pass for
independent evidence (Miller 2024, "Adding error bars to evals").

What a row covers: `n_items` counts every official row of the evaluated split for the row's
task(s), not only the items asked. The units are the items asked, plus the items the data-quality or
duplicate policy left out and the rows quarantined at ingestion (`not_asked` says why: unscored units,
so coverage < 1, and the row's note counts them). A card's `quarantine:` declares where its files put
a row (`place_quarantine`), so that a quarantined row counts in its split's and task's rows; its
`notes:` add what the card itself changed about a task (merged references, simplified labels).

Chance: a card's `chance:` names, per task or item format, how an item's chance level is computed
from its options (1/k of k options; k^-n for n questions asked at once, all to be right) or its
label set; `chance` in a row is the mean over its items asked (x100), nested like the score, and
null when any of them has none (generation, labeling).

`combine` is the same nesting rule applied to numbers already aggregated (a paper's per-task
table), which is how the reproduction tests check the rules against published aggregates.

The modules: spec (a card's tables.yaml), metrics (per-unit statistics and the numbers computed
from their sums), coverage (official rows not asked, card notes, who scored a row), chance
(chance levels), bootstrap (weights, a row's number and its replicates), rows (every table's rows
for every run).
"""

from pipeline.aggregate.bootstrap import (
    REPLICATES,
    SEED,
    Cell,
    clusters_note,
    combine,
    compute_cell,
    poisson_weights,
    unit_weights,
)
from pipeline.aggregate.chance import chance_of, unit_chance
from pipeline.aggregate.coverage import card_notes, left_out_notes, place_quarantine, provenance
from pipeline.aggregate.metrics import METRICS, Metric, item_stats, metric
from pipeline.aggregate.rows import PAPER_TABLE_COLUMNS, RUN_KEYS, paper_tables, table_rows
from pipeline.aggregate.spec import (
    CHANCE_RULES,
    CLUSTER_COLUMNS,
    DEFAULT_TABLES,
    QUARANTINE_KEYS,
    QUARANTINED,
    CardTables,
    TableSpec,
    declared_tasks,
    load_tables,
)

__all__ = [
    "CHANCE_RULES", "CLUSTER_COLUMNS", "DEFAULT_TABLES", "METRICS", "PAPER_TABLE_COLUMNS", "QUARANTINED",
    "QUARANTINE_KEYS", "REPLICATES", "RUN_KEYS", "SEED", "CardTables", "Cell", "Metric", "TableSpec",
    "card_notes", "chance_of", "clusters_note", "combine", "compute_cell", "declared_tasks", "item_stats",
    "left_out_notes", "load_tables", "metric", "paper_tables", "place_quarantine", "poisson_weights",
    "provenance", "table_rows", "unit_chance", "unit_weights",
]
