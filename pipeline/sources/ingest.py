"""Ingesting one configured benchmark through its card's adapter, and the fingerprint of
everything ingestion reads (for the sensor that re-runs it when data lands)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from pipeline.benchmarks import card
from pipeline.config import SourceSpec, load_sources
from pipeline.corrections import load_corrections
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


def source_fingerprints(sources_file: Path, corrections_dir: Path, benchmarks: Iterable[str]) -> dict[str, str]:
    """Per benchmark, a cheap fingerprint of what its item stages read: its entry in the sources
    file, its source files (names, sizes, modification times) and the corrections to its items.
    It changes when that benchmark's data lands, and only then."""
    specs = load_sources(sources_file)
    corrections: dict[str, list[str]] = {}
    for correction in load_corrections(corrections_dir):
        corrections.setdefault(correction.benchmark, []).append(repr(correction))
    prints = {}
    for benchmark in benchmarks:
        spec = specs.get(benchmark)
        parts = [repr(spec)]
        files = [] if spec is None or spec.path is None or not spec.path.exists() else \
            sorted(spec.path.rglob("*")) if spec.path.is_dir() else [spec.path]
        stats = ((f, f.stat()) for f in files if f.is_file())
        parts += [f"{f}|{st.st_size}|{st.st_mtime_ns}" for f, st in stats]
        parts += corrections.get(benchmark, [])
        prints[benchmark] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return prints
