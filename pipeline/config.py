"""Reading and validating data/sources.yaml and data/models.yaml, with errors that say what to fix."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline import benchmarks
from pipeline.dedup.policy import POLICIES as DUPLICATE_POLICIES
from pipeline.paths import cache_dir
from pipeline.script import VARIANT_CONFIGS
from pipeline.sources.fetch import local_path

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENGINES = ("vllm", "openai", "baseline")


class ConfigError(ValueError):
    """A configuration file is wrong; the message names the file and the field."""


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


SHA256 = re.compile(r"^[0-9a-f]{64}$")
SOURCE_KEYS = {"path", "url", "sha256", "subpath", "version", "license", "splits", "evaluate"}


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

    def includes_split(self, split: str) -> bool:
        return not self.splits or split in self.splits


def load_sources(path: Path) -> dict[str, SourceSpec]:
    """Each benchmark's source: a local `path` (relative to the sources file) or a `url` with its
    `sha256`. Nothing is downloaded here; `pipeline.sources.fetch.materialize` does that on first
    use, into `cache_dir()/downloads`, so reading the configuration never touches the network."""
    data = _load_yaml(path)
    specs: dict[str, SourceSpec] = {}
    for name, entry in (data.get("benchmarks") or {}).items():
        where = f"{path}: benchmarks.{name}"
        if name not in benchmarks.names():
            raise ConfigError(f"{path}: unknown benchmark {name!r}; expected one of {', '.join(benchmarks.names())}")
        if not isinstance(entry, dict) or ("path" in entry) == ("url" in entry):
            raise ConfigError(f"{where} needs either a 'path' or a 'url' (with 'sha256'), not both")
        unknown = sorted(set(entry) - SOURCE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {sorted(SOURCE_KEYS)}")
        splits = entry.get("splits") or ()
        if not isinstance(splits, (list, tuple)) or not all(isinstance(s, str) for s in splits):
            raise ConfigError(f"{where}: 'splits' must be a list of split names")
        evaluate = entry.get("evaluate") or ()
        if not isinstance(evaluate, (list, tuple)) or not all(isinstance(s, str) for s in evaluate):
            raise ConfigError(f"{where}: 'evaluate' must be a list of split names, e.g. [dev, test]")
        url, sha256, subpath = str(entry.get("url", "")), str(entry.get("sha256", "")).lower(), ""
        if "path" in entry:
            source_path = (path.parent / str(entry["path"])).resolve()
        else:
            if not url.startswith(("http://", "https://", "file://")):
                raise ConfigError(f"{where}: url must start with http://, https:// or file://")
            if not SHA256.match(sha256):
                raise ConfigError(f"{where}: a url source needs 'sha256' (64 hex digits) of the file, "
                                  f"so a changed download is never used by mistake")
            subpath = str(entry.get("subpath", "")).strip("/")
            if ".." in Path(subpath).parts:
                raise ConfigError(f"{where}: subpath must stay inside the download")
            source_path = local_path(url, sha256, subpath, cache_dir() / "downloads")
        specs[name] = SourceSpec(
            benchmark=name,
            path=source_path,
            version=str(entry.get("version", "unversioned")),
            license=str(entry.get("license", "")),
            url=url,
            sha256=sha256,
            subpath=subpath,
            splits=tuple(splits),
            evaluate=tuple(evaluate),
        )
    if not specs:
        raise ConfigError(f"{path}: no benchmarks configured under 'benchmarks:'")
    return specs


def load_duplicate_policy(path: Path) -> str:
    """`duplicates:` in the sources file: `flag` (default; duplicates are only recorded) or `drop`
    (within a benchmark, non-representative duplicates sharing the gold are not evaluated)."""
    policy = str(_load_yaml(path).get("duplicates", "flag"))
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


def load_models(path: Path) -> dict[str, ModelSpec]:
    data = _load_yaml(path)
    entries = data.get("models") or {}
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"{path}: no models configured under 'models:'")
    models: dict[str, ModelSpec] = {}
    for name, entry in entries.items():
        where = f"{path}: models.{name}"
        if not MODEL_NAME.match(str(name)):
            raise ConfigError(f"{where}: a model name may use letters, digits, '.', '_' and '-' only")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping")
        entry = dict(entry)
        engine = entry.pop("engine", None)
        if engine not in ENGINES:
            raise ConfigError(f"{where}: engine must be one of {', '.join(ENGINES)} (got {engine!r})")
        sampling = dict(entry.pop("sampling", None) or {})
        variants = tuple(entry.pop("variants", None) or ("original",))
        bad = [v for v in variants if v not in VARIANT_CONFIGS]
        if bad:
            raise ConfigError(f"{where}: unknown variants {bad}; expected some of {', '.join(VARIANT_CONFIGS)}")
        settings = {b: tuple(s) for b, s in (entry.pop("settings", None) or {}).items()}
        models[str(name)] = ModelSpec(str(name), engine, entry, sampling, variants, settings)
    return models
