"""Reading and validating data/sources.yaml and data/models.yaml, with errors that say what to fix."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import benchmarks
from pipeline.dedup.policy import POLICIES as DUPLICATE_POLICIES
from pipeline.dedup.policy import QUALITY_POLICIES
from pipeline.paths import cache_dir
from pipeline.script import VARIANT_CONFIGS
from pipeline.sources.fetch import LIMIT_KEYS, FetchLimits, is_archive, local_path, parse_limit

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENGINES = ("vllm", "openai", "baseline")


class ConfigError(ValueError):
    """A configuration file is wrong; the message names the file and the field, one line per problem."""


class _Problems:
    """Every problem of one file, collected so that one run reports them all (one line each)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def check(self, step, *args: Any) -> Any:
        """`step(*args)`, or None with its ConfigError recorded."""
        try:
            return step(*args)
        except ConfigError as exc:
            self.lines.extend(str(exc).splitlines())
            return None

    def add(self, line: str) -> None:
        self.lines.append(line)

    def raise_any(self) -> None:
        if self.lines:
            raise ConfigError("\n".join(self.lines))


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last silently)."""


def _no_duplicates(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (list, dict, set)):   # YAML's `? [a, b]`: no name a setting could have
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a name or a number, not {key!r}", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}; each key may appear once per mapping", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.load(path.read_bytes().decode("utf-8"), Loader=_UniqueKeyLoader) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (got {type(data).__name__})")
    return data


SHA256 = re.compile(r"^[0-9a-f]{64}$")
SOURCES_TOP_KEYS = {"benchmarks", "duplicates", "quality"}
SOURCE_KEYS = {"path", "url", "sha256", "subpath", "version", "license", "splits", "evaluate", "quality",
               "allow_empty", *LIMIT_KEYS}
SOURCE_TEXT_KEYS = ("path", "url", "subpath")   # a string each; version and license: any label


@dataclass(frozen=True)
class SourceSpec:
    benchmark: str
    path: Path            # a file or a directory; for a `url` source, where the verified download lives
    version: str
    license: str = ""
    url: str = ""         # download instead of a local path (needs sha256)
    sha256: str = ""      # of the downloaded file, lower-case hex
    subpath: str = ""     # inside an unpacked archive: the file or folder to parse
    splits: tuple[str, ...] = ()   # only these splits (file stems / split folders); empty = all
    evaluate: tuple[str, ...] = ()  # the splits to ask and score; empty = the card's eval_splits
    quality: str = "drop"           # items flagged for data quality: left out of evaluation, or `keep`
    limits: FetchLimits = FetchLimits()  # a `url` source's download and unpack limits (fetch.py)
    allow_empty: bool = False       # a source with no rows is an error unless this says it may be empty

    def includes_split(self, split: str) -> bool:
        return not self.splits or split in self.splits


def load_sources(path: Path) -> dict[str, SourceSpec]:
    """Each benchmark's source: a local `path` (relative to the sources file) or a `url` with its
    `sha256`. Nothing is downloaded here; `pipeline.sources.fetch.materialize` does that on first
    use, into `cache_dir()/downloads`, so reading the configuration never touches the network."""
    problems = _Problems()
    specs = _read_sources(path, problems)
    problems.raise_any()
    return specs


def _read_sources(path: Path, problems: _Problems) -> dict[str, SourceSpec]:
    """The entries that are valid; each problem of the file recorded in `problems`."""
    data = problems.check(_load_yaml, path)
    if data is None:
        return {}
    for key in sorted(set(data) - SOURCES_TOP_KEYS, key=str):
        problems.add(f"{path}: {key}: unknown key; expected some of {sorted(SOURCES_TOP_KEYS)}")
    default_quality = problems.check(_quality, data.get("quality", "drop"), f"{path}: quality") or "drop"
    problems.check(_duplicate_policy, data, path)   # the data already read, not the file again
    entries = data.get("benchmarks") or {}
    if not isinstance(entries, dict):
        problems.add(f"{path}: benchmarks: expected a mapping benchmark -> {{path or url, version, ...}} "
                     f"(got {type(entries).__name__})")
        entries = {}
    specs: dict[str, SourceSpec] = {}
    for name, entry in entries.items():
        spec = problems.check(_source, path, name, entry, default_quality)
        if spec is not None:
            specs[name] = spec
    if not specs and not problems.lines:
        problems.add(f"{path}: benchmarks: no benchmarks configured")
    return specs


def _source(path: Path, name: str, entry: Any, default_quality: str) -> SourceSpec:
    where = f"{path}: benchmarks.{name}"
    if name not in benchmarks.names():
        raise ConfigError(f"{where}: unknown benchmark; expected one of {', '.join(benchmarks.names())}")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping {{path or url, version, ...}} (got {entry!r})")
    if ("path" in entry) == ("url" in entry):
        raise ConfigError(f"{where} needs either a 'path' or a 'url' (with 'sha256'), not both")
    unknown = sorted(set(entry) - SOURCE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {sorted(SOURCE_KEYS)}")
    for key in ("version", "license"):
        if key in entry and (isinstance(entry[key], (dict, list, bool)) or entry[key] is None):
            raise ConfigError(f"{where}.{key}: expected a single value (a string), got {entry[key]!r}")
    for key in SOURCE_TEXT_KEYS:
        if key in entry and (not isinstance(entry[key], str) or (key in ("path", "url") and not entry[key].strip())):
            raise ConfigError(f"{where}.{key}: expected a non-empty string (got {entry[key]!r}); quote it in YAML")
    splits = _split_names(entry.get("splits"), f"{where}.splits", "[dev]")
    evaluate = _split_names(entry.get("evaluate"), f"{where}.evaluate", "[dev, test]")
    allow_empty = _flag(entry.get("allow_empty", False), f"{where}.allow_empty")
    url, sha256, subpath = str(entry.get("url", "")), str(entry.get("sha256", "")).lower(), ""
    if "path" in entry:
        source_path = (path.parent / str(entry["path"])).resolve()
    else:
        if not url.startswith(("http://", "https://", "file://")):
            raise ConfigError(f"{where}.url: must start with http://, https:// or file:// (got {url!r})")
        if not SHA256.match(sha256):
            raise ConfigError(f"{where}.sha256: a url source needs 'sha256' (64 hex digits) of the file, "
                              f"so a changed download is never used by mistake (got {entry.get('sha256')!r})")
        subpath = str(entry.get("subpath", "")).strip("/")
        if ".." in Path(subpath).parts:
            raise ConfigError(f"{where}.subpath: must stay inside the download (got {subpath!r})")
        source_path = local_path(url, sha256, subpath, cache_dir() / "downloads")
    limits = {key: entry[key] for key in LIMIT_KEYS if key in entry}
    if limits and "path" in entry:
        raise ConfigError(f"{where}: {', '.join(limits)} only apply to a 'url' source (got a 'path')")
    for key, value in limits.items():
        try:
            limits[key] = parse_limit(key, value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return SourceSpec(
        benchmark=name,
        path=source_path,
        version=str(entry.get("version", "unversioned")),
        license=str(entry.get("license", "")),
        url=url,
        sha256=sha256,
        subpath=subpath,
        splits=tuple(splits),
        evaluate=tuple(evaluate),
        quality=_quality(entry.get("quality", default_quality), where),
        limits=FetchLimits(**limits),
        allow_empty=allow_empty,
    )


def _split_names(value: Any, where: str, example: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
        raise ConfigError(f"{where}: expected a list of split names, e.g. {example} (got {value!r})")
    return tuple(value)


def _source_files(path: Path, spec: SourceSpec) -> None:
    """What a source names, as `wenheng run` reads it: the path exists in the benchmark's layout
    (pipeline/sources/layout.py: a file or a folder, files there, side files readable) and
    `splits` and `evaluate` name splits its files hold, so that every benchmark asks something.
    A `url` source is checked once its download is in the cache (and by ingestion after it)."""
    from pipeline.sources.layout import path_problem, split_problems

    where = f"{path}: benchmarks.{spec.benchmark}"
    if spec.url and not spec.path.exists():
        return
    problem = path_problem(spec)
    if problem is not None:
        raise ConfigError(f"{where}.{'subpath' if spec.url else 'path'}: {problem}")
    default_evaluated = benchmarks.card(spec.benchmark).eval_splits
    lines = [f"{where}.{key}: {text}" for key, text in split_problems(spec, default_evaluated)]
    if lines:
        raise ConfigError("\n".join(lines))


def load_config(sources_path: Path, models_path: Path, corrections_path: Path | None = None,
                warn: Callable[[str], None] | None = None, run_models: Collection[str] | None = None,
                run_benchmarks: Collection[str] | None = None
                ) -> tuple[dict[str, SourceSpec], dict[str, ModelSpec]]:
    """Both files and the corrections (default: `paths.corrections_dir()`), every problem of all
    of them reported together (one ConfigError, one line each): what `wenheng run` checks before
    any stage starts. Beyond the files' own text: each source's files (`_source_files`) and the
    API key variable of each model to be run (`run_models`, default all) and of the judges of the
    benchmarks to be run (`run_benchmarks`, default every configured one). `warn` gets each
    warning line of a valid configuration (`judge_warnings`)."""
    from pipeline.corrections import CorrectionsError, load_corrections
    from pipeline.paths import corrections_dir

    problems = _Problems()
    sources = _read_sources(sources_path, problems)
    for spec in sources.values():   # the valid entries' files, whatever else is wrong
        problems.check(_source_files, sources_path, spec)
    models, judges = problems.check(_models_and_judges, models_path) or (None, {})
    if models is not None:
        benches = set(sources) if run_benchmarks is None else set(run_benchmarks)
        run = set(models if run_models is None else run_models) | {j.model for b, j in judges.items() if b in benches}
        for name in (m for m in models if m in run):
            problems.check(_api_key_set, models_path, models[name])
    try:
        load_corrections(corrections_path or corrections_dir())
    except CorrectionsError as exc:
        problems.lines.extend(str(exc).splitlines())
    problems.raise_any()
    if warn is not None:
        for line in judge_warnings(models_path, judges, models):
            warn(line)
    return sources, models


def _quality(value: Any, where: str) -> str:
    """`quality:` (top level, or per benchmark to override it): `drop` leaves the items an adapter
    flags for data quality (HTML in an option, an empty option, the gold repeated) out of
    evaluation; `keep` asks them too."""
    if value not in QUALITY_POLICIES:
        raise ConfigError(f"{where}: quality must be one of {', '.join(QUALITY_POLICIES)} (got {value!r})")
    return value


def load_duplicate_policy(path: Path) -> str:
    """`duplicates:` in the sources file: `flag` (default; duplicates are only recorded) or `drop`
    (within a benchmark, non-representative duplicates sharing the gold are not evaluated)."""
    return _duplicate_policy(_load_yaml(path), path)


def _duplicate_policy(data: dict[str, Any], path: Path) -> str:
    policy = str(data.get("duplicates", "flag"))
    if policy not in DUPLICATE_POLICIES:
        raise ConfigError(f"{path}: duplicates must be one of {', '.join(DUPLICATE_POLICIES)} (got {policy!r})")
    return policy


@dataclass(frozen=True)
class ModelSpec:
    name: str
    engine: str
    params: dict[str, Any] = field(default_factory=dict)   # engine parameters (part of the cache key)
    sampling: dict[str, Any] = field(default_factory=dict)  # defaults: temperature, max_tokens cap
    variants: tuple[str, ...] = ("original",)
    settings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # benchmark -> settings to run


MODELS_TOP_KEYS = {"models", "judges"}
SAMPLING_KEYS = {"temperature", "max_tokens"}
# vLLM's parallelism, checked here so a bad size is a config line (the engine decides which of
# them are part of its cache identity: pipeline/engines/vllm_engine.py).
VLLM_PARALLEL_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")


def load_models(path: Path) -> dict[str, ModelSpec]:
    """`models:` of the models file, its `judges:` checked too (a broken one fails here, not in
    the middle of a run)."""
    return _models_and_judges(path)[0]


def _models_and_judges(path: Path) -> tuple[dict[str, ModelSpec], dict[str, JudgeSpec]]:
    data = _load_yaml(path)
    problems = _Problems()
    for key in sorted(set(data) - MODELS_TOP_KEYS, key=str):
        problems.add(f"{path}: {key}: unknown key; expected some of {sorted(MODELS_TOP_KEYS)}")
    entries = data.get("models") or {}
    if not isinstance(entries, dict) or not entries:
        problems.add(f"{path}: models: expected a mapping name -> {{engine, ...}} with at least one model")
        entries = {}
    models: dict[str, ModelSpec] = {}
    for name, entry in entries.items():
        spec = problems.check(_model, path, name, entry)
        if spec is not None:
            models[str(name)] = spec
    judges: dict[str, JudgeSpec] = {}
    if not problems.lines:  # a broken `judges:` fails here, not in the middle of a run
        judges = problems.check(_judges, path, data, models) or {}
    problems.raise_any()
    return models, judges


def _model(path: Path, name: Any, entry: Any) -> ModelSpec:
    where = f"{path}: models.{name}"
    if not isinstance(name, str) or not MODEL_NAME.match(name):
        raise ConfigError(f"{where}: expected a name of letters, digits, '.', '_' and '-' (got {name!r}); "
                          "quote a name that YAML reads as a number, a boolean or null")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping {{engine: vllm|openai|baseline, ...}}")
    problems = _Problems()
    entry = dict(entry)
    engine = entry.pop("engine", None)
    if engine not in ENGINES:
        problems.add(f"{where}.engine: expected one of {', '.join(ENGINES)} (got {engine!r})")
    sampling = entry.pop("sampling", None) or {}
    if not isinstance(sampling, dict):
        problems.add(f"{where}.sampling: expected a mapping {{temperature, max_tokens}} (got {sampling!r})")
        sampling = {}
    for key in sorted(set(sampling) - SAMPLING_KEYS, key=str):
        problems.add(f"{where}.sampling.{key}: unknown key; expected some of {sorted(SAMPLING_KEYS)}")
    temperature = sampling.get("temperature", 0.0)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
        problems.add(f"{where}.sampling.temperature: expected a number in [0, 2] (got {temperature!r})")
    if sampling.get("max_tokens") is not None:
        problems.check(_positive_int, sampling["max_tokens"], f"{where}.sampling.max_tokens", 1)
    variants = entry.pop("variants", None) or ("original",)
    if isinstance(variants, str) or not isinstance(variants, (list, tuple)):
        problems.add(f"{where}.variants: expected a list, some of {', '.join(VARIANT_CONFIGS)} (got {variants!r})")
        variants = ("original",)
    for variant in variants:
        if not isinstance(variant, str) or variant not in VARIANT_CONFIGS:
            problems.add(f"{where}.variants: unknown variant {variant!r}; "
                         f"expected some of {', '.join(VARIANT_CONFIGS)}")
    settings = entry.pop("settings", None) or {}
    if not isinstance(settings, dict):
        problems.add(f"{where}.settings: expected a mapping benchmark -> [settings] (got {settings!r})")
        settings = {}
    for bench, chosen in settings.items():
        problems.check(_settings, f"{where}.settings.{bench}", bench, chosen)
    if engine in ENGINES:
        before = len(problems.lines)
        _identity_keys(where, engine, entry, problems)
        if len(problems.lines) == before:   # else the engine's own check would repeat the problem
            problems.check(_engine_params, f"{where}", engine, entry)
    problems.raise_any()
    return ModelSpec(str(name), engine, entry, dict(sampling), tuple(variants),
                     {b: tuple(s) for b, s in settings.items()})


def _identity_keys(where: str, engine: str, entry: dict[str, Any], problems: _Problems) -> None:
    """The keys that change a model's outputs, so part of its identity (and of every response's
    cache key), each checked with a line of its own. OpenAI-compatible: `model` (the served name)
    and `revision`, a label the user changes when the weights behind the endpoint change (a date,
    a commit; stored as text). vLLM: the parallel sizes, positive integers."""
    if engine == "openai" and "revision" in entry:
        revision = entry["revision"]
        if isinstance(revision, dt.date):   # YAML reads an unquoted 2026-05-01 as a date
            revision = entry["revision"] = revision.isoformat()
        if isinstance(revision, bool) or not isinstance(revision, (str, int)) or not str(revision).strip():
            problems.add(f"{where}.revision: expected a label for the served weights, e.g. a date or a "
                         f"commit (got {revision!r}); quote it in YAML")
        else:
            entry["revision"] = str(revision).strip()
    if engine == "vllm":
        for key in VLLM_PARALLEL_KEYS:
            if key in entry:
                problems.check(_positive_int, entry[key], f"{where}.{key}", 1)


def _settings(where: str, bench: Any, chosen: Any) -> None:
    from pipeline.prompts import protocol

    if bench not in benchmarks.names():
        raise ConfigError(f"{where}: unknown benchmark; expected one of {', '.join(benchmarks.names())}")
    if isinstance(chosen, str) or not isinstance(chosen, (list, tuple)):
        raise ConfigError(f"{where}: expected a list of settings (got {chosen!r})")
    known = list(protocol(bench)["settings"])
    unknown = [s for s in chosen if s not in known]
    if unknown:
        raise ConfigError(f"{where}: unknown settings {unknown}; the {bench} protocol has {', '.join(known)}")


def _engine_class(engine: str):
    if engine == "baseline":
        from pipeline.engines.baseline import BaselineEngine

        return BaselineEngine
    if engine == "vllm":
        from pipeline.engines.vllm_engine import VLLMEngine

        return VLLMEngine
    from pipeline.engines.openai_engine import OpenAIEngine

    return OpenAIEngine


def _engine_params(where: str, engine: str, params: dict[str, Any]) -> None:
    """The engine parameters against the engine's constructor: unknown or missing names, then the
    constructor's own checks (it only stores settings; nothing is loaded or contacted). vLLM's
    extra keyword arguments go to vllm.LLM: checked against vLLM's EngineArgs when it is installed."""
    import inspect

    cls = _engine_class(engine)
    signature = inspect.signature(cls.__init__)
    named = [p for p in list(signature.parameters.values())[1:] if p.kind is not p.VAR_KEYWORD]
    accepted = {p.name for p in named} | (_vllm_engine_args() if engine == "vllm" else set())
    open_ended = engine == "vllm" and not _vllm_engine_args()
    unknown = sorted((k for k in params if str(k) not in accepted), key=str)
    if unknown and not open_ended:
        also = " or a vllm.LLM argument" if engine == "vllm" else ""
        raise ConfigError(f"{where}: unknown {engine} engine parameters {unknown}; expected some of "
                          f"{', '.join(p.name for p in named)}{also}")
    missing = [p.name for p in named if p.default is p.empty and p.name not in params]
    if missing:
        raise ConfigError(f"{where}: the {engine} engine needs {', '.join(missing)}")
    wrong = _param_values(where, cls, params)
    if wrong:
        raise ConfigError("\n".join(wrong))
    if engine == "openai":
        from pipeline.redact import watch_env

        watch_env(params.get("api_key_env", "OPENAI_API_KEY"))  # its value never reaches an error text
    try:
        cls(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {str(exc).splitlines()[0]}") from None


# What an engine parameter's type (its constructor's annotation, checked first) does not say:
# the values it may take. One rule per parameter name, for every engine that has the parameter.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PARAM_RULES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "model": (str.strip, "that is not empty"),
    "base_url": (lambda v: v.startswith(("http://", "https://")), "starting with http:// or https://"),
    "api_key_env": (ENV_NAME.match, "naming an environment variable, e.g. OPENAI_API_KEY"),
    "concurrency": (lambda v: v >= 1, ">= 1"),
    "timeout_s": (lambda v: 0 < v <= 86_400, "> 0 and <= 86400 (a day)"),
    "max_retries": (lambda v: 0 <= v <= 20, "from 0 to 20"),
    "max_model_len": (lambda v: v >= 1, ">= 1"),
}
_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string", dict: "a mapping",
               list: "a list", type(None): "null"}


def _param_values(where: str, cls: type, params: dict[str, Any]) -> list[str]:
    """One line per engine parameter whose value does not fit the type its engine's constructor
    declares (`chat: maybe` for a bool, `timeout_s: fast` for a float) or its PARAM_RULES. vLLM's
    own arguments (the constructor's **kwargs) have no declared type: vllm.LLM checks them."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except (NameError, TypeError):   # an annotation that cannot be resolved: the constructor still checks
        hints = {}
    lines = []
    for key, value in params.items():
        hint = hints.get(str(key))
        if hint is None:
            continue
        rule, says = PARAM_RULES.get(str(key), (None, ""))
        if not _fits(value, hint) or (rule is not None and value is not None and not rule(value)):
            lines.append(f"{where}.{key}: expected {_type_words(hint)}{' ' + says if says else ''} (got {value!r})")
    return lines


def _arms(hint: Any) -> tuple:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a value read from YAML is of the annotated type: a bool is not a number, a number
    not a string, and a float is finite."""
    for arm in _arms(hint):
        kind = typing.get_origin(arm) or arm
        if kind is float:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        elif kind is int:
            fits = isinstance(value, int) and not isinstance(value, bool)
        elif kind is type(None) or kind is None:
            fits = value is None
        else:
            fits = not isinstance(kind, type) or isinstance(value, kind)
        if fits:
            return True
    return False


def _type_words(hint: Any) -> str:
    return " or ".join(_TYPE_WORDS.get(typing.get_origin(a) or a, getattr(a, "__name__", str(a))) for a in _arms(hint))


def _api_key_set(path: Path, spec: ModelSpec) -> None:
    """A model to be run whose engine reads its key from the environment (`api_key_env`) needs the
    variable set: checked at load, the line naming the variable (never a value)."""
    import inspect

    parameter = inspect.signature(_engine_class(spec.engine).__init__).parameters.get("api_key_env")
    if parameter is None:
        return
    name = spec.params.get("api_key_env", parameter.default)
    if name and not os.environ.get(name):
        given = "" if "api_key_env" in spec.params else " (the default)"
        raise ConfigError(f"{path}: models.{spec.name}.api_key_env: environment variable {name}{given} is not set, "
                          f"and model {spec.name} is to be run; expected it set to the key, or api_key_env: null "
                          "for a server that needs no key")


_VLLM_ARGS: set[str] | None = None


def _vllm_engine_args() -> set[str]:
    """The field names of vLLM's EngineArgs, read from its source (importing vLLM takes seconds);
    empty when vLLM is not installed."""
    global _VLLM_ARGS
    if _VLLM_ARGS is None:
        import ast
        import importlib.util

        _VLLM_ARGS = set()
        spec = importlib.util.find_spec("vllm")
        source = Path(spec.origin).parent / "engine" / "arg_utils.py" if spec and spec.origin else None
        if source is not None and source.is_file():
            for node in ast.parse(source.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
                    _VLLM_ARGS = {s.target.id for s in node.body
                                  if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return _VLLM_ARGS


@dataclass(frozen=True)
class ReliabilitySpec:
    sample_per_task: int = 5     # judged items per task that are judged again
    repeats: int = 3             # k: how many times each is judged again (0: no repeats)
    temperature: float = 0.7     # > 0, so the repeats can disagree
    seed: int = 0                # the sample and the repeats' sampling seeds


@dataclass(frozen=True)
class JudgeSpec:
    """`judges.<benchmark>` in models.yaml: who judges the benchmark's open answers, with which prompts."""

    benchmark: str
    model: str                   # an entry of `models:` (any engine but a baseline)
    prompts: str = "wenheng"     # "wenheng": the card's judge.yaml; "official": `official` below
    official: Path | None = None  # WenMind's Task_Score_Prompt.json: the verified download or the user's copy
    max_tokens: int = 512
    retries: int = 2             # extra attempts for an unreadable verdict, each with a reminder
    structured_output: bool = True   # JSON schema / choice where the engine supports it
    reliability: ReliabilitySpec = field(default_factory=ReliabilitySpec)


JUDGE_KEYS = {"model", "prompts", "max_tokens", "retries", "structured_output", "reliability"}
OFFICIAL_KEYS = {"official", "sha256"}
RELIABILITY_KEYS = {"sample_per_task", "repeats", "temperature", "seed"}
PROMPTS_EXPECTED = ("wenheng, official, or {official: <path or url of Task_Score_Prompt.json>, "
                    "sha256: <64 hex digits; needed for a url>}")


def load_judges(path: Path, models: dict[str, ModelSpec] | None = None) -> dict[str, JudgeSpec]:
    """`judges:` of the models file: benchmark -> JudgeSpec; benchmarks not named are not judged.
    Judge calls run at temperature 0 whatever the judge model's own sampling says. `models`: the
    file's models when the caller has loaded them already. `prompts: official` downloads WenMind's
    official prompt file on the first load (then reads the verified copy in the cache)."""
    if models is None:
        return _models_and_judges(path)[1]
    return _judges(path, _load_yaml(path), models)


def is_demo_judge(model: ModelSpec) -> bool:
    """The bundled demo model (`bundled:gemma3-270m`): it judges only so that the demo runs end to end."""
    return model.engine == "vllm" and str(model.params.get("model", "")).startswith("bundled:")


def judge_warnings(path: Path, judges: dict[str, JudgeSpec], models: dict[str, ModelSpec]) -> list[str]:
    """One line per strong judge (any model but the bundled demo one) asked with wenheng's own
    prompts on a benchmark whose paper judged with official prompts wenheng can use (WenMind):
    its numbers will not be comparable to the paper's. Fùxì's card prompt is its paper's own, so
    it gets none; nor does the demo judge, whose rows are marked not comparable anyway."""
    from pipeline.judge.prompts import WENHENG, load_card_prompts

    lines = []
    for bench, spec in judges.items():
        card = benchmarks.card(bench)
        if spec.prompts != WENHENG or is_demo_judge(models[spec.model]) or card.judge_file is None:
            continue
        if load_card_prompts(card.judge_file).supports_official:
            lines.append(f"warning: {path}: judges.{bench}: judge {spec.model!r} asks with wenheng's own prompts "
                         f"(prompts: wenheng), so its {card.title} scores will not be comparable to the "
                         f"{card.title} paper's; set `prompts: official` to judge with {card.title}'s official prompts")
    return lines


def _judges(path: Path, data: dict[str, Any], models: dict[str, ModelSpec]) -> dict[str, JudgeSpec]:
    entries = data.get("judges") or {}
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: judges: expected a mapping benchmark -> {{model, prompts}} (got {entries!r})")
    problems = _Problems()
    judges: dict[str, JudgeSpec] = {}
    for bench, entry in entries.items():
        spec = problems.check(_judge, path, bench, entry, models)
        if spec is not None:
            judges[bench] = spec
    problems.raise_any()
    return judges


def _judge(path: Path, bench: Any, entry: Any, models: dict[str, ModelSpec]) -> JudgeSpec:
    """One `judges:` entry; every problem of it, one line each naming the key, the value and
    what is expected."""
    from pipeline.judge.prompts import PromptError, load_card_prompts

    where = f"{path}: judges.{bench}"
    if bench not in benchmarks.names():
        raise ConfigError(f"{where}: unknown benchmark; expected one of {', '.join(benchmarks.names())}")
    judge_file = benchmarks.card(bench).judge_file
    if judge_file is None:
        raise ConfigError(f"{where}: the {bench} card has no judge prompts (judge.yaml)")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping {{model: <a model>, prompts: wenheng | official}} "
                          f"(got {entry!r})")
    problems = _Problems()
    for key in sorted(set(entry) - JUDGE_KEYS, key=str):
        problems.add(f"{where}.{key}: unknown key (got {entry[key]!r}); expected some of {sorted(JUDGE_KEYS)}")
    model = entry.get("model")
    if not isinstance(model, str) or model not in models:
        problems.add(f"{where}.model: {model!r} is not an entry of models: ({', '.join(models)})")
    elif models[model].engine == "baseline":
        problems.add(f"{where}.model: {model!r} is a baseline; a judge must be a real model (vllm or openai)")
    try:
        card_prompts = load_card_prompts(judge_file)
    except PromptError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    prompts, official = problems.check(_judge_prompts, path, where, bench, entry.get("prompts", "wenheng"),
                                       card_prompts.supports_official) or ("wenheng", None)
    max_tokens = problems.check(_positive_int, entry.get("max_tokens", 512), f"{where}.max_tokens", 1)
    retries = problems.check(_positive_int, entry.get("retries", 2), f"{where}.retries", 0)
    structured = problems.check(_flag, entry.get("structured_output", True), f"{where}.structured_output")
    reliability = problems.check(_reliability, entry.get("reliability") or {}, f"{where}.reliability")
    problems.raise_any()
    return JudgeSpec(bench, model, prompts, official, max_tokens=max_tokens, retries=retries,
                     structured_output=structured, reliability=reliability)


def _judge_prompts(path: Path, where: str, bench: str, prompts: Any, supports_official: bool
                   ) -> tuple[str, Path | None]:
    """`prompts:` -> ("wenheng", None) or ("official", the verified official file): `official`
    (WenMind's file at the pinned commit), `{official: <path>}` (the user's copy, relative to
    the models file; `sha256` checks it when given) or `{official: <url>, sha256: <hex>}`."""
    from pipeline.judge import prompts as judge_prompts

    where = f"{where}.prompts"
    if prompts == judge_prompts.WENHENG:
        return prompts, None
    if prompts == judge_prompts.OFFICIAL:
        location, sha256 = judge_prompts.OFFICIAL_URL, judge_prompts.OFFICIAL_SHA256
        pinned = f"wenheng's pin of {judge_prompts.OFFICIAL_REPO}@{judge_prompts.OFFICIAL_COMMIT[:7]}"
    elif isinstance(prompts, dict) and "official" in prompts:
        unknown = sorted(set(prompts) - OFFICIAL_KEYS, key=str)
        if unknown:
            raise ConfigError("\n".join(f"{where}.{key}: unknown key (got {prompts[key]!r}); expected some of "
                                         f"{sorted(OFFICIAL_KEYS)}" for key in unknown))
        location, sha256 = prompts["official"], prompts.get("sha256", "")
        if not isinstance(location, str) or not location.strip():
            raise ConfigError(f"{where}.official: expected a path or url of Task_Score_Prompt.json (got {location!r})")
        if not isinstance(sha256, str) or (sha256 and not SHA256.match(sha256.lower())):
            raise ConfigError(f"{where}.sha256: expected the file's sha256, 64 hex digits (got {sha256!r})")
        sha256, pinned = sha256.lower(), "sha256 in the models file"
    else:
        raise ConfigError(f"{where}: expected {PROMPTS_EXPECTED} (got {prompts!r})")
    if not supports_official:
        raise ConfigError(f"{where}: the {bench} card has no routing for official prompts (got {prompts!r}); "
                          "expected wenheng")
    if location.startswith(("http://", "https://", "file://")):
        official = _fetch_official(where, location, sha256, pinned)
    else:
        official = (path.parent / location).resolve()
        if not official.is_file():
            raise ConfigError(f"{where}.official: {official} not found (got {location!r}); expected a copy of "
                              "Task_Score_Prompt.json, or `prompts: official` to download WenMind's")
        if sha256:
            _check_sha256(where, official, sha256, pinned)
    try:
        judge_prompts.load_official(official)
    except judge_prompts.PromptError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return judge_prompts.OFFICIAL, official


def _fetch_official(where: str, url: str, sha256: str, pinned: str) -> Path:
    """The official prompt file through the sources' download machinery: fetched once into
    `<cache>/downloads/<sha256>/`, verified, then read from there with no request."""
    from pipeline.sources.fetch import ChecksumMismatch, FetchError, file_name, materialize

    if not sha256:
        raise ConfigError(f"{where}.sha256: a url ({url}) needs the file's sha256 (64 hex digits), so a changed "
                          "download is never used by mistake")
    if is_archive(file_name(url)):
        raise ConfigError(f"{where}.official: expected the JSON file itself, not an archive (got {url!r})")
    spec = SourceSpec(benchmark="official judge prompts", path=local_path(url, sha256, "", cache_dir() / "downloads"),
                      version=sha256[:12], url=url, sha256=sha256)
    try:
        return materialize(spec)
    except ChecksumMismatch as exc:
        raise ConfigError(f"{where}: {exc.url} has sha256 {exc.actual}, expected {exc.expected} ({pinned}); "
                          "the download was discarded") from None
    except FetchError as exc:
        raise ConfigError(f"{where}: {exc}; without a network, download the file yourself and set "
                          "`prompts: {official: path/to/Task_Score_Prompt.json}`") from None


def _check_sha256(where: str, path: Path, expected: str, pinned: str) -> None:
    import hashlib

    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        raise ConfigError(f"{where}: {path} has sha256 {actual}, expected {expected} ({pinned})")


def _positive_int(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected an integer >= {minimum} (got {value!r})")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false (got {value!r})")
    return value


def _reliability(entry: Any, where: str) -> ReliabilitySpec:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping with some of {sorted(RELIABILITY_KEYS)} (got {entry!r})")
    problems = _Problems()
    for key in sorted(set(entry) - RELIABILITY_KEYS, key=str):
        problems.add(f"{where}.{key}: unknown key (got {entry[key]!r}); expected some of {sorted(RELIABILITY_KEYS)}")
    temperature = entry.get("temperature", 0.7)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature <= 2:
        problems.add(f"{where}.temperature: repeats need a temperature in (0, 2] (got {temperature!r})")
    counts = {key: problems.check(_positive_int, entry.get(key, default), f"{where}.{key}", 0)
              for key, default in (("sample_per_task", 5), ("repeats", 3), ("seed", 0))}
    problems.raise_any()
    return ReliabilitySpec(temperature=float(temperature), **counts)
