"""The local engine: files split into byte ranges (jsonl, txt) or whole (json, parquet), scanned in
this process for a small corpus, else by a pool of processes that share the memory-mapped index."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context

import numpy as np
import pyarrow as pa

from pipeline import stopping
from pipeline.contamination.corpora import CorpusSpec, is_url
from pipeline.contamination.index import ItemIndex, Lookup
from pipeline.contamination.reading import Reading, scan_range
from pipeline.contamination.scan import MATCHES, FileStats, ShardError, smallest_per_hash

RANGE_BYTES = 64 << 20           # a pool task: this much of a jsonl/txt file

POOL_MIN_BYTES = 48 << 20        # below this a corpus is scanned in this process (no pool start-up)



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
