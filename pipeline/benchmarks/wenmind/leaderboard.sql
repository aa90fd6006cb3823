-- WenMind's headline score: the micro-average over every scored item.
INSERT INTO benchmark_scores
SELECT model, benchmark, variant, setting, sum(score * n_scored) / sum(n_scored), sum(n_scored)
FROM model_task_scores
WHERE benchmark = 'wenmind' AND n_scored > 0
GROUP BY ALL;
