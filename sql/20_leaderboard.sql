-- Each benchmark's headline score per model x script variant x prompt setting, aggregated by its
-- own paper's rule. The rows come from the benchmark cards: every card's SQL
-- (pipeline/benchmarks/<name>/*.sql, run after this folder) inserts its own, so no benchmark is
-- named here.
CREATE OR REPLACE TABLE benchmark_scores (
    model     VARCHAR,
    benchmark VARCHAR,
    variant   VARCHAR,
    setting   VARCHAR,
    score     DOUBLE,   -- 0..1
    n_scored  BIGINT    -- items the score averages over
);

CREATE OR REPLACE VIEW leaderboard AS
SELECT model, benchmark, variant, setting, round(100 * score, 2) AS score, n_scored
FROM benchmark_scores
ORDER BY benchmark, setting, variant, score DESC;
