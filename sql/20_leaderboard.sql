-- Each benchmark aggregated by its own paper's rule (never an invented weighting):
--   wenmind: micro-average over all scored items
--   aceval:  subject accuracy -> mean per level (task_group) -> mean of the levels
--   wyweb:   unweighted mean over the NLU tasks; translation (WYWMT) is reported, not averaged
--   others:  unweighted mean over tasks
CREATE OR REPLACE VIEW leaderboard AS
WITH per_task AS (
    SELECT model, benchmark, variant, setting, task_group, task,
           sum(n_scored) AS n_scored, sum(score * n_scored) AS score_sum
    FROM model_task_scores
    WHERE n_scored > 0
    GROUP BY ALL
),
per_group AS (
    SELECT model, benchmark, variant, setting, task_group,
           avg(score_sum / n_scored) AS score
    FROM per_task
    GROUP BY ALL
),
per_benchmark AS (
    SELECT model, benchmark, variant, setting, sum(score_sum) / sum(n_scored) AS score, sum(n_scored) AS n_scored
    FROM per_task WHERE benchmark = 'wenmind' GROUP BY ALL
    UNION ALL
    SELECT g.model, g.benchmark, g.variant, g.setting, avg(g.score), any_value(n.n_scored)
    FROM per_group g
    JOIN (SELECT model, benchmark, variant, setting, sum(n_scored) AS n_scored FROM per_task GROUP BY ALL) n
      USING (model, benchmark, variant, setting)
    WHERE g.benchmark = 'aceval' GROUP BY ALL
    UNION ALL
    SELECT model, benchmark, variant, setting, avg(score_sum / n_scored), sum(n_scored)
    FROM per_task WHERE benchmark NOT IN ('wenmind', 'aceval') AND task <> 'wywmt' GROUP BY ALL
)
SELECT model, benchmark, variant, setting, round(100 * score, 2) AS score, n_scored
FROM per_benchmark
ORDER BY benchmark, setting, variant, score DESC;
