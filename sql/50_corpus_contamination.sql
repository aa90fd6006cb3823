-- Contamination against a user's own corpus (pipeline/contamination, `wenheng contamination scan`):
-- per corpus x benchmark x task, and a per-benchmark total row (task = '(all)'), how many items
-- were checked (too_short: neither field has an n-gram, so no verdict), how many are contaminated
-- (a field's share of n-grams found in the corpus >= the corpus's threshold) and the rate among
-- the checked ones; which field was flagged, and the fields' mean shares.
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
    count(*) FILTER (WHERE status = 'too_short')               AS n_too_short,
    count(*) FILTER (WHERE contaminated)                       AS n_contaminated,
    count(*) FILTER (WHERE contaminated) / nullif(count(*) FILTER (WHERE status = 'checked'), 0) AS rate,
    count(*) FILTER (WHERE input_share >= threshold)           AS n_input_flagged,
    count(*) FILTER (WHERE label_share >= threshold)           AS n_label_flagged,
    avg(input_share)                                           AS mean_input_share,
    avg(label_share)                                           AS mean_label_share
FROM corpus_overlap
GROUP BY GROUPING SETS ((corpus, benchmark, task), (corpus, benchmark))
ORDER BY corpus, benchmark, grouping(task) DESC, task;

-- The same per field (input: context + question; label: the gold as text + references): items
-- with at least one n-gram in the field, how many were flagged by it (share >= threshold) and the
-- rate among them, the mean and median share, and how many have a share of 0.2 or more (a sign
-- below the threshold). Per corpus x benchmark x task, and task = '(all)' per benchmark.
CREATE OR REPLACE VIEW corpus_contamination_by_field AS
WITH fields AS (
    SELECT corpus, benchmark, task, threshold, 'input' AS field, input_ngrams AS ngrams, input_share AS share
    FROM corpus_overlap
    UNION ALL
    SELECT corpus, benchmark, task, threshold, 'label' AS field, label_ngrams AS ngrams, label_share AS share
    FROM corpus_overlap
)
SELECT
    corpus,
    benchmark,
    CASE WHEN grouping(task) = 1 THEN '(all)' ELSE task END    AS task,
    field,
    any_value(threshold)                                       AS threshold,
    count(*) FILTER (WHERE ngrams > 0)                         AS n_with_ngrams,
    count(*) FILTER (WHERE ngrams > 0 AND share >= threshold)  AS n_flagged,
    count(*) FILTER (WHERE ngrams > 0 AND share >= threshold) / nullif(count(*) FILTER (WHERE ngrams > 0), 0)
                                                               AS rate,
    avg(share) FILTER (WHERE ngrams > 0)                       AS mean_share,
    median(share) FILTER (WHERE ngrams > 0)                    AS median_share,
    count(*) FILTER (WHERE ngrams > 0 AND share >= 0.2)        AS n_share_ge_020
FROM fields
GROUP BY GROUPING SETS ((corpus, benchmark, task, field), (corpus, benchmark, field))
ORDER BY corpus, benchmark, grouping(task) DESC, task, field;
