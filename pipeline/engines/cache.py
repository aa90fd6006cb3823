"""The response cache: one SQLite file, one row per cache key, committed as each row lands.

SQLite (stdlib) rather than DuckDB because inference partitions may run in several processes
at once and must never fight over the warehouse's single writer."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from pathlib import Path

from pipeline.engines import Completion

_COLUMNS = ("text", "finish_reason", "tokens_in", "tokens_out", "latency_s", "error")


class ResponseCache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # Rows still survive a killed process; only an OS crash could drop the last few. Each
        # answer is stored as it arrives, so a full fsync per row would stall the whole batch.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (cache_key TEXT PRIMARY KEY, text TEXT,"
            " finish_reason TEXT, tokens_in INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT,"
            " created_at TEXT DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))"
        )

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT cache_key, {', '.join(_COLUMNS)} FROM responses WHERE cache_key IN ({marks})", chunk
            ):
                found[row[0]] = Completion(*row[1:])
        return found

    def put(self, key: str, completion: Completion) -> None:
        values = asdict(completion)
        self._db.execute(
            f"INSERT OR REPLACE INTO responses (cache_key, {', '.join(_COLUMNS)}) VALUES (?{', ?' * len(_COLUMNS)})",
            [key, *(values[c] for c in _COLUMNS)],
        )

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._db.close()
