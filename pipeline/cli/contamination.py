"""`wenheng contamination scan` and `wenheng contamination report`.

    wenheng contamination scan                        every corpus of data/corpora.yaml
    wenheng contamination scan --name poetry          one of them
    wenheng contamination scan PATH... --name mine    files, folders or globs, read as one corpus
        [--format jsonl|json|parquet|txt] [--field KEY ...] [--id-field KEY] [--version V]
        [--ngram N] [--threshold T] [--engine local|ray] [--ray-address ADDRESS]
    (every scan) [--sources FILE] [-v]
    wenheng contamination report [--corpus NAME]

A user's mistake is a ConfigError: one line, exit 2. A scan runs the `scan` job (the
corpus_overlap partition of each corpus) and then `publish`
through the same runner as `wenheng run`, so the runs show in the Dagster UI. The corpus is
compared with every benchmark item built in the lake: by default what the last `wenheng run` built
(whatever its --sources), nothing prepared; only when no item is built yet are the benchmarks of
the sources file (data/sources.yaml or $WENHENG_SOURCES) prepared first. `--sources FILE` means
what it means for `wenheng run`: that sources file, whose benchmarks not built yet are prepared
first. Then what the scan read (documents, bad lines, empty files) and the report are printed.
Without -v, Ray's warnings and log lines (Python's and its C++ core's) go to the log file.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from pydantic import ValidationError

from pipeline import paths
from pipeline.cli.output import error as _error
from pipeline.cli.output import say as _say
from pipeline.config import ConfigError

STRUCTURED = ("jsonl", "json", "parquet")


def add_parser(sub) -> None:
    c_p = sub.add_parser("contamination", help="scan your own corpus against every benchmark item; report the "
                                               "contamination rates and every paper table on the clean items")
    c_sub = c_p.add_subparsers(dest="action", required=True, metavar="ACTION")
    s_p = c_sub.add_parser("scan", help="scan corpora (from data/corpora.yaml, or PATHs) and publish corpus_overlap",
                           description="Character n-grams (NFKC, OpenCC t2s, no punctuation or space) of every "
                                       "benchmark item's input and label, looked up in the corpus. Only files that "
                                       "changed since the last scan are read again.")
    s_p.add_argument("paths", nargs="*", metavar="PATH",
                     help="files, folders or globs (quote them) to scan as one corpus; none: the corpora of "
                          "data/corpora.yaml (or $WENHENG_CORPORA)")
    s_p.add_argument("--name", metavar="NAME", help="the corpus's name (with PATHs: default the first file's name; "
                                                    "without: one corpus of corpora.yaml)")
    s_p.add_argument("--format", choices=("jsonl", "json", "parquet", "txt"),
                     help="how to read the files (default: from each file's extension)")
    s_p.add_argument("--field", action="append", metavar="KEY",
                     help="a key holding text (repeatable; dotted paths and lists work; default: text)")
    s_p.add_argument("--id-field", metavar="KEY", help="the documents' own id (default: file name + hash of the text)")
    s_p.add_argument("--version", metavar="V",
                     help="the corpus's version, recorded on every row (default: unversioned)")
    s_p.add_argument("--ngram", type=int, metavar="N", help="characters per n-gram (default 13)")
    s_p.add_argument("--threshold", type=float, metavar="T",
                     help="share of a field's n-grams that makes an item contaminated (default 0.5)")
    s_p.add_argument("--sources", metavar="FILE",
                     help="sources file, as for `wenheng run`: its benchmarks not built yet are prepared first "
                          "(default: none prepared when the last run built items; else data/sources.yaml or "
                          "$WENHENG_SOURCES)")
    s_p.add_argument("-v", "--verbose", action="store_true",
                     help="show the libraries' warnings and log lines (Ray, Dagster, ...) on the terminal; "
                          "without it they go to the scan's log file")
    s_p.add_argument("--engine", choices=("local", "ray"), help="local (default: this machine's cores) or ray")
    s_p.add_argument("--ray-address", metavar="ADDRESS",
                     help="a Ray cluster (e.g. ray://head:10001; default: a local Ray started for the scan)")
    r_p = c_sub.add_parser("report", help="print the contamination rates and the clean-vs-all paper tables")
    r_p.add_argument("--corpus", metavar="NAME", help="one corpus (default: all scanned)")


def main(args: argparse.Namespace) -> int:
    return scan(args) if args.action == "scan" else report(args.corpus)


def _default_name(path: str) -> str:
    stem = Path(path.rstrip("/*")).name.split(".")[0] or "corpus"
    return re.sub(r"[^A-Za-z0-9._-]", "-", stem).strip("-._") or "corpus"


def _adhoc_spec(args: argparse.Namespace):
    from pipeline.contamination.corpora import CorpusSpec, absolute_path, check_spec, check_url, format_of, shard_paths

    try:
        absolute = [absolute_path(p, Path.cwd()) for p in args.paths]
    except ConfigError as exc:
        raise ConfigError(f"contamination scan: {exc}") from None
    urls = [line for p in absolute for line in check_url(p)] if any("://" in p for p in absolute) else []
    if urls:
        raise ConfigError(f"contamination scan: paths: {urls[0]}")
    spec_args = {"paths": absolute, "format": args.format,
                 "version": args.version or "unversioned", "id_field": args.id_field}
    for key in ("ngram", "threshold", "engine", "ray_address"):
        value = getattr(args, key)
        if value is not None:
            spec_args[key] = value
    try:
        spec = CorpusSpec(**spec_args)
    except ValidationError as exc:   # one line per problem, named by its flag
        raise ConfigError("\n".join(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']} "
                                    f"(got {e.get('input')!r})" for e in exc.errors())) from None
    formats = {args.format} if args.format else {format_of(f) for f in shard_paths(spec)}
    fields = args.field or (["text"] if formats & set(STRUCTURED) else [])
    spec = spec.model_copy(update={"fields": fields})
    problems = check_spec(spec)
    if problems:
        raise ConfigError("\n".join(f"contamination scan: {line}" for line in problems))
    return spec


def scan(args: argparse.Namespace) -> int:
    from pipeline.contamination.corpora import check_name, load_corpora, save_scanned
    from pipeline.contamination.run import check_fields

    if args.sources:   # as `wenheng run --sources`: the variable every stage reads, then checked
        _use_sources(args.sources)
    configured = load_corpora(paths.corpora_file())
    every = load_corpora(paths.corpora_file(), paths.scanned_corpora_file())
    if args.paths:
        name = args.name or _default_name(args.paths[0])
        if check_name(name):
            raise ConfigError(f"--name: {check_name(name)[0]}")
        if name in configured:
            raise ConfigError(f"corpus {name!r} is configured in {paths.corpora_file()}: scan it with `--name {name}` "
                            "and no PATH, or choose another --name")
        spec = _adhoc_spec(args)
        check_fields(spec, name, warn=_say)
        save_scanned(paths.scanned_corpora_file(), name, spec)
        names = [name]
        engine = spec.engine
    else:
        for flag in ("format", "field", "id_field", "version", "ngram", "threshold", "ray_address"):
            if getattr(args, flag) not in (None, []):
                raise ConfigError(f"--{flag.replace('_', '-')} describes files given as PATHs; for a corpus of "
                                f"{paths.corpora_file()} set it there")
        if args.name and args.name not in every:
            raise ConfigError(f"no corpus {args.name!r} in {paths.corpora_file()} (configured: "
                            f"{', '.join(every) or 'none'}); give PATHs to scan files")
        names = [args.name] if args.name else list(configured)
        if not names:
            raise ConfigError(f"no corpus is configured in {paths.corpora_file()}: give PATHs "
                            "(`wenheng contamination scan corpus/*.jsonl --name mine`) or add one there")
        for n in names:
            check_fields(every[n], n, warn=_say)
        engine = args.engine or every[names[0]].engine
    if args.engine:
        from pipeline.settings import Settings

        os.environ[Settings.scan_engine.name] = args.engine
    if engine == "ray" or args.engine == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError("the ray engine needs Ray: pip install 'wenheng[ray]' (or use --engine local)") from None
    return _run_scan(names, args.verbose, sources_given=bool(args.sources))


def _use_sources(file: str) -> None:
    """`--sources FILE`, as `wenheng run` takes it: $WENHENG_SOURCES for this command and every
    stage it runs; a file that is not there is one line."""
    from pipeline.settings import Settings, settings

    os.environ[Settings.sources.name] = str(Path(file).resolve())
    settings().check()
    if not paths.sources_file().is_file():
        raise ConfigError(f"--sources: {file}: file not found")


def _unprepared(sources_given: bool) -> list[str]:
    """The benchmarks prepared before the scan: none when items are built already (the scan
    compares with what the last run built) unless --sources was given; then, or when nothing is
    built, those of the sources file whose items were never built."""
    from pipeline import benchmarks
    from pipeline.config import load_sources
    from resources.lake import partition_file

    def built(name: str) -> bool:
        return partition_file(paths.lake_dir(), "items", name).is_file()

    if not sources_given and any(built(b) for b in benchmarks.names()):
        return []
    return [b for b in load_sources(paths.sources_file()) if not built(b)]


def _run_scan(names: list[str], verbose: bool = False, sources_given: bool = False) -> int:
    from pipeline.cli.guarded import guarded
    from pipeline.contamination.ray_engine import ray_log_env

    ray_log_env(verbose)   # in the environment: the Pipes job's Ray and its processes inherit it
    return guarded(lambda run_tag, log_file: _scan_and_report(names, run_tag, log_file, sources_given), verbose)


def _scan_and_report(names: list[str], run_tag: str, log_file: Path, sources_given: bool = False) -> int:
    from pipeline.cli.guarded import run_stages
    from pipeline.runner import run_pipeline

    prepare = _unprepared(sources_given)
    if prepare:
        _say(f"items of {', '.join(prepare)} are not built yet: preparing them first")
    started = time.perf_counter()
    summary, code = run_stages(
        lambda: run_pipeline(benchmarks=prepare, models=[], corpora=names, log=_say, run_tag=run_tag),
        "the corpus files scanned so far are kept; the next scan reads only the rest")
    if code is not None:
        return code
    _say(f"{'done' if summary.ok else 'FAILED'} in {time.perf_counter() - started:.1f} s")
    if not summary.ok:
        if log_file.is_file():   # the failed steps' tracebacks
            _error(f"details: {log_file}")
        return 1
    for name in names:
        _say_reading(name)
        report(name)
    return 0


def _say_reading(name: str) -> None:
    """What the scan of `name` read: documents, bad lines skipped, empty files (each named)."""
    from pipeline.contamination.engines import reading_lines
    from pipeline.contamination.scan_cache import load_reading

    notes = load_reading(paths.cache_dir() / "contamination" / name)
    for line in reading_lines(name, notes) if notes else []:
        _say(line)


def report(corpus: str | None) -> int:
    from pipeline.contamination.tables import corpus_names, report_text
    from pipeline.warehouse import connect_readonly

    with connect_readonly(paths.warehouse_file()) as con:
        if corpus and corpus not in corpus_names(con):
            raise ConfigError(f"no scan of corpus {corpus!r} in the warehouse (scanned: "
                            f"{', '.join(corpus_names(con)) or 'none'}); run `wenheng contamination scan`")
        print(report_text(con, corpus))
    return 0
