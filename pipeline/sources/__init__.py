"""Reading benchmark sources: what the adapters share (row accounting `accounting`, text checks
and decoding `text`, JSON arrays `json_array`, item ids and content keys `keys`, option letters
`options`, the record loop `records`, wenheng's JSONL formats `jsonl`), verified downloads
(`fetch`) and ingestion of one configured benchmark through its card (`ingest`).
The formats are described in pipeline/sources/README.md."""
