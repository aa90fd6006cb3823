-- WYWEB's average: the unweighted mean over its classification-style (NLU) tasks; translation
-- (WYWMT) is reported on its own, not averaged in.
INSERT INTO benchmark_scores
SELECT model, benchmark, variant, setting, avg(score), sum(n_scored)
FROM model_task_scores
WHERE benchmark = 'wyweb' AND n_scored > 0 AND task <> 'wywmt'
GROUP BY ALL;
