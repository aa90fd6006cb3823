"""`models:` of data/models.yaml: each model's engine, its parameters, sampling, variants and settings.

    models:
      qwen: {engine: openai, model: served-qwen, base_url: http://127.0.0.1:8000/v1, revision: 2026-05-01}
      oracle: {engine: baseline, strategy: oracle, sampling: {temperature: 0}, variants: [original]}

The keys every model has are `ModelEntry`'s; an engine's parameters are its constructor's, read
from its signature (names, declared types and defaults) with `PARAM_RULES` for the values a type
does not pin down, so each is written once, in the engine. vLLM's own arguments (the
constructor's **kwargs, passed to vllm.LLM) are checked against vLLM's EngineArgs when it is
installed. `ModelSpec` is what the rest of wenheng reads."""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import os
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from pipeline.config.entries import BenchmarkName, Entry, a_mapping, expect, not_blank, null_is, typed
from pipeline.config.problems import ConfigError, Problems, problem, problems_at, where
from pipeline.engines import ENGINE_CLASSES, engine_class
from pipeline.script import VARIANT_CONFIGS

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENGINES = tuple(ENGINE_CLASSES)   # pipeline/engines: the one table of engines
# vLLM's parallelism, checked here so a bad size is a config line (the engine decides which of
# them are part of its cache identity: pipeline/engines/vllm_engine.py).
VLLM_PARALLEL_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _revision_text(value: Any) -> Any:
    """An OpenAI-compatible model's `revision`: a label the user changes when the weights behind
    the endpoint change (a date, a commit), stored as text; YAML reads an unquoted 2026-05-01 as a date."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value.strip() if isinstance(value, str) else value


# What an engine parameter's declared type does not say: the values it may take (`typed`'s
# bounds and words). One rule per parameter name, for every engine that has the parameter.
PARAM_RULES: dict[str, dict[str, Any]] = {
    "model": {"says": "that is not empty", "checks": (AfterValidator(not_blank),)},
    "base_url": {"pattern": r"^https?://", "says": "starting with http:// or https://"},
    "api_key_env": {"pattern": ENV_NAME, "says": "naming an environment variable, e.g. OPENAI_API_KEY"},
    "concurrency": {"ge": 1},
    "timeout_s": {"gt": 0, "le": 86_400, "says": "(a day)"},
    "max_retries": {"ge": 0, "le": 20},
    "max_model_len": {"ge": 1},
    "revision": {"words": "a label for the served weights, e.g. a date or a commit",
                 "checks": (BeforeValidator(_revision_text), AfterValidator(not_blank))},
}

MODEL_NAME_TYPE = TypeAdapter(Annotated[str, Strict(), Field(pattern=MODEL_NAME.pattern), expect(
    "a name of letters, digits, '.', '_' and '-' (quote a name that YAML reads as a number, a boolean or null)")])


class Sampling(Entry):
    """A model's sampling defaults."""

    temperature: typed(float, ge=0, le=2) = 0.0
    max_tokens: typed(int | None, ge=1) = None     # a cap on each answer's tokens


class ModelEntry(Entry):
    """The keys of every model; an engine's parameters are added by `engine_entry`. Used alone
    (other keys ignored) only to word the problems of a model whose engine is not known."""

    model_config = ConfigDict(extra="ignore")
    SHAPE: ClassVar[str] = f"a mapping {{engine: {'|'.join(ENGINES)}, ...}}"
    engine: Literal[ENGINES]
    sampling: Sampling = Sampling()
    variants: Annotated[list[Literal[tuple(VARIANT_CONFIGS)]],
                        expect(f"a list, some of {', '.join(VARIANT_CONFIGS)}")] = ["original"]
    settings: Annotated[dict[BenchmarkName, Annotated[list[str], expect("a list of settings")]],
                        a_mapping("a mapping benchmark -> [settings]")] = {}

    @field_validator("sampling", "variants", "settings", mode="before")
    @classmethod
    def _empty_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        return cls.default(info.field_name) if value is None or value == [] or value == {} else value

    @field_validator("settings")
    @classmethod
    def _settings_in_protocol(cls, settings: dict[str, list[str]]) -> dict[str, list[str]]:
        from pipeline.benchmarks import card

        found = []
        for bench, chosen in settings.items():
            known = list(card(bench).protocol.settings)
            unknown = [s for s in chosen if s not in known]
            if unknown:
                found.append(((bench,), f"unknown settings {unknown}; the {bench} protocol has {', '.join(known)}"))
        if found:
            raise problems_at(found)
        return settings


class _EngineEntry(ModelEntry):
    model_config = ConfigDict(extra="forbid")


def local_model_problem(model: Any) -> str | None:
    """What is wrong with a vLLM `model` written as a local path (it starts with /, . or ~): it
    must be a model folder with config.json, or a .gguf file. None for a hub name (`org/name`),
    `bundled:…`, or a path that holds a model. Checked with the configuration, so a missing model
    is one line before any stage, not vLLM's HFValidationError when the model loads; not under
    the k8s executor, whose steps run where their own volumes hold the model."""
    from pipeline.settings import settings

    if not isinstance(model, str) or not model.startswith(("/", ".", "~")) or settings().executor == "k8s":
        return None
    if "\0" in model:
        return f"{model!r} contains a NUL character; expected a model folder with config.json"
    path = Path(model).expanduser()
    if not path.exists():
        return (f"{model} does not exist; expected a model folder with config.json, a .gguf file "
                "or a hub name such as org/name")
    if path.is_dir() and not (path / "config.json").is_file():
        return f"{model} holds no config.json; expected a Hugging Face model folder"
    if path.is_file() and path.suffix.lower() != ".gguf":
        return f"{model} is a file; expected a model folder with config.json or a .gguf file"
    return None


class _VllmEntry(ModelEntry):
    """vLLM's own arguments pass to vllm.LLM: known when vLLM is installed, any key otherwise."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _local_model_exists(self) -> _VllmEntry:
        found = local_model_problem(getattr(self, "model", None))
        if found:
            raise problem(found, at=("model",))
        return self

    @classmethod
    def known_keys(cls) -> set[str] | None:
        return set(cls.model_fields) | vllm_engine_args() if vllm_engine_args() else None

    @classmethod
    def expected_keys(cls) -> str:
        return f"{sorted(cls.model_fields)} or a vllm.LLM argument"


@functools.cache
def engine_entry(engine: str) -> type[ModelEntry]:
    """A model of `engine`: ModelEntry's keys and the engine constructor's parameters, each with
    its declared type, default and PARAM_RULES (vLLM: its parallel sizes too)."""
    cls = engine_class(engine)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except (NameError, TypeError):   # an annotation that cannot be resolved: the constructor still checks
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.kind is not parameter.VAR_KEYWORD:
            hint = hints.get(parameter.name)
            kind = Any if hint is None else typed(hint, **PARAM_RULES.get(parameter.name, {}))
            fields[parameter.name] = (kind, ... if parameter.default is parameter.empty else parameter.default)
    if engine == "vllm":
        fields |= {key: (typed(int, ge=1), None) for key in VLLM_PARALLEL_KEYS}
    base = _VllmEntry if engine == "vllm" else _EngineEntry
    return create_model(f"{engine.title()}ModelEntry", __base__=base, __module__=__name__, **fields)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    engine: str
    params: dict[str, Any] = field(default_factory=dict)   # engine parameters (part of the cache key)
    sampling: dict[str, Any] = field(default_factory=dict)  # as given: temperature, max_tokens cap
    variants: tuple[str, ...] = tuple(ModelEntry.default("variants"))
    settings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # benchmark -> settings to run


class ModelsFile(Entry):
    """The top level of the models file (its entries are read one by one: `read_models`, judges.py)."""

    models: Annotated[dict[Any, Any], null_is({}), Field(min_length=1),
                      expect("a mapping name -> {engine, ...} with at least one model")
                      ] = Field({}, validate_default=True)
    judges: Annotated[dict[Any, Any], null_is({}), expect("a mapping benchmark -> {model, prompts, ...}")] = {}


def read_models(path: Path, data: dict[str, Any], problems: Problems) -> dict[str, ModelSpec]:
    """The valid entries of `models:`; each problem recorded in `problems`."""
    entries = data.get("models")
    models: dict[str, ModelSpec] = {}
    for name, entry in entries.items() if isinstance(entries, dict) else ():
        spec = _model(path, name, entry, problems)
        if spec is not None:
            models[name] = spec
    return models


def _model(path: Path, name: Any, entry: Any, problems: Problems) -> ModelSpec | None:
    loc = ("models", name)
    if problems.validate(MODEL_NAME_TYPE, name, path, loc) is None:
        return None
    engine = entry.get("engine") if isinstance(entry, dict) else None
    kind = engine_entry(engine) if isinstance(engine, str) and engine in ENGINES else ModelEntry
    parsed = problems.validate(kind, entry, path, loc)
    if parsed is None:
        return None
    params = parsed.model_dump(exclude_unset=True, exclude=set(ModelEntry.model_fields))
    if "api_key_env" in kind.model_fields:
        from pipeline.redact import watch_env

        watch_env(params.get("api_key_env", kind.default("api_key_env")))  # its value never reaches an error text
    try:
        built = engine_class(engine)(**params)   # the constructor's own checks; it only stores settings
    except (TypeError, ValueError) as exc:
        problems.add(f"{where(path, loc)}: {str(exc).splitlines()[0]}")
        return None
    refused = _loglikelihood_refused(built, parsed.settings)
    if refused:
        problems.add(f"{where(path, (*loc, 'settings'))}: {refused}")
        return None
    return ModelSpec(name, engine, params, parsed.sampling.model_dump(exclude_unset=True), tuple(parsed.variants),
                     {bench: tuple(chosen) for bench, chosen in parsed.settings.items()})


def _loglikelihood_refused(engine: Any, settings: dict[str, list[str]]) -> str | None:
    """Why `engine` cannot be asked the log-likelihood settings chosen for it (an engine's
    `loglikelihood_refusal()`: a chat-only endpoint returns no log-probabilities of a prompt), or
    None. Read before any stage, so the run never starts."""
    from pipeline.benchmarks import card

    chosen = sorted({f"{bench}.{name}" for bench, names in settings.items() for name in names
                     if card(bench).protocol.settings[name].loglikelihood})
    refusal = getattr(engine, "loglikelihood_refusal", None)
    why = refusal() if chosen and refusal is not None else None
    return f"{', '.join(chosen)} score options by log-likelihood, but {why}" if why else None


def api_key_set(path: Path, spec: ModelSpec) -> None:
    """A model to be run whose engine reads its key from the environment (`api_key_env`) needs the
    variable set: checked at load, the line naming the variable (never a value)."""
    declared = engine_entry(spec.engine).model_fields.get("api_key_env")
    if declared is None:
        return
    name = spec.params.get("api_key_env", declared.default)
    if name and not os.environ.get(name):
        given = "" if "api_key_env" in spec.params else " (the default)"
        raise ConfigError(f"{path}: models.{spec.name}.api_key_env: environment variable {name}{given} is not set, "
                          f"and model {spec.name} is to be run; expected it set to the key, or api_key_env: null "
                          "for a server that needs no key")


def is_demo_judge(model: ModelSpec) -> bool:
    """The bundled demo model (`bundled:gemma3-270m`): it judges only so that the demo runs end to end."""
    return model.engine == "vllm" and str(model.params.get("model", "")).startswith("bundled:")





@functools.cache
def vllm_engine_args() -> frozenset[str]:
    """The field names of vLLM's EngineArgs, read from its source (importing vLLM takes seconds);
    empty when vLLM is not installed."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    source = Path(spec.origin).parent / "engine" / "arg_utils.py" if spec and spec.origin else None
    if source is None or not source.is_file():
        return frozenset()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
            return frozenset(s.target.id for s in node.body
                             if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))
    return frozenset()
