-- Each snapshot's latest recording in the history (pipeline/history.py), per model for responses
-- and scores: what a snapshot is compared by. `bench`: that benchmark's snapshots; NULL: every
-- benchmark's.
CREATE OR REPLACE MACRO latest_items(bench) AS TABLE
SELECT * FROM item_history WHERE bench IS NULL OR benchmark = bench
QUALIFY recording = max(recording) OVER (PARTITION BY benchmark, snapshot);

CREATE OR REPLACE MACRO latest_responses(bench) AS TABLE
SELECT * FROM response_history WHERE bench IS NULL OR benchmark = bench
QUALIFY recording = max(recording) OVER (PARTITION BY benchmark, snapshot, model);

CREATE OR REPLACE MACRO latest_scores(bench) AS TABLE
SELECT * FROM score_history WHERE bench IS NULL OR benchmark = bench
QUALIFY recording = max(recording) OVER (PARTITION BY benchmark, snapshot, model);

-- Every snapshot of every benchmark the history holds: a source version, with the corrections
-- applied to it, when it was first and last recorded, its items and the models with responses on
-- it, and the snapshot before it (by first recording).
CREATE OR REPLACE VIEW history_snapshots AS
WITH snaps AS (
    SELECT benchmark, snapshot, any_value(version) AS version, any_value(corrections) AS corrections,
           min(recorded_at) AS first_recorded, max(recorded_at) AS last_recorded,
           count(DISTINCT item_id) FILTER (WHERE recording = latest) AS items
    FROM (SELECT *, max(recording) OVER (PARTITION BY benchmark, snapshot) AS latest FROM item_history)
    GROUP BY benchmark, snapshot
)
SELECT s.*, (SELECT count(DISTINCT model) FROM response_history r
             WHERE r.benchmark = s.benchmark AND r.snapshot = s.snapshot) AS models,
       lag(s.snapshot) OVER (PARTITION BY s.benchmark ORDER BY s.first_recorded, s.snapshot) AS previous
FROM snaps s
ORDER BY s.benchmark, s.first_recorded;

-- Which scores changed from one snapshot of a benchmark to another, and why: one row per item x
-- model x setting x variant x scorer kind scored in both whose question, answer, choices,
-- response or score differs (`changed` lists which). `bench`, `from_snap`, `to_snap`: those two
-- snapshots of that benchmark (`wenheng diff`); all NULL: each snapshot of every benchmark against
-- the one before it (`score_changes`).
CREATE OR REPLACE MACRO score_changes_between(bench, from_snap, to_snap) AS TABLE
WITH pairs AS (
    SELECT benchmark, previous AS from_snapshot, snapshot AS to_snapshot FROM history_snapshots
    WHERE bench IS NULL AND previous IS NOT NULL
    UNION ALL
    SELECT bench, from_snap, to_snap WHERE bench IS NOT NULL
),
compared AS (
    SELECT p.benchmark, y.item_id, iy.task, y.model, y.setting, y.variant, y.kind,
           p.from_snapshot, p.to_snapshot, ix.version AS from_version, iy.version AS to_version,
           x.score AS old_score, y.score AS new_score,
           list_filter([
               CASE WHEN ix.question IS DISTINCT FROM iy.question OR ix.context IS DISTINCT FROM iy.context
                    THEN 'question' END,
               CASE WHEN ix.answer IS DISTINCT FROM iy.answer
                         OR coalesce(ix."references", []) <> coalesce(iy."references", []) THEN 'answer' END,
               CASE WHEN coalesce(ix.choices, []) <> coalesce(iy.choices, []) THEN 'choices' END,
               CASE WHEN rx.text IS DISTINCT FROM ry.text OR rx.error IS DISTINCT FROM ry.error THEN 'response' END,
               CASE WHEN x.score IS DISTINCT FROM y.score THEN 'score' END], lambda c: c IS NOT NULL) AS changed
    FROM pairs p
    JOIN latest_scores(bench) x ON x.benchmark = p.benchmark AND x.snapshot = p.from_snapshot
    JOIN latest_scores(bench) y ON y.benchmark = p.benchmark AND y.snapshot = p.to_snapshot
                               AND y.item_id = x.item_id AND y.model = x.model AND y.setting = x.setting
                               AND y.variant = x.variant AND y.kind = x.kind
    JOIN latest_items(bench) ix ON ix.benchmark = p.benchmark AND ix.snapshot = p.from_snapshot
                               AND ix.item_id = x.item_id
    JOIN latest_items(bench) iy ON iy.benchmark = p.benchmark AND iy.snapshot = p.to_snapshot
                               AND iy.item_id = y.item_id
    LEFT JOIN latest_responses(bench) rx ON rx.snapshot = p.from_snapshot AND rx.item_id = x.item_id
                                        AND rx.model = x.model AND rx.setting = x.setting AND rx.variant = x.variant
    LEFT JOIN latest_responses(bench) ry ON ry.snapshot = p.to_snapshot AND ry.item_id = y.item_id
                                        AND ry.model = y.model AND ry.setting = y.setting AND ry.variant = y.variant
)
SELECT * FROM compared WHERE len(changed) > 0;

CREATE OR REPLACE VIEW score_changes AS
SELECT * FROM score_changes_between(NULL, NULL, NULL)
ORDER BY benchmark, to_snapshot, model, setting, variant, kind, item_id;
