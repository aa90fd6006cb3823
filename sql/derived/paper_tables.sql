-- Run once paper_tables is built (pipeline/warehouse/paper_tables.py), before each card table's
-- view (templates/card_table_view.sql).

-- paper_tables' rows as printed: scores rounded; the row's place and whether it is a headline.
CREATE OR REPLACE MACRO paper_rows_shown() AS TABLE
SELECT benchmark, table_name, row_order, model, split, variant, setting, row_label, metric,
       round(score, 2) AS score, round(ci_low, 2) AS ci_low, round(ci_high, 2) AS ci_high,
       round(chance, 2) AS chance, n_scored, n_items, round(coverage, 4) AS coverage, capped, comparable,
       scored_by, note, headline
FROM paper_tables;

-- The rows each card marks as its headline.
CREATE OR REPLACE VIEW leaderboard AS
SELECT * EXCLUDE (headline) FROM paper_rows_shown()
WHERE headline
ORDER BY benchmark, split, setting, variant, row_order, model;

-- Every two models on the same paper-table row (benchmark, table, row, metric, split, setting,
-- variant): A's number minus B's, both with n. Point differences only: the paired-bootstrap
-- interval and p-value of each come from `wenheng compare A B` (pipeline/compare.py).
CREATE OR REPLACE VIEW model_differences AS
SELECT a.benchmark, a.table_name, a.row_order, a.row_label, a.metric, a.split, a.setting, a.variant,
       a.model AS model_a, b.model AS model_b, a.score AS score_a, b.score AS score_b, a.score - b.score AS difference,
       a.n_items, a.n_scored AS n_scored_a, b.n_scored AS n_scored_b, a.comparable AND b.comparable AS comparable,
       a.headline
FROM paper_tables a
JOIN paper_tables b
  ON b.benchmark = a.benchmark AND b.table_name = a.table_name AND b.row_label = a.row_label
 AND b.metric = a.metric AND b.split IS NOT DISTINCT FROM a.split AND b.setting IS NOT DISTINCT FROM a.setting
 AND b.variant IS NOT DISTINCT FROM a.variant AND b.model <> a.model
ORDER BY a.benchmark, a.table_name, a.split, a.setting, a.variant, a.row_order, a.metric, a.model, b.model;
