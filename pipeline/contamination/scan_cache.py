"""The cache of file scans: each file's matches and stats under `<cache>/contamination/<corpus>/`,
keyed by the file's fingerprint, how it is read, n and the digest of the item index."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.contamination.corpora import format_of, is_url
from pipeline.contamination.reading import Reading
from pipeline.contamination.scan import FileStats

SCAN_VERSION = "2"               # bump when what a file's scan holds changes: cached scans are redone


def file_fingerprint(path: str) -> str:
    if is_url(path):
        import fsspec
        fs, _, (p,) = fsspec.get_fs_token_paths(path)
        info = fs.info(p)
        return json.dumps([path, info.get("size"), str(info.get("ETag") or info.get("etag") or info.get("mtime"))])
    st = os.stat(path)
    return json.dumps([path, st.st_size, st.st_mtime_ns])


def cache_key(path: str, reading: Reading, index_digest: str) -> str:
    text = json.dumps([SCAN_VERSION, file_fingerprint(path), reading.format_for(path) if format_of(path) or
                       reading.format else None, list(reading.fields), reading.id_field, reading.n, index_digest])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _cached(folder: Path, key: str) -> tuple[pa.Table, FileStats] | None:
    file = folder / f"{key}.parquet"
    if not file.is_file():
        return None
    try:
        table = pq.read_table(file)
        stats = FileStats(**json.loads(table.schema.metadata[b"wenheng.stats"]))
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return None   # a cache file cut short (killed mid-write is prevented; disk trouble is not)
    return table.replace_schema_metadata(None), stats


def _store(folder: Path, key: str, table: pa.Table, stats: FileStats) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    pq.write_table(table.replace_schema_metadata({"wenheng.stats": json.dumps(stats.to_dict())}), tmp)
    os.replace(tmp, folder / f"{key}.parquet")


def _prune(folder: Path, keep: set[str]) -> None:
    """Scans of files that changed or left the corpus, or of another item index, are dropped."""
    if folder.is_dir():
        for file in folder.glob("*.parquet"):
            if file.stem not in keep:
                file.unlink(missing_ok=True)


READING_FILE = "reading.json"    # the last scan's reading notes (engines.CorpusScan.reading_notes)


def save_reading(folder: Path, notes: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{READING_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(notes, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, folder / READING_FILE)


def load_reading(folder: Path) -> dict | None:
    """The notes save_reading kept, or None (never scanned, or unreadable)."""
    try:
        notes = json.loads((folder / READING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return notes if isinstance(notes, dict) else None
