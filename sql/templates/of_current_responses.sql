-- The rows of a scores or judgements file (the query `src`) for a published response, i.e. one
-- to a current prompt (of_current_prompts.sql). Applied as the warehouse loads each file
-- (pipeline/warehouse/load.py). `key`: a condition on the columns matched here (the file's model, or
-- `true`), which cuts the responses first: one model's are read, not the whole table.
SELECT * FROM {src} s
WHERE EXISTS (SELECT 1 FROM (SELECT * FROM responses WHERE {key}) r WHERE r.item_id = s.item_id
              AND r.variant = s.variant AND r.setting = s.setting AND r.model = s.model)
