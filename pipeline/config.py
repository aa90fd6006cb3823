"""Reading and validating data/sources.yaml and data/models.yaml, with errors that say what to fix."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.schema import BENCHMARKS, VARIANTS

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


@dataclass(frozen=True)
class SourceSpec:
    benchmark: str
    path: Path            # a file or a directory, resolved against the sources file
    version: str
    license: str = ""


def load_sources(path: Path) -> dict[str, SourceSpec]:
    data = _load_yaml(path)
    specs: dict[str, SourceSpec] = {}
    for name, entry in (data.get("benchmarks") or {}).items():
        if name not in BENCHMARKS:
            raise ConfigError(f"{path}: unknown benchmark {name!r}; expected one of {', '.join(BENCHMARKS)}")
        if not isinstance(entry, dict) or "path" not in entry:
            raise ConfigError(f"{path}: benchmarks.{name} needs a 'path'")
        source_path = (path.parent / str(entry["path"])).resolve()
        specs[name] = SourceSpec(
            benchmark=name,
            path=source_path,
            version=str(entry.get("version", "unversioned")),
            license=str(entry.get("license", "")),
        )
    if not specs:
        raise ConfigError(f"{path}: no benchmarks configured under 'benchmarks:'")
    return specs


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
        bad = [v for v in variants if v not in VARIANTS]
        if bad:
            raise ConfigError(f"{where}: unknown variants {bad}; expected some of {', '.join(VARIANTS)}")
        settings = {b: tuple(s) for b, s in (entry.pop("settings", None) or {}).items()}
        models[str(name)] = ModelSpec(str(name), engine, entry, sampling, variants, settings)
    return models
