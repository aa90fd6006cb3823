-- AC-EVAL's average: subject accuracy -> the mean of each level's subjects (task_group) -> the
-- mean of the three levels.
INSERT INTO benchmark_scores
WITH per_level AS (
    SELECT model, benchmark, variant, setting, task_group, avg(score) AS score, sum(n_scored) AS n_scored
    FROM model_task_scores
    WHERE benchmark = 'aceval' AND n_scored > 0
    GROUP BY ALL
)
SELECT model, benchmark, variant, setting, avg(score), sum(n_scored)
FROM per_level
GROUP BY ALL;
