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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import stopping
from pipeline.contamination.corpora import CorpusSpec, format_of, is_url, shard_paths
from pipeline.contamination.index import ItemIndex, Lookup
from pipeline.contamination.scan import (
    MATCHES,
    Documents,
    FileStats,
    ShardError,
    looks_binary,
    parse_json,
    parse_lines,
    parse_parquet_batch,
    scan_documents,
    smallest_per_hash,
)

SCAN_VERSION = "1"               # bump when what a file's scan holds changes: cached scans are redone
RANGE_BYTES = 64 << 20           # a pool task: this much of a jsonl/txt file
BATCH_BYTES = 8 << 20            # read and scanned at a time (the arrays of a batch are ~30x its size)
POOL_MIN_BYTES = 48 << 20        # below this a corpus is scanned in this process (no pool start-up)
# Reading a file is I/O: its Ray tasks ask for a tenth of a CPU and each scanner for the rest of
# one, so one scanner per CPU and the reads that feed them fit together (a scanner asking for a
# whole CPU leaves no room for any read on a local Ray: the dataset waits forever).
READ_CPUS = 0.1
STATS_COLUMN = "stats"           # Ray rows carrying a file's FileStats (JSON), hash null


@dataclass(frozen=True)
class Reading:
    """How a corpus's files are read and compared: what a worker needs besides the index."""
    format: str | None
    fields: tuple[str, ...]
    id_field: str | None
    n: int

    @classmethod
    def of(cls, spec: CorpusSpec) -> Reading:
        return cls(spec.format, tuple(spec.fields), spec.id_field, spec.ngram)

    def format_for(self, path: str) -> str:
        fmt = self.format or format_of(path.split("?")[0])
        if fmt is None:
            raise ShardError("its format cannot be told from its name; set `format` for the corpus")
        return fmt


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


# ---- reading one file ----------------------------------------------------------------------

def _open(path: str):
    if is_url(path):
        import fsspec
        return fsspec.open(path, "rb").open()
    return open(path, "rb")


def _line_blocks(path: str, start: int, end: int | None) -> Iterator[bytes]:
    """Whole lines whose first byte lies in [start, end), BATCH_BYTES at a time."""
    with _open(path) as f:
        if start:
            f.seek(start - 1)
            f.readline()   # the line holding byte start-1 belongs to the range before
        pos = f.tell()
        while end is None or pos < end:
            want = BATCH_BYTES if end is None else min(BATCH_BYTES, end - pos)
            block = f.read(want)
            if not block:
                return
            if not block.endswith(b"\n"):
                block += f.readline()
            pos += len(block)
            yield block


def _doc_batches(texts: list[str], keys: list) -> Iterator[tuple[list[str], list]]:
    """Documents in batches of about BATCH_BYTES/3 characters."""
    budget, start, size = BATCH_BYTES // 3, 0, 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= budget:
            yield texts[start:i + 1], keys[start:i + 1]
            start, size = i + 1, 0
    if start < len(texts):
        yield texts[start:], keys[start:]


def scan_range(path: str, start: int, end: int | None, reading: Reading, lookup: Lookup) -> tuple[pa.Table, FileStats]:
    """One file, or a byte range of a jsonl/txt file: its matches and what it held."""
    stats = FileStats(path)
    fmt = reading.format_for(path)
    docs = Documents(reading.fields, reading.id_field)
    tables = []
    try:
        if fmt in ("jsonl", "txt"):
            for i, block in enumerate(_line_blocks(path, start, end)):
                if i == 0 and start == 0 and looks_binary(block[:65536]):
                    raise ShardError("not text (NUL bytes, or mostly bytes that are not UTF-8)")
                texts, keys = parse_lines(block, fmt, docs, stats)
                tables.append(scan_documents(texts, keys, path, lookup, reading.n, stats))
        elif fmt == "json":
            with _open(path) as f:
                texts, keys = parse_json(f.read(), docs, stats)
            for part_texts, part_keys in _doc_batches(texts, keys):
                tables.append(scan_documents(part_texts, part_keys, path, lookup, reading.n, stats))
        else:
            with _open(path) as f:
                tables += _parquet_tables(f, path, reading, docs, stats, lookup)
    except ShardError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ShardError(f"{type(exc).__name__}: {exc}") from None
    return smallest_per_hash(tables), stats


def _parquet_tables(source, path: str, reading: Reading, docs: Documents, stats: FileStats,
                    lookup: Lookup) -> Iterator[pa.Table]:
    """The matches of a parquet file (an open file or a buffer), a batch of rows at a time, reading
    only the columns the fields name."""
    parquet = pq.ParquetFile(source)
    wanted = sorted({name.split(".")[0] for name in (*reading.fields, reading.id_field or "") if name})
    columns = [c for c in wanted if c in parquet.schema_arrow.names]
    for batch in parquet.iter_batches(batch_size=65536, columns=columns):
        texts, keys = parse_parquet_batch(batch, docs, stats)
        yield scan_documents(texts, keys, path, lookup, reading.n, stats)


def _tasks(path: str, reading: Reading) -> list[tuple[str, int, int | None]]:
    """A file's pool tasks: byte ranges of a local jsonl/txt file, else the whole file."""
    try:
        fmt = reading.format_for(path)
    except ShardError:
        return [(path, 0, None)]
    if fmt not in ("jsonl", "txt") or is_url(path):
        return [(path, 0, None)]
    size = os.path.getsize(path)
    return [(path, s, min(s + RANGE_BYTES, size)) for s in range(0, max(size, 1), RANGE_BYTES)]


# ---- the local engine's workers --------------------------------------------------------------

_WORKER: dict = {}


def _init_worker(hashes_file: str, reading: Reading) -> None:
    # Ctrl-C reaches the whole process group: the parent stops the pool (stopping.py), a worker
    # finishes its range quietly instead of printing a KeyboardInterrupt traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the index is memory-mapped: every worker reads the same pages
    _WORKER["lookup"] = Lookup(np.load(hashes_file, mmap_mode="r"))
    _WORKER["reading"] = reading


def _run_task(path: str, start: int, end: int | None) -> tuple[bytes, dict, str | None]:
    try:
        table, stats = scan_range(path, start, end, _WORKER["reading"], _WORKER["lookup"])
    except ShardError as exc:
        return b"", {}, str(exc)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, MATCHES) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes(), stats.to_dict(), None


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all() if data else MATCHES.empty_table()


# ---- the cache of file scans -----------------------------------------------------------------

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


# ---- the corpus --------------------------------------------------------------------------------

def scan_corpus(spec: CorpusSpec, name: str, index: ItemIndex, cache_root: Path, *, engine: str | None = None,
                workers: int | None = None, log: Callable[[str], None] | None = None) -> CorpusScan:
    """Every file of the corpus, from the cache where it is valid, the rest with the engine."""
    started = time.perf_counter()
    engine = engine or spec.engine
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    reading = Reading.of(spec)
    folder = cache_root / "contamination" / name
    files = shard_paths(spec)
    result = CorpusScan(MATCHES.empty_table(), engine=engine)
    keys, tables, todo = {}, [], []
    for path in files:
        try:
            keys[path] = cache_key(path, reading, index.digest)
        except (OSError, ShardError) as exc:
            result.quarantine.append({"path": path, "reason": f"cannot be read: {exc}"})
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
    result.matches = smallest_per_hash(tables)
    result.seconds = time.perf_counter() - started
    return result


def _prune(folder: Path, keep: set[str]) -> None:
    """Scans of files that changed or left the corpus, or of another item index, are dropped."""
    if folder.is_dir():
        for file in folder.glob("*.parquet"):
            if file.stem not in keep:
                file.unlink(missing_ok=True)


class _Meter:
    """A progress line every few seconds: files, MB, MB/s, ETA."""

    def __init__(self, name: str, total_bytes: int, files: int, log: Callable[[str], None], every_s: float = 5.0):
        self.name, self.total, self.files, self.log, self.every = name, total_bytes, files, log, every_s
        self.done_bytes = self.done_files = 0
        self.started = self.last = time.perf_counter()

    def add(self, nbytes: int, file_done: bool) -> None:
        self.done_bytes += nbytes
        self.done_files += file_done
        now = time.perf_counter()
        if now - self.last >= self.every or self.done_files == self.files:
            self.last = now
            rate = self.done_bytes / max(now - self.started, 1e-9)
            eta = (self.total - self.done_bytes) / rate if rate else 0
            self.log(f"scan {self.name}: {self.done_files}/{self.files} files, {self.done_bytes / 1e6:,.0f} of "
                     f"{self.total / 1e6:,.0f} MB, {rate / 1e6:,.1f} MB/s, ETA {eta:,.0f} s")


def _size(path: str) -> int:
    try:
        return 0 if is_url(path) else os.path.getsize(path)
    except OSError:
        return 0


def _scan_local(files: list[str], reading: Reading, index: ItemIndex, spec: CorpusSpec, workers: int | None,
                log: Callable[[str], None], name: str) -> Iterator[tuple[str, pa.Table, FileStats, str | None]]:
    if not files:
        return
    total = sum(_size(p) for p in files)
    meter = _Meter(name, total, len(files), log)
    workers = workers or os.cpu_count() or 1
    if workers == 1 or total < POOL_MIN_BYTES:
        lookup = Lookup(index.hashes)
        for path in files:
            if stopping.stop_requested():
                raise stopping.Stopped(f"scan of {name} stopped; the files finished are kept")
            try:
                table, stats = scan_range(path, 0, None, reading, lookup)
            except ShardError as exc:
                yield path, MATCHES.empty_table(), FileStats(path), str(exc)
                continue
            meter.add(stats.bytes, True)
            yield path, table, stats, None
        return
    with tempfile.TemporaryDirectory(prefix="wenheng-index-") as tmp:
        hashes_file = os.path.join(tmp, "hashes.npy")
        np.save(hashes_file, index.hashes)
        tasks = [t for p in files for t in _tasks(p, reading)]
        remaining = {p: sum(1 for t in tasks if t[0] == p) for p in files}
        parts: dict[str, list] = {p: [] for p in files}
        failed: dict[str, str] = {}
        pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=get_context("spawn"),
                                   initializer=_init_worker, initargs=(hashes_file, reading))
        try:
            pending = {pool.submit(_run_task, *t): t for t in tasks}
            while pending:
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if stopping.stop_requested():
                    raise stopping.Stopped(f"scan of {name} stopped; the files finished are kept")
                for future in done:
                    path, start, end = pending.pop(future)
                    data, stats, error = future.result()
                    if error is not None:
                        failed.setdefault(path, error)
                    else:
                        parts[path].append((_from_ipc(data), FileStats(**stats)))
                    remaining[path] -= 1
                    meter.add((end if end is not None else _size(path)) - start, remaining[path] == 0)
                    if remaining[path] == 0:
                        if path in failed:
                            yield path, MATCHES.empty_table(), FileStats(path), failed[path]
                            continue
                        stats_total = FileStats(path)
                        for _, s in parts[path]:
                            stats_total.add(s)
                        yield path, smallest_per_hash([t for t, _ in parts.pop(path)]), stats_total, None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


# ---- the Ray engine ------------------------------------------------------------------------------

class RayScanner:
    """Ray Data's per-batch callable: the lookup is built once per worker, in the constructor."""

    def __init__(self, hashes, reading: Reading, canonical: dict[str, str]):
        import ray

        if isinstance(hashes, ray.ObjectRef):
            hashes = ray.get(hashes)
        self.lookup = Lookup(hashes)
        self.reading = reading
        self.canonical = canonical

    def __call__(self, batch: pa.Table) -> pa.Table:
        out = []
        paths = batch.column("path").to_pylist()
        if "bytes" in batch.column_names:    # whole files (jsonl, json, txt)
            for path, data in zip(paths, batch.column("bytes").to_pylist()):
                out.append(self._file(self.canonical.get(_plain(path), path), data))
        else:                                 # parquet rows, possibly of several files
            by_path: dict[str, list[int]] = {}
            for i, path in enumerate(paths):
                by_path.setdefault(path, []).append(i)
            for path, rows in by_path.items():
                out.append(self._rows(self.canonical.get(_plain(path), path), batch.take(rows)))
        return pa.concat_tables(out) if out else _with_stats(MATCHES.empty_table(), None)

    def _file(self, path: str, data: bytes) -> pa.Table:
        stats = FileStats(path)
        docs = Documents(self.reading.fields, self.reading.id_field)
        try:
            fmt = self.reading.format_for(path)
            tables = []
            if fmt == "json":
                texts, keys = parse_json(data, docs, stats)
                for part_texts, part_keys in _doc_batches(texts, keys):
                    tables.append(scan_documents(part_texts, part_keys, path, self.lookup, self.reading.n, stats))
            elif fmt == "parquet":   # a parquet file among text files: read whole, like them
                tables += _parquet_tables(pa.BufferReader(data), path, self.reading, docs, stats, self.lookup)
            else:
                if looks_binary(data[:65536]):
                    raise ShardError("not text (NUL bytes, or mostly bytes that are not UTF-8)")
                for block in _split_lines(data):
                    texts, keys = parse_lines(block, fmt, docs, stats)
                    tables.append(scan_documents(texts, keys, path, self.lookup, self.reading.n, stats))
        except ShardError as exc:
            return _with_stats(MATCHES.empty_table(), {"path": path, "error": str(exc)})
        except (OSError, ValueError, pa.ArrowException) as exc:   # as scan_range words it
            return _with_stats(MATCHES.empty_table(), {"path": path, "error": f"{type(exc).__name__}: {exc}"})
        return _with_stats(smallest_per_hash(tables), {"path": path, **stats.to_dict()})

    def _rows(self, path: str, rows: pa.Table) -> pa.Table:
        stats = FileStats(path)
        docs = Documents(self.reading.fields, self.reading.id_field)
        texts, keys = parse_parquet_batch(rows.drop_columns(["path"]), docs, stats)
        table = scan_documents(texts, keys, path, self.lookup, self.reading.n, stats)
        return _with_stats(table, {"path": path, **stats.to_dict()})


def _split_lines(data: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(data):
        end = data.find(b"\n", min(start + BATCH_BYTES, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        yield data[start:end]
        start = end


def _with_stats(table: pa.Table, stats: dict | None) -> pa.Table:
    """Matches, plus one row holding a file's stats as JSON (hash null)."""
    table = table.append_column(STATS_COLUMN, pa.nulls(table.num_rows, pa.string()))
    if stats is None:
        return table
    row = {name: [None] for name in MATCHES.names} | {STATS_COLUMN: [json.dumps(stats)]}
    return pa.concat_tables([table, pa.table(row, schema=table.schema)])


def _plain(path: str) -> str:
    return os.path.abspath(path.removeprefix("file://")) if "://" not in path.removeprefix("file://") else path


def ray_session(address: str | None, workers: int | None) -> None:
    """ray.init for a scan: a cluster by address (`ray start --head` / KubeRay's service), or a
    local Ray started on the spot with `workers` CPUs."""
    import ray

    if ray.is_initialized():
        return
    # Ray's own INFO lines (execution plans, where its logs are) would drown wenheng's progress lines
    kwargs = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=workers or os.cpu_count() or 1, **kwargs)


def _scan_ray(files: list[str], reading: Reading, index: ItemIndex, spec: CorpusSpec, workers: int | None,
              log: Callable[[str], None], name: str) -> Iterator[tuple[str, pa.Table, FileStats, str | None]]:
    if not files:
        return
    ray_session(spec.ray_address, workers)
    import ray
    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)   # execution plans and timings: wenheng logs its own
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    hashes = ray.put(index.hashes)
    canonical = {_plain(p): p for p in files}
    fmts = {reading.format_for(p) if (reading.format or format_of(p)) else None for p in files}
    if fmts == {"parquet"}:
        wanted = sorted({f.split(".")[0] for f in (*reading.fields, reading.id_field or "") if f})
        ds = ray.data.read_parquet(files, include_paths=True, columns=wanted, num_cpus=READ_CPUS)
        batch_size = 65536
    else:
        ds = ray.data.read_binary_files(files, include_paths=True, num_cpus=READ_CPUS)
        batch_size = 1
    scanners = workers or max(int(ray.cluster_resources().get("CPU", 1)), 1)
    ds = ds.map_batches(RayScanner, fn_constructor_kwargs={"hashes": hashes, "reading": reading,
                                                           "canonical": canonical},
                        batch_format="pyarrow", batch_size=batch_size, num_cpus=1 - READ_CPUS,
                        compute=ray.data.ActorPoolStrategy(size=scanners))
    started = time.perf_counter()
    # Whole files (jsonl, json, txt) are scanned one per map call, so each output block holds
    # complete files: they are stored as they arrive, and a scan stopped half way keeps them.
    # Parquet files span map calls: they are complete only at the end.
    whole_files = batch_size == 1
    pending: dict[str, list[pa.Table]] = {}
    stats: dict[str, FileStats] = {}
    errors: dict[str, str] = {}
    done: set[str] = set()
    for table in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        if stopping.stop_requested():
            raise stopping.Stopped(f"scan of {name} stopped; the files finished are kept")
        finished = _collect(table, pending, stats, errors)
        for path in finished if whole_files else []:
            done.add(path)
            yield _finished(path, pending, stats, errors)
    for path in files:   # parquet files, and any file that gave no row at all
        if path not in done:
            yield _finished(path, pending, stats, errors)
    log(f"scan {name}: ray read {len(files)} files in {time.perf_counter() - started:,.1f} s")


def _collect(table: pa.Table, pending: dict[str, list[pa.Table]], stats: dict[str, FileStats],
             errors: dict[str, str]) -> list[str]:
    """Sort one output block of the Ray scan into matches and stats per file; returns the files
    whose stats row it held."""
    is_stats = table.column(STATS_COLUMN).is_valid()
    finished = []
    for raw in table.filter(is_stats).column(STATS_COLUMN).to_pylist():
        entry = json.loads(raw)
        path = entry.pop("path")
        finished.append(path)
        if "error" in entry:
            errors[path] = entry["error"]
        else:
            stats.setdefault(path, FileStats(path)).add(FileStats(path, **entry))
    matches = table.filter(pa.compute.invert(is_stats)).drop_columns([STATS_COLUMN])
    if matches.num_rows:
        for path in pa.compute.unique(matches.column("path")).to_pylist():
            pending.setdefault(path, []).append(matches.filter(pa.compute.equal(matches.column("path"), path)))
    return finished


def _finished(path: str, pending: dict[str, list[pa.Table]], stats: dict[str, FileStats],
              errors: dict[str, str]) -> tuple[str, pa.Table, FileStats, str | None]:
    tables = pending.pop(path, [])
    if path in errors:
        return path, MATCHES.empty_table(), FileStats(path), errors.pop(path)
    return path, smallest_per_hash(tables), stats.pop(path, FileStats(path)), None
