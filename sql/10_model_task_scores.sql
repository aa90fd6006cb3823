-- One row per model x benchmark x task (and script variant x prompt setting) x scorer kind
-- (rule, or judge where an LLM judge is configured): how many items were asked, how many could
-- be scored, and the mean score. The papers' own tables are in paper_tables.
CREATE OR REPLACE TABLE model_task_scores AS
SELECT
    s.kind,
    s.model,
    s.benchmark,
    s.variant,
    s.setting,
    i.task_group,
    i.task,
    count(*)                       AS n_items,
    count(s.score)                 AS n_scored,
    avg(s.score)                   AS score,
    count(*) FILTER (WHERE r.error IS NOT NULL) AS n_errors
FROM scores s
JOIN items i USING (item_id)
LEFT JOIN responses r USING (item_id, variant, setting, model)
GROUP BY ALL
ORDER BY s.model, s.benchmark, i.task_group, i.task;
