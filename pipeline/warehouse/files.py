"""The warehouse file: the one being built (a name of its own beside the target, removed with its
write-ahead log when the build fails, renamed over the target when it is complete), and the
published one, opened read-only."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import duckdb


def building(db_path: Path) -> Path:
    """A name of its own (two builders never share one), beside the target (same filesystem, so
    the swap is a rename: a reader opens either the old file or the new one, never a mix)."""
    return db_path.with_name(f"{db_path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.building")


def discard(tmp: Path) -> None:
    """The file being built and DuckDB's write-ahead log beside it, if any."""
    for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
        leftover.unlink(missing_ok=True)


def swap_in(tmp: Path, db_path: Path) -> None:
    """The complete file, synced to disk, in place of the target."""
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, db_path)


def connect_readonly(db_path: Path) -> duckdb.DuckDBPyConnection:
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True)
