"""Reading benchmark sources: shared file readers for the adapters (`reading`, `jsonl`), verified
downloads (`fetch`) and ingestion of one configured benchmark through its card (`ingest`).
The formats are described in pipeline/sources/README.md."""
