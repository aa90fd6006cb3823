"""Sizing and pruning the response cache (`wenheng cache info`, `wenheng cache prune`): how big it
is and how many answers each model has in it, and dropping a model's answers or those older than
a date. Inspect's cache commands are the model; the cache itself is pipeline/engines/cache.py."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pipeline.engines.cache import ResponseCache

UNRECORDED = "(not recorded)"   # answers stored before the cache kept which model gave them


@dataclass(frozen=True)
class CacheInfo:
    path: Path
    bytes: int                                   # the file with its WAL and shared-memory files
    entries: int
    per_model: list[tuple[str, int, str, str]]   # model, answers, first and last answered (UTC)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.is_file())


def info(path: Path) -> CacheInfo:
    """What the cache at `path` holds (an empty CacheInfo where there is no file yet)."""
    if not path.is_file():
        return CacheInfo(path, 0, 0, [])
    with ResponseCache(path) as cache:
        rows = cache.execute(
            "SELECT coalesce(model, ?), count(*), min(created_at), max(created_at) FROM responses "
            "GROUP BY 1 ORDER BY 2 DESC, 1", [UNRECORDED]).fetchall()
    return CacheInfo(path, _size(path), sum(r[1] for r in rows), [tuple(r) for r in rows])


def prune(path: Path, model: str | None = None, before: date | None = None, dry_run: bool = False) -> int:
    """Drop the answers of `model` (UNRECORDED: those stored without one), or those answered before
    `before` (both: those of the model answered before the date). Returns how many were (with
    `dry_run`: would be) dropped; the file is compacted after."""
    if model is None and before is None:
        raise ValueError("say what to prune: a model, a date, or both")
    where, params = [], []
    if model is not None:
        where.append("model IS NULL" if model == UNRECORDED else "model = ?")
        params += [] if model == UNRECORDED else [model]
    if before is not None:
        where.append("created_at < ?")
        params.append(before.isoformat())
    clause = " AND ".join(where)
    if not path.is_file():
        return 0
    with ResponseCache(path) as cache:
        count = cache.execute(f"SELECT count(*) FROM responses WHERE {clause}", params).fetchone()[0]
        if count and not dry_run:
            cache.execute(f"DELETE FROM responses WHERE {clause}", params)
    if count and not dry_run:
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("VACUUM")
        finally:
            db.close()
    return count
