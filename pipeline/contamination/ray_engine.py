"""The Ray engine: `ray.data.read_binary_files` (jsonl, json, txt) or `read_parquet`, then
`map_batches` with `RayScanner`, which builds the index lookup once per worker from the object
store and parses the bytes with the local engine's functions."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pyarrow as pa

from pipeline import stopping
from pipeline.contamination.corpora import CorpusSpec, format_of
from pipeline.contamination.index import ItemIndex, Lookup
from pipeline.contamination.reading import Reading, scan_bytes
from pipeline.contamination.scan import (
    MATCHES,
    Documents,
    FileStats,
    ShardError,
    parse_parquet_batch,
    scan_documents,
    smallest_per_hash,
)

# Reading a file is I/O: its Ray tasks ask for a tenth of a CPU and each scanner for the rest of
# one, so one scanner per CPU and the reads that feed them fit together (a scanner asking for a
# whole CPU leaves no room for any read on a local Ray: the dataset waits forever).
READ_CPUS = 0.1
STATS_COLUMN = "stats"           # Ray rows carrying a file's FileStats (JSON), hash null
# Ray's log levels, read from the environment by the driver and every process Ray starts: its
# Python loggers (RAY_LOGGER_LEVEL) and its C++ core (RAY_BACKEND_LOG_LEVEL, whose warnings and
# errors, such as an actor's restart caveat, a driver prints on stderr). Quiet unless -v: a failure
# reaches wenheng as a Python exception all the same.
QUIET_ENV = {"RAY_LOGGER_LEVEL": "error", "RAY_BACKEND_LOG_LEVEL": "fatal"}
VERBOSE_ENV = {"RAY_LOGGER_LEVEL": "warning", "RAY_BACKEND_LOG_LEVEL": "warning"}


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
        try:
            table, stats = scan_bytes(path, data, self.reading, self.lookup)
        except ShardError as exc:
            return _with_stats(MATCHES.empty_table(), {"path": path, "error": str(exc)})
        return _with_stats(table, {"path": path, **stats.to_dict()})

    def _rows(self, path: str, rows: pa.Table) -> pa.Table:
        stats = FileStats(path)
        docs = Documents(self.reading.fields, self.reading.id_field)
        texts, keys = parse_parquet_batch(rows.drop_columns(["path"]), docs, stats)
        table = scan_documents(texts, keys, path, self.lookup, self.reading.n, stats)
        return _with_stats(table, {"path": path, **stats.to_dict()})


def _with_stats(table: pa.Table, stats: dict | None) -> pa.Table:
    """Matches, plus one row holding a file's stats as JSON (hash null)."""
    table = table.append_column(STATS_COLUMN, pa.nulls(table.num_rows, pa.string()))
    if stats is None:
        return table
    row = {name: [None] for name in MATCHES.names} | {STATS_COLUMN: [json.dumps(stats)]}
    return pa.concat_tables([table, pa.table(row, schema=table.schema)])


def _plain(path: str) -> str:
    return os.path.abspath(path.removeprefix("file://")) if "://" not in path.removeprefix("file://") else path


def ray_log_env(verbose: bool) -> None:
    """Ray's log levels for this process and the processes it starts (the Pipes job, Ray's own):
    quiet, or with `verbose` its warnings. Variables the user set are kept."""
    for key, value in (VERBOSE_ENV if verbose else QUIET_ENV).items():
        os.environ.setdefault(key, value)


def _ray_quiet() -> bool:
    return os.environ.get("RAY_LOGGER_LEVEL", "").lower() in ("error", "critical")


def ray_session(address: str | None, workers: int | None) -> None:
    """ray.init for a scan: a cluster by address (`ray start --head` / KubeRay's service), or a
    local Ray started on the spot with `workers` CPUs; quiet unless ray_log_env(verbose=True) ran."""
    import ray

    if ray.is_initialized():
        return
    ray_log_env(verbose=False)   # the default: quiet
    level = logging.getLevelName(os.environ["RAY_LOGGER_LEVEL"].upper())
    if _ray_quiet():   # Ray Data's advice (actor pool sizes, block counts) is Python warnings
        warnings.filterwarnings("ignore", module=r"ray(\.|$)")
    # Ray's own INFO lines (execution plans, where its logs are) would drown wenheng's progress lines
    kwargs = {"include_dashboard": False, "log_to_driver": False,
              "logging_level": level if isinstance(level, int) else logging.WARNING}
    if address:
        kwargs["address"] = address
    else:
        kwargs["num_cpus"] = workers or os.cpu_count() or 1
    with _stderr_closed(_ray_quiet()):   # the C++ core's one line saying it read RAY_BACKEND_LOG_LEVEL
        ray.init(**kwargs)


@contextmanager
def _stderr_closed(quiet: bool) -> Iterator[None]:
    """Within, when `quiet`: file descriptor 2 is /dev/null (what Ray's C++ code writes there
    during ray.init; a failure is still raised as an exception)."""
    if not quiet:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _scan_ray(files: list[str], reading: Reading, index: ItemIndex, spec: CorpusSpec, workers: int | None,
              log: Callable[[str], None], name: str) -> Iterator[tuple[str, pa.Table, FileStats, str | None]]:
    if not files:
        return
    ray_session(spec.ray_address, workers)
    import ray
    import ray.data

    # execution plans and timings: wenheng logs its own
    logging.getLogger("ray.data").setLevel(logging.ERROR if _ray_quiet() else logging.WARNING)
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
    if batch_size == 1:   # a file per call: no more scanners than files (Ray Data warns of idle ones)
        scanners = min(scanners, len(files))
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
