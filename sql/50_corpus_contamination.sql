-- Contamination against a user's own corpus (pipeline/contamination, `wenheng contamination scan`):
-- per corpus x benchmark x task, and a per-benchmark total row (task = '(all)'), how many items
-- are at each level. The level is decided once, per row, in pipeline/contamination/overlap.py
-- (item_with_answer, item, source_only, clean, too_short); this view only counts. The rate is
-- contaminated (item or item_with_answer) among the checked items (too_short: no verdict); the
-- source-only rate is among all items (an item without n-grams of its own may quote a passage).
-- No corpus scanned: no rows.
CREATE OR REPLACE VIEW corpus_contamination AS
SELECT
    corpus,
    any_value(corpus_version)                                  AS corpus_version,
    any_value(ngram)                                           AS ngram,
    any_value(threshold)                                       AS threshold,
    benchmark,
    CASE WHEN grouping(task) = 1 THEN '(all)' ELSE task END    AS task,
    count(*)                                                   AS n_items,
    count(*) FILTER (WHERE status = 'checked')                 AS n_checked,
    count(*) FILTER (WHERE level = 'too_short')                AS n_too_short,
    count(*) FILTER (WHERE contaminated)                       AS n_contaminated,
    count(*) FILTER (WHERE contaminated) / nullif(count(*) FILTER (WHERE status = 'checked'), 0) AS rate,
    count(*) FILTER (WHERE level = 'item_with_answer')         AS n_item_with_answer,
    count(*) FILTER (WHERE level = 'item')                     AS n_item,
    count(*) FILTER (WHERE level = 'source_only')              AS n_source_only,
    count(*) FILTER (WHERE level = 'clean')                    AS n_clean,
    count(*) FILTER (WHERE level = 'source_only') / count(*)  AS source_only_rate,   -- of all items
    count(*) FILTER (WHERE input_flagged)                      AS n_input_flagged,
    count(*) FILTER (WHERE label_flagged)                      AS n_label_flagged,
    avg(specific_share)                                        AS mean_specific_share,
    avg(input_share)                                           AS mean_input_share,
    avg(label_share)                                           AS mean_label_share
FROM corpus_overlap
GROUP BY GROUPING SETS ((corpus, benchmark, task), (corpus, benchmark))
ORDER BY corpus, benchmark, grouping(task) DESC, task;

-- The same per field (input: context + question + options; label: the gold as text + references),
-- on the field's specific n-grams (its own, neither template nor source): items with at least one,
-- how many were flagged by it (the row's input_flagged / label_flagged) and the rate among them,
-- the mean and median specific share, and how many have a share of 0.2 or more (a sign below the
-- threshold). Per corpus x benchmark x task, and task = '(all)' per benchmark.
CREATE OR REPLACE VIEW corpus_contamination_by_field AS
WITH fields AS (
    SELECT corpus, benchmark, task, threshold, 'input' AS field, input_specific_ngrams AS ngrams,
           input_specific_matched / nullif(input_specific_ngrams, 0) AS share, input_flagged AS flagged
    FROM corpus_overlap
    UNION ALL
    SELECT corpus, benchmark, task, threshold, 'label' AS field, label_specific_ngrams AS ngrams,
           label_specific_matched / nullif(label_specific_ngrams, 0) AS share, label_flagged AS flagged
    FROM corpus_overlap
)
SELECT
    corpus,
    benchmark,
    CASE WHEN grouping(task) = 1 THEN '(all)' ELSE task END    AS task,
    field,
    any_value(threshold)                                       AS threshold,
    count(*) FILTER (WHERE ngrams > 0)                         AS n_with_ngrams,
    count(*) FILTER (WHERE flagged)                            AS n_flagged,
    count(*) FILTER (WHERE flagged) / nullif(count(*) FILTER (WHERE ngrams > 0), 0)
                                                               AS rate,
    avg(share) FILTER (WHERE ngrams > 0)                       AS mean_share,
    median(share) FILTER (WHERE ngrams > 0)                    AS median_share,
    count(*) FILTER (WHERE ngrams > 0 AND share >= 0.2)        AS n_share_ge_020
FROM fields
GROUP BY GROUPING SETS ((corpus, benchmark, task, field), (corpus, benchmark, field))
ORDER BY corpus, benchmark, grouping(task) DESC, task, field;
