"""Test doubles that tests and benchmarks share: a loopback OpenAI-compatible server."""
