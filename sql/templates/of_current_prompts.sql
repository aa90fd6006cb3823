-- The rows of a response file (the query `src`) that answer a current prompt: partition files
-- outlive the items they answered (a source was corrected, a sample set swapped for the real
-- files). Applied as the warehouse loads each file (pipeline/warehouse/load.py). `key`: a condition
-- on the columns matched here (`true`: a prompt of any benchmark), which cuts the prompts first.
SELECT * FROM {src} r
WHERE EXISTS (SELECT 1 FROM (SELECT * FROM prompts WHERE {key}) p WHERE p.item_id = r.item_id
              AND p.variant = r.variant AND p.setting = r.setting AND p.prompt_hash = r.prompt_hash)
