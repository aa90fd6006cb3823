"""Reading benchmark sources: what the adapters share (row accounting `accounting`, text checks
and decoding `text`, JSON arrays `json_array`, item ids and content keys `keys`, option letters
`options`, the record loop `records`, wenheng's JSONL formats `jsonl`), verified downloads
(`fetch`) and the layout check. Ingesting one configured benchmark through its card is
pipeline/ingest.py, above the configuration and the cards these parts serve.
The formats are described in pipeline/sources/README.md."""
