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
from pipeline.sources.accounting import ParseResult, SourceError, guarded_file
from pipeline.sources.layout import path_problem, split_problems


def parse_source(spec: SourceSpec) -> ParseResult:
    """Items and quarantine rows for one configured benchmark.

    A source given by `url` is downloaded (once, into the cache) and verified first; a download
    or checksum failure raises `pipeline.sources.fetch.FetchError`, because silently using other
    bytes than the configured ones is never acceptable. A source that cannot be used as a whole
    raises `SourceError`, one line: a path that does not exist or is not in the benchmark's
    layout, `splits` or `evaluate` naming a split it does not hold, a broken side file (AC-EVAL's
    subject_mapping.json), or no rows at all (unless its entry says `allow_empty: true`).
    `wenheng run` refuses the same problems of a local path before any stage
    (`pipeline.config.load_config`); here they are caught for a `url` source and for a run
    started elsewhere (the Dagster UI)."""
    parse = card(spec.benchmark).parse
    if spec.url:
        fetch.materialize(spec)
    shown = spec.path.as_posix()
    problem = path_problem(spec)
    problems = [f"path: {problem}"] if problem else [f"{key}: {text}" for key, text in split_problems(spec)]
    if problems:
        raise SourceError(f"{spec.benchmark}: " + "; ".join(problems))
    result = ParseResult()
    guarded_file(result, spec.benchmark, shown, lambda own: own.extend(parse(spec)))
    if not result.raw_counts and not spec.allow_empty:
        raise SourceError(f"{spec.benchmark}: {shown} yields no rows (its files in the layout are empty, or "
                          "`splits` leaves them all out); set allow_empty: true on its sources entry to allow it")
    return result


def source_fingerprints(sources_file: Path, benchmarks: Iterable[str]) -> dict[str, str]:
    """Per benchmark, a cheap fingerprint of what its raw rows are parsed from: its entry in the
    sources file and its source files (names, sizes, modification times). It changes when that
    benchmark's data lands, and only then."""
    specs = load_sources(sources_file)
    prints = {}
    for benchmark in benchmarks:
        spec = specs.get(benchmark)
        parts = [repr(spec)]
        files = [] if spec is None or spec.path is None or not spec.path.exists() else \
            sorted(spec.path.rglob("*")) if spec.path.is_dir() else [spec.path]
        stats = ((f, f.stat()) for f in files if f.is_file())
        parts += [f"{f}|{st.st_size}|{st.st_mtime_ns}" for f, st in stats]
        prints[benchmark] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return prints


def corrections_fingerprint(corrections_dir: Path, benchmark: str) -> str:
    """A fingerprint of the corrections to one benchmark's items: what the item step applies
    after the raw rows."""
    entries = [repr(c) for c in load_corrections(corrections_dir) if c.benchmark == benchmark]
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()
