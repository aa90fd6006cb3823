-- One row per official row of the evaluated splits x model run: what the paper tables are computed
-- from (pipeline/warehouse/units.py). An item asked of a model but not (yet) answered or scored
-- has a null score: it counts in n_items, not in n_scored, so coverage shows it. Exactly one score
-- per unit: the judge's where the card says its paper uses the judge ($judge_tasks, from
-- `paper_scorer`) and the judge has a row for the response (a null one included: an unreadable
-- verdict is not replaced by a rule score), else the rule's. Parameters: $benchmark, $judge_tasks;
-- and, substituted, the condition `models` that narrows it to some models' runs (an incremental
-- publish; `true`: all of them).
--
-- The official rows not asked are units too, unscored, with `not_asked` saying why: the items of
-- the evaluated splits (those with prompts) the data-quality policy left out (their quality flags)
-- or the duplicate policy (a copy of its cluster's representative, gold included), and the rows
-- quarantined at ingestion that the card's layout places in an evaluated split
-- (`quarantine_placed`). A run that asked a sample (WENHENG_LIMIT) leaves out items no policy
-- explains: then its units are the items asked alone, as the sample is what its rows cover.
-- `n_options`, `n_questions`, `n_labels` give each item's chance level (aggregate.unit_chance),
-- `merged_rows` how many raw rows its item merged (WYWMT's repeated sources, CP-DUE's AU).
-- `judge_uninformative`, `judge_j`: the judge's validity on the unit's task, where it judged it.
WITH runs AS (SELECT DISTINCT model, variant, setting FROM responses WHERE benchmark = $benchmark AND {models}),
paper AS (
    SELECT s.* FROM scores s JOIN items i USING (item_id)
    WHERE s.benchmark = $benchmark AND {models}
    QUALIFY row_number() OVER (
        PARTITION BY s.item_id, s.variant, s.setting, s.model
        ORDER BY s.kind = CASE WHEN list_contains(CAST($judge_tasks AS VARCHAR[]), i.task)
                               THEN 'judge' ELSE 'rule' END DESC,
                 s.kind = 'rule' DESC) = 1
),
asked AS (SELECT DISTINCT item_id FROM prompts WHERE benchmark = $benchmark),
evaluated AS (SELECT DISTINCT i.split FROM items i JOIN asked a ON a.item_id = i.item_id),
copies AS (
    SELECT d.item_id FROM dedup_clusters d
    JOIN items m ON m.item_id = d.item_id
    JOIN items c ON c.item_id = d.cluster_id
    WHERE d.benchmark = $benchmark AND NOT d.is_representative AND m.answer_hash IS NOT DISTINCT FROM c.answer_hash
),
unasked AS (
    SELECT i.*,
           CASE WHEN coalesce(json_array_length(i.metadata, '$.quality_flags'), 0) > 0
                THEN 'data-quality (' || array_to_string(CAST(json_extract(i.metadata, '$.quality_flags') AS VARCHAR[]),
                                                         ', ') || ')'
                WHEN i.item_id IN (SELECT item_id FROM copies) THEN 'duplicate' END AS not_asked
    FROM items i
    WHERE i.benchmark = $benchmark AND i.split IN (SELECT split FROM evaluated)
      AND i.item_id NOT IN (SELECT item_id FROM asked)
),
whole AS (SELECT NOT EXISTS (SELECT 1 FROM unasked WHERE not_asked IS NULL) AS yes),
task_info AS (
    SELECT task,
           CASE WHEN count(DISTINCT task_group) = 1 THEN any_value(task_group) END AS task_group,
           CASE WHEN count(DISTINCT domain) = 1 THEN any_value(domain) END AS domain,
           CASE WHEN count(DISTINCT capability) = 1 THEN any_value(capability) END AS capability,
           CASE WHEN count(DISTINCT format) = 1 THEN any_value(format) END AS format
    FROM items WHERE benchmark = $benchmark GROUP BY task
),
left_out AS (
    SELECT item_id AS unit_id, split, task, task_group, domain, capability, format,
           json_extract_string(metadata, '$.group') AS "group", json_extract_string(metadata, '$.part') AS part,
           CASE WHEN coalesce(context, '') <> '' THEN md5(context) END AS context_id,
           coalesce(json_array_length(metadata, '$.merged_rows'), 0) AS merged_rows, not_asked
    FROM unasked WHERE not_asked IS NOT NULL
    UNION ALL
    SELECT q.unit_id, q.split, q.task, t.task_group, t.domain, t.capability, t.format, q."group", q.part,
           NULL AS context_id, 0 AS merged_rows, 'quarantined' AS not_asked
    FROM quarantine_placed q LEFT JOIN task_info t ON t.task = q.task
    WHERE q.benchmark = $benchmark AND q.split IN (SELECT split FROM evaluated)
)
SELECT p.item_id AS unit_id, r.model, p.variant, p.setting, i.split, i.task, i.task_group, i.domain,
       i.capability, json_extract_string(i.metadata, '$.group') AS "group",
       json_extract_string(i.metadata, '$.part') AS part, s.score, s.details,
       CASE WHEN s.kind = 'judge' THEN 'judge ' || s.judge_model || ' ('
                 || coalesce(json_extract_string(s.details, '$.prompt_set'), '?') || ' prompts)'
            WHEN s.item_id IS NOT NULL THEN 'rules' END AS scored_by,
       list_contains(CAST($judge_tasks AS VARCHAR[]), i.task) AS paper_judge,
       CASE WHEN coalesce(i.context, '') <> '' THEN md5(i.context) END AS context_id,
       coalesce(s.kind = 'judge'
                AND starts_with(json_extract_string(s.details, '$.judge.engine.model'), 'bundled:'), false)
           AS demo_judge,
       coalesce(a.max_tokens IS NOT NULL AND (p.max_tokens IS NULL OR a.max_tokens < p.max_tokens), false) AS capped,
       i.format,
       CASE WHEN len(i.choices) > 0 THEN len(i.choices)
            ELSE TRY_CAST(json_extract_string(i.metadata, '$.options_per_question') AS INTEGER) END AS n_options,
       coalesce(json_array_length(i.metadata, '$.questions'), 1) AS n_questions,
       json_array_length(i.metadata, '$.labels') AS n_labels,
       coalesce(json_array_length(i.metadata, '$.merged_rows'), 0) AS merged_rows,
       CAST(NULL AS VARCHAR) AS not_asked,
       -- the judge's known-answer controls on the unit's task (judge_validity): uninformative when
       -- it cannot tell the gold from a wrong answer there
       coalesce(s.kind = 'judge' AND NOT v.informative, false) AS judge_uninformative,
       v.youden_j AS judge_j, v.j_low AS judge_j_low, v.j_high AS judge_j_high
FROM prompts p
JOIN items i USING (item_id)
JOIN runs r ON r.variant = p.variant AND r.setting = p.setting
LEFT JOIN responses a ON a.item_id = p.item_id AND a.variant = p.variant AND a.setting = p.setting
                     AND a.model = r.model
LEFT JOIN paper s ON s.item_id = p.item_id AND s.variant = p.variant AND s.setting = p.setting
                 AND s.model = r.model
LEFT JOIN judge_validity v ON s.kind = 'judge' AND v.benchmark = $benchmark AND v.model = r.model
                          AND v.task = i.task AND v.judge_model = s.judge_model
WHERE p.benchmark = $benchmark
UNION ALL BY NAME
SELECT l.unit_id, r.model, r.variant, r.setting, l.split, l.task, l.task_group, l.domain, l.capability, l."group",
       l.part, CAST(NULL AS DOUBLE) AS score, CAST(NULL AS VARCHAR) AS details, CAST(NULL AS VARCHAR) AS scored_by,
       coalesce(list_contains(CAST($judge_tasks AS VARCHAR[]), l.task), false) AS paper_judge, l.context_id,
       false AS demo_judge, false AS capped, l.format, CAST(NULL AS INTEGER) AS n_options,
       CAST(NULL AS INTEGER) AS n_questions, CAST(NULL AS INTEGER) AS n_labels, l.merged_rows, l.not_asked
FROM left_out l
CROSS JOIN runs r
WHERE (SELECT yes FROM whole)
