"""What tests and benchmarks share: a loopback OpenAI-compatible server, and what Dagster's own stale
rule calls unsynced."""
