-- Fùxì: the unweighted mean over its tasks.
INSERT INTO benchmark_scores
SELECT model, benchmark, variant, setting, avg(score), sum(n_scored)
FROM model_task_scores
WHERE benchmark = 'fuxi' AND n_scored > 0
GROUP BY ALL;
