-- Run once paper_tables_clean is built (pipeline/warehouse/contamination.py).

-- One row per scanned corpus x paper-table row (benchmark, table, row, metric) x model x split x
-- setting x variant: the number on all items and on the corpus's clean items, each with its
-- interval and n, and delta = clean - all. A row none of whose items is clean has no clean number
-- (n_items_clean 0). Only benchmarks the corpus was scanned against.
CREATE OR REPLACE VIEW contamination_effect AS
WITH covered AS (SELECT DISTINCT corpus, benchmark FROM corpus_overlap)
SELECT k.corpus, a.benchmark, a.table_name, a.title, a.row_order, a.row_label, a.model, a.split, a.setting,
       a.variant, a.metric,
       a.score AS score_all, a.ci_low AS ci_low_all, a.ci_high AS ci_high_all,
       a.n_items AS n_items_all, a.n_scored AS n_scored_all,
       c.score AS score_clean, c.ci_low AS ci_low_clean, c.ci_high AS ci_high_clean,
       coalesce(c.n_items, 0) AS n_items_clean, coalesce(c.n_scored, 0) AS n_scored_clean,
       c.score - a.score AS delta, a.headline
FROM paper_tables a
JOIN covered k ON k.benchmark = a.benchmark
LEFT JOIN paper_tables_clean c
       ON c.corpus = k.corpus AND c.benchmark = a.benchmark AND c.table_name = a.table_name
      AND c.row_label = a.row_label AND c.metric = a.metric AND c.model = a.model
      AND c.split IS NOT DISTINCT FROM a.split AND c.setting IS NOT DISTINCT FROM a.setting
      AND c.variant IS NOT DISTINCT FROM a.variant
ORDER BY k.corpus, a.benchmark, a.table_name, a.split, a.setting, a.variant, a.row_order, a.metric, a.model;
