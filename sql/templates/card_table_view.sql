-- One card table (`<benchmark>_<table>`): its rows of paper_tables as printed, in the paper's row
-- order. Substituted: `view` (the quoted name), `benchmark` and `table_name` (quoted literals).
CREATE OR REPLACE VIEW {view} AS
SELECT * EXCLUDE (benchmark, table_name, row_order, headline) FROM paper_rows_shown()
WHERE benchmark = {benchmark} AND table_name = {table_name}
ORDER BY split, setting, variant, row_order, metric, model
