"""Running the scan over a whole corpus: `local` (processes on this machine) or `ray`.

Both read every file of the corpus, call `scan.scan_documents` on bounded batches of its documents
and keep the smallest evidence per matched n-gram, so they give identical results.

- local: files split into byte ranges of RANGE_BYTES (jsonl and txt, at line ends) or whole (json,
  parquet), scanned by a pool of processes (all cores); each reads BATCH_BYTES at a time, so memory
  stays bounded whatever the corpus size (a json file is read whole: use jsonl for big ones).
- ray: `ray.data.read_binary_files` (jsonl, json, txt) or `read_parquet`, then `map_batches` with a
  callable class that builds the index lookup once per worker from the object store. Binary reads,
  not read_text/read_json, because read_text decodes strictly (one bad byte fails every file) and
  read_json infers one Arrow schema that heterogeneous documents break; the bytes are parsed by the
  same functions as the local engine's.

Incremental: each file's scan is cached under `<cache>/contamination/<corpus>/`, keyed by the
file's fingerprint (path, size, modification time; an ETag for URLs), how it is read, n and the
digest of the item index. An unchanged file is not read again for an unchanged index; a scan
stopped by Ctrl-C keeps the files it finished.

The modules: reading (a file into batches of documents, scanned: shared), local_engine, ray_engine,
scan_cache (the cache of file scans); this one runs a corpus through them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from pipeline import memory
from pipeline.contamination.corpora import CorpusSpec, is_url, not_regular, shard_paths
from pipeline.contamination.index import ItemIndex
from pipeline.contamination.local_engine import _scan_local
from pipeline.contamination.ray_engine import RayScanner as RayScanner
from pipeline.contamination.ray_engine import _scan_ray
from pipeline.contamination.ray_engine import ray_session as ray_session
from pipeline.contamination.reading import Reading
from pipeline.contamination.reading import scan_range as scan_range
from pipeline.contamination.scan import MATCHES, FileStats, ShardError, smallest_per_hash
from pipeline.contamination.scan_cache import _cached, _prune, _store, cache_key, save_reading
from pipeline.contamination.scan_cache import file_fingerprint as file_fingerprint

EMPTY_SHOWN = 5                  # empty files named on the terminal after a scan


@dataclass
class CorpusScan:
    matches: pa.Table                                   # one row per matched item n-gram (MATCHES)
    files: dict[str, FileStats] = field(default_factory=dict)
    quarantine: list[dict] = field(default_factory=list)   # {path, reason}
    reused: int = 0                                     # files whose cached scan was used
    scanned: int = 0
    seconds: float = 0.0
    engine: str = "local"

    @property
    def bytes_scanned(self) -> int:
        return sum(s.bytes for s in self.files.values())

    def reading_summary(self) -> dict[str, int]:
        """What the corpus's files held, summed: documents read, bad lines (or records) skipped,
        empty files (0 bytes, whitespace only, an empty list or table), invalid UTF-8 sequences."""
        stats = self.files.values()
        return {"documents": sum(s.documents for s in stats), "bad lines": sum(s.bad_rows for s in stats),
                "empty files": sum(s.empty for s in stats), "invalid utf-8": sum(s.invalid_utf8 for s in stats)}

    def reading_notes(self) -> dict[str, object]:
        """reading_summary, plus which files were empty and the first bad line's reason: what the
        terminal says after a scan (`reading_lines`)."""
        bad = sorted(p for p, s in self.files.items() if s.bad_rows)
        return {**self.reading_summary(), "files": len(self.files),
                "empty paths": sorted(p for p, s in self.files.items() if s.empty),
                "first error": next((f"{p}: {self.files[p].first_error}" for p in bad if self.files[p].first_error),
                                    None)}


def unreadable(path: str, exc: BaseException) -> str:
    """Why a corpus file cannot be read, one line: a URL's HTTP status where there is one (fsspec
    raises FileNotFoundError for any HTTP error status of a file's HEAD/GET: the status is asked
    once more to name it)."""
    web = path.startswith(("http://", "https://"))
    status = getattr(exc, "status", None) or getattr(exc, "code", None)
    if web and isinstance(exc, FileNotFoundError):
        status = _http_status(path)
        why = "not found (HTTP 404)" if status in (None, 404) else f"HTTP {status}"
    elif isinstance(exc, FileNotFoundError):
        why = "not found"
    elif web and isinstance(status, int):
        why = f"HTTP {status} {getattr(exc, 'message', '') or ''}".strip()
    else:
        why = f"{type(exc).__name__}: {exc}"
    return "cannot be read: " + " ".join(why.split())


def _http_status(url: str) -> int | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as response:  # noqa: S310
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def scan_corpus(spec: CorpusSpec, name: str, index: ItemIndex, cache_root: Path, *, engine: str | None = None,
                workers: int | None = None, log: Callable[[str], None] | None = None) -> CorpusScan:
    """Every file of the corpus, from the cache where it is valid, the rest with the engine."""
    # the index build's temporaries go back to the system before the workers start: glibc keeps
    # them otherwise (some 200 MB for the five benchmarks), and the scan's peak is what counts
    memory.release()
    started = time.perf_counter()
    engine = engine or spec.engine
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    reading = Reading.of(spec)
    folder = cache_root / "contamination" / name
    files = shard_paths(spec)
    result = CorpusScan(MATCHES.empty_table(), engine=engine)
    keys, tables, todo = {}, [], []
    for path in files:
        odd = not_regular(path)   # a FIFO would block the read; a symlink loop cannot be opened
        if odd is not None:
            result.quarantine.append({"path": path, "reason": odd})
            continue
        try:
            keys[path] = cache_key(path, reading, index.digest)
        except Exception as exc:  # noqa: BLE001 - a URL's filesystem raises its own errors (aiohttp's, botocore's)
            if not (is_url(path) or isinstance(exc, (OSError, ShardError))):
                raise
            result.quarantine.append({"path": path, "reason": unreadable(path, exc)})
            continue
        hit = _cached(folder, keys[path])
        if hit is None:
            todo.append(path)
        else:
            tables.append(hit[0])
            result.files[path] = hit[1]
            result.reused += 1
    if todo:
        log(f"scan {name}: {len(todo)} of {len(files)} files to read ({result.reused} unchanged), engine {engine}")
    run = _scan_ray if engine == "ray" else _scan_local
    for path, table, stats, error in run(todo, reading, index, spec, workers, log, name):
        if error is not None:
            result.quarantine.append({"path": path, "reason": error})
            continue
        _store(folder, keys[path], table, stats)
        tables.append(table)
        result.files[path] = stats
        result.scanned += 1
    _prune(folder, set(keys.values()))
    save_reading(folder, result.reading_notes())
    result.matches = smallest_per_hash(tables)
    result.seconds = time.perf_counter() - started
    return result


def reading_lines(name: str, notes: dict) -> list[str]:
    """What a scan read, for the terminal: the counts, each empty file (at most EMPTY_SHOWN), and
    the first bad line's reason."""
    lines = [f"{name}: {notes.get('documents', 0):,} documents read from {notes.get('files', 0):,} files, "
             f"{notes.get('bad lines', 0):,} bad lines skipped, {notes.get('empty files', 0):,} empty files, "
             f"{notes.get('invalid utf-8', 0):,} invalid UTF-8 sequences"]
    empty = list(notes.get("empty paths") or [])
    lines += [f"{name}: empty file (no document): {path}" for path in empty[:EMPTY_SHOWN]]
    if len(empty) > EMPTY_SHOWN:
        lines.append(f"{name}: ... and {len(empty) - EMPTY_SHOWN:,} more empty files")
    if notes.get("first error"):
        lines.append(f"{name}: first bad line: {notes['first error']}")
    return lines
