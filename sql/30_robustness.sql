-- Script robustness: how a model's score moves when the same items are asked in traditional
-- instead of simplified script, per model x benchmark x task (and prompt setting).
-- Paired by item: only items scored in both scripts count, so n is the number of pairs and the
-- delta is not skewed by items that failed in one script. One row per traditional variant
-- (traditional, and traditional_tw / traditional_hk when those were run).
-- delta > 0: better in traditional. No traditional or simplified scores: no rows.
CREATE OR REPLACE VIEW robustness AS
WITH paired AS (
    SELECT t.model, t.setting, t.variant, t.item_id,
           s.score AS simplified_score, t.score AS traditional_score
    FROM scores t
    JOIN scores s
      ON s.item_id = t.item_id AND s.setting = t.setting AND s.model = t.model
     AND s.variant = 'simplified' AND s.kind = t.kind
    WHERE t.variant LIKE 'traditional%' AND coalesce(t.kind, 'rule') = 'rule'
      AND t.score IS NOT NULL AND s.score IS NOT NULL
)
SELECT
    p.model,
    i.benchmark,
    i.task_group,
    i.task,
    p.setting,
    p.variant,
    count(*)                                            AS n,
    avg(p.simplified_score)                             AS simplified,
    avg(p.traditional_score)                            AS traditional,
    avg(p.traditional_score) - avg(p.simplified_score)  AS delta
FROM paired p
JOIN items i USING (item_id)
GROUP BY p.model, i.benchmark, i.task_group, i.task, p.setting, p.variant
ORDER BY p.model, i.benchmark, i.task_group, i.task, p.setting, p.variant;
