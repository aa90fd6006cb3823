-- The rows of a response file (the query `src`) that answer a current prompt: partition files
-- outlive the items they answered (a source was corrected, a sample set swapped for the real
-- files). Applied as the warehouse loads each file (pipeline/warehouse/load.py).
SELECT * FROM {src} r
WHERE EXISTS (SELECT 1 FROM prompts p WHERE p.item_id = r.item_id AND p.variant = r.variant
              AND p.setting = r.setting AND p.prompt_hash = r.prompt_hash)
