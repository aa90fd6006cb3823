"""Ingesting one configured benchmark through its card's adapter, and the fingerprint of
everything ingestion reads (for the sensor that re-runs it when data lands)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pipeline.benchmarks import card
from pipeline.config import SourceSpec, load_sources
from pipeline.sources import fetch
from pipeline.sources.reading import ParseResult, guarded_file


def parse_source(spec: SourceSpec) -> ParseResult:
    """Items and quarantine rows for one configured benchmark.

    A source given by `url` is downloaded (once, into the cache) and verified first; a download
    or checksum failure raises `pipeline.sources.fetch.FetchError`, because silently using other
    bytes than the configured ones is never acceptable. A configured local path that does not
    exist, or that holds no file in the benchmark's layout, gives one quarantine row saying so,
    so the other benchmarks still build and the problem shows up in the quarantine table."""
    parse = card(spec.benchmark).parse
    if spec.url:
        fetch.materialize(spec)
    result = ParseResult()
    shown = spec.path.as_posix()
    if not spec.path.exists():
        result.raw_counts[shown] += 1
        result.reject(spec.benchmark, shown, "path", f"source path does not exist: {shown}", "")
        return result
    guarded_file(result, spec.benchmark, shown, lambda own: own.extend(parse(spec)))
    if not result.raw_counts:
        result.raw_counts[shown] += 1
        result.reject(spec.benchmark, shown, "path",
                      f"no {spec.benchmark} files in the expected layout under {shown} "
                      "(see pipeline/sources/README.md)", "")
    return result


def fingerprint(sources_file: Path, corrections_dir: Path) -> str:
    """A cheap fingerprint of everything ingestion reads: the sources file, each local source path
    (names, sizes, modification times) and the corrections files. It changes when data lands."""
    parts = [sources_file.read_bytes()]
    watched = [spec.path for spec in load_sources(sources_file).values() if spec.path is not None]
    watched.append(corrections_dir)
    for root in watched:
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for file in files:
            if file.is_file():
                stat = file.stat()
                parts.append(f"{file}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return hashlib.sha256(b"\n".join(parts)).hexdigest()
