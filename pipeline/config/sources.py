"""data/sources.yaml: where each benchmark's files are.

    quality: drop                    # items flagged for data quality: left out of evaluation, or keep
    duplicates: flag                 # or drop: non-representative duplicates sharing the gold
    dedup: {threshold: 0.9}          # optional: dedup's parameters (pipeline/dedup/params.py), each key
                                     # a DedupParams field; left out: its default
    benchmarks:
      wenmind: {path: WenMind.json, version: v1}             # relative to this file
      wyweb: {url: https://..., sha256: <64 hex>, subpath: data/tasks, version: v2, max_bytes: 2 GiB}

Each key and default is written once, in `SourcesFile` and `SourceEntry`; `SourceSpec` is what
the rest of wenheng reads. Nothing is downloaded here (`pipeline.sources.fetch.materialize` does
that on first use)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, ValidationInfo, create_model, model_validator
from pydantic_core import PydanticCustomError

from pipeline import benchmarks
from pipeline.config.entries import BENCHMARK, Entry, Flag, Text, expect, not_blank, null_is, typed
from pipeline.config.problems import NAMES_KEY, ConfigError, Problems, problem, problems_at
from pipeline.config.yaml_loading import load_yaml
from pipeline.dedup.params import DedupParams, lsh_bands
from pipeline.dedup.policy import POLICIES as DUPLICATE_POLICIES
from pipeline.dedup.policy import QUALITY_POLICIES
from pipeline.paths import cache_dir
from pipeline.sources.fetch import LIMIT_KEYS, FetchLimits, local_path, parse_limit

SHA256 = re.compile(r"^[0-9a-f]{64}$")
URL_SCHEMES = ("http://", "https://", "file://")


def _url(value: str) -> str:
    if not value.startswith(URL_SCHEMES):
        raise ValueError("not a url")
    return value


def _scalar_as_text(value: Any) -> Any:
    """A version or license is a label: a number or a date (YAML reads `2026-05-01` as one) is its text."""
    import datetime as dt

    if isinstance(value, (int, float, dt.date)) and not isinstance(value, bool):
        return str(value)
    return value


def _limit(value: Any, info: ValidationInfo) -> int | float:
    try:
        return parse_limit(info.field_name, value)
    except ValueError as exc:
        raise PydanticCustomError(NAMES_KEY, str(exc)) from None


Label = Annotated[str, BeforeValidator(_scalar_as_text), expect("a single value (a string)")]
def _no_nul(value: Any) -> Any:
    """A path with a NUL character in it cannot be opened (Python raises `embedded null byte`)."""
    if isinstance(value, str) and "\0" in value:
        raise ValueError("NUL character")
    return value


Location = typed(str, says="that is not empty (quote it in YAML) and holds no NUL character",
                 checks=(AfterValidator(not_blank), AfterValidator(_no_nul)))
InsidePath = typed(str, says="that holds no NUL character", checks=(AfterValidator(_no_nul),))


def split_names(example: str) -> Any:
    return Annotated[list[str] | None, expect(f"a list of split names, e.g. {example}")]


def _open_unit(value: float) -> float:
    if not 0 < value < 1:
        raise ValueError("outside (0, 1)")
    return value


Share = typed(float, gt=0, le=1)   # a Jaccard similarity or a share of a task's items
# The range of each DedupParams field as `dedup:` takes it: a field added there must be added here.
DEDUP_VALUES = {
    "num_perm": typed(int, ge=2),
    "threshold": Share,
    "contamination_threshold": Share,
    "ngram": typed(int, ge=1),
    "short_ngram": typed(int, ge=1),
    "short_len": typed(int, ge=0),
    "template_ngram": typed(int, ge=1),
    "template_share": Share,
    "template_min_items": typed(int, ge=1),
    "lsh_recall": typed(float, words="a number", says="> 0 and < 1", checks=(AfterValidator(_open_unit),)),
    "seed": typed(int, ge=0, le=2**32 - 1),
}


class _DedupKeys(Entry):
    """`dedup:` in the sources file: the parameters of dedup, one key per DedupParams field
    (added below, each with its default from DedupParams); `params()` is what dedup reads."""

    SHAPE: ClassVar[str] = "a mapping of dedup parameters, e.g. {threshold: 0.9}"
    UNKNOWN_KEYS_TOGETHER: ClassVar[bool] = True

    @model_validator(mode="after")
    def _bands_fit(self) -> _DedupKeys:
        low = min(self.threshold, self.contamination_threshold)
        try:
            lsh_bands(low, self.num_perm, self.lsh_recall)
        except ValueError:
            raise problem(f"num_perm {self.num_perm} is too few permutations for LSH bands at threshold {low} "
                          f"with recall {self.lsh_recall}; raise num_perm", at=("num_perm",)) from None
        return self

    def params(self) -> DedupParams:
        return DedupParams(**{f.name: getattr(self, f.name) for f in dataclasses.fields(DedupParams)})


DedupEntry = create_model("DedupEntry", __base__=_DedupKeys, __module__=__name__,
                          **{f.name: (DEDUP_VALUES[f.name], f.default) for f in dataclasses.fields(DedupParams)})


class SourcesFile(Entry):
    """The top level of the sources file."""

    UNKNOWN_KEYS_TOGETHER: ClassVar[bool] = True
    quality: Literal[QUALITY_POLICIES] = "drop"      # each benchmark's, unless its entry says
    duplicates: Literal[DUPLICATE_POLICIES] = "flag"
    dedup: Annotated[DedupEntry, null_is({})] = DedupEntry()   # left out or null: DedupParams' defaults
    benchmarks: Annotated[dict[Any, Any], null_is({}),
                          expect("a mapping benchmark -> {path or url, version, ...}")] = {}


class _SourceKeys(Entry):
    """One benchmark's source: a local `path` (relative to the sources file) or a `url` with its
    `sha256` (and `subpath`, inside an unpacked archive); the limits of its download are added
    below, one key each of pipeline.sources.fetch.FetchLimits."""

    SHAPE: ClassVar[str] = "a mapping {path or url, version, ...}"
    UNKNOWN_KEYS_TOGETHER: ClassVar[bool] = True
    path: Location = ""
    url: Annotated[str, AfterValidator(_url), expect("http://, https:// or file://", lead="must start with")] = ""
    sha256: Text = ""
    subpath: InsidePath = ""
    version: Label = "unversioned"
    license: Label = ""
    splits: split_names("[dev]") = None        # only these splits (file stems / split folders); null: all
    evaluate: split_names("[dev, test]") = None  # the splits to ask and score; null: the card's eval_splits
    quality: Literal[QUALITY_POLICIES] | None = None   # null: the file's `quality`
    allow_empty: Flag = False   # no rows, or every row quarantined, is an error unless this says it may be empty

    def limits(self) -> FetchLimits:
        return FetchLimits(**{key: getattr(self, key) for key in LIMIT_KEYS if key in self.model_fields_set})

    @model_validator(mode="after")
    def _path_or_url(self) -> _SourceKeys:
        given = self.model_fields_set
        if ("path" in given) == ("url" in given):
            raise problem("needs either a 'path' or a 'url' (with 'sha256'), not both")
        if "path" in given:
            limits = [key for key in LIMIT_KEYS if key in given]
            if limits:
                raise problem(f"{', '.join(limits)} only apply to a 'url' source (got a 'path')")
            return self
        found = []
        if not SHA256.match(self.sha256.lower()):
            found.append((("sha256",), "a url source needs 'sha256' (64 hex digits) of the file, so a changed "
                                       f"download is never used by mistake (got {self.sha256 or None!r})"))
        if ".." in Path(self.subpath.strip("/")).parts:
            found.append((("subpath",), f"must stay inside the download (got {self.subpath!r})"))
        if found:
            raise problems_at(found)
        return self


SourceEntry = create_model("SourceEntry", __base__=_SourceKeys, __module__=__name__,
                           **{key: (Annotated[Any, AfterValidator(_limit)], None) for key in LIMIT_KEYS})


@dataclass(frozen=True)
class SourceSpec:
    benchmark: str
    path: Path            # a file or a directory; for a `url` source, where the verified download lives
    version: str
    license: str = SourceEntry.default("license")
    url: str = ""         # download instead of a local path (needs sha256)
    sha256: str = ""      # of the downloaded file, lower-case hex
    subpath: str = ""     # inside an unpacked archive: the file or folder to parse
    splits: tuple[str, ...] = ()   # only these splits (file stems / split folders); empty = all
    evaluate: tuple[str, ...] = ()  # the splits to ask and score; empty = the card's eval_splits
    quality: str = SourcesFile.default("quality")  # flagged items: left out of evaluation, or `keep`
    limits: FetchLimits = FetchLimits()  # a `url` source's download and unpack limits (fetch.py)
    allow_empty: bool = SourceEntry.default("allow_empty")

    def includes_split(self, split: str) -> bool:
        return not self.splits or split in self.splits


def load_sources(path: Path) -> dict[str, SourceSpec]:
    """Each benchmark's source: a local `path` (relative to the sources file) or a `url` with its
    `sha256`. Nothing is downloaded here; `pipeline.sources.fetch.materialize` does that on first
    use, into `cache_dir()/downloads`, so reading the configuration never touches the network."""
    problems = Problems()
    specs = read_sources(path, problems)
    problems.raise_any()
    return specs


def read_sources(path: Path, problems: Problems) -> dict[str, SourceSpec]:
    """The entries that are valid; each problem of the file recorded in `problems`."""
    data = problems.check(load_yaml, path)
    if data is None:
        return {}
    before = len(problems.lines)
    top = problems.validate(SourcesFile, data, path)
    default_quality = top.quality if top is not None else SourcesFile.default("quality")
    entries = data.get("benchmarks")
    specs: dict[str, SourceSpec] = {}
    for name, entry in entries.items() if isinstance(entries, dict) else ():
        if problems.validate(BENCHMARK, name, path, ("benchmarks", name)) is None:
            continue
        source = problems.validate(SourceEntry, entry, path, ("benchmarks", name))
        if source is not None:
            specs[name] = _spec(path, name, source, default_quality)
    if not specs and len(problems.lines) == before:
        problems.add(f"{path}: benchmarks: no benchmarks configured")
    return specs


def _spec(path: Path, name: str, source: Any, default_quality: str) -> SourceSpec:
    sha256, subpath = source.sha256.lower(), source.subpath.strip("/")
    if source.url:
        located = local_path(source.url, sha256, subpath, cache_dir() / "downloads")
    else:
        located, subpath = (path.parent / source.path).resolve(), ""
    return SourceSpec(benchmark=name, path=located, version=source.version, license=source.license,
                      url=source.url, sha256=sha256, subpath=subpath, splits=tuple(source.splits or ()),
                      evaluate=tuple(source.evaluate or ()), quality=source.quality or default_quality,
                      limits=source.limits(), allow_empty=source.allow_empty)


def load_duplicate_policy(path: Path) -> str:
    """`duplicates:` in the sources file: `flag` (default; duplicates are only recorded) or `drop`
    (within a benchmark, non-representative duplicates sharing the gold are not evaluated)."""
    return _top_level(path).duplicates


def load_dedup_params(path: Path) -> DedupParams:
    """`dedup:` in the sources file as the one DedupParams every dedup step reads (item
    signatures, clusters, contamination); each key left out keeps its default."""
    return _top_level(path).dedup.params()


def _top_level(path: Path) -> SourcesFile:
    """The file's own keys, validated; read again only when the file changed (the definitions
    and each dedup step ask for them several times)."""
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError:   # missing: load_yaml says so
        key = None
    if key is None or _TOP_LEVEL.get("key") != key:
        problems = Problems()
        top = problems.validate(SourcesFile, load_yaml(path), path)
        problems.raise_any()
        _TOP_LEVEL.update(key=key, top=top)
    return _TOP_LEVEL["top"]


_TOP_LEVEL: dict[str, Any] = {}


def source_files(path: Path, spec: SourceSpec) -> None:
    """What a source names, as `wenheng run` reads it: the path exists in the benchmark's layout
    (pipeline/sources/layout.py: a file or a folder, files there, side files readable) and
    `splits` and `evaluate` name splits its files hold, so that every benchmark asks something.
    A `url` source is checked once its download is in the cache (and by ingestion after it)."""
    from pipeline.sources.layout import path_problem, split_problems

    where = f"{path}: benchmarks.{spec.benchmark}"
    if spec.url and not spec.path.exists():
        return
    found = path_problem(spec)
    if found is not None:
        raise ConfigError(f"{where}.{'subpath' if spec.url else 'path'}: {found}")
    default_evaluated = benchmarks.card(spec.benchmark).eval_splits
    lines = [f"{where}.{key}: {text}" for key, text in split_problems(spec, default_evaluated)]
    if lines:
        raise ConfigError("\n".join(lines))
