"""The typed entries of the configuration files: pydantic models, each key allowed and each default
written once, in its model. Values are checked strictly, as YAML gives them: a boolean is not a
number, a number not a string, `1` not `true`, and a float is finite.

`typed(...)` is a value type with its constraints and the words a problem line uses for it
(`expected an integer >= 1 (got 0)`); `Entry` is a mapping that refuses unknown keys (one line
each naming the keys it has, or one line for them all) and a value that is not a mapping."""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Collection
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    TypeAdapter,
    ValidationError,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from pipeline import benchmarks
from pipeline.config.problems import EXPECTED, PROBLEM, as_details, problem

TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping",
              list: "a list"}


def expect(words: str, lead: str = "expected") -> WrapValidator:
    """The value's problem, whatever pydantic found, as `<lead> <words> (got <value>)`."""
    def validate(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError(EXPECTED, f"{lead} {words}") from None
    return WrapValidator(validate)


def _arms(hint: Any) -> tuple:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _bounds(ge: float | None, gt: float | None, le: float | None) -> str:
    low = f">= {ge}" if ge is not None else f"> {gt}" if gt is not None else ""
    if ge is not None and le is not None:
        return f"from {ge} to {le}"
    return " and ".join(part for part in (low, f"<= {le}" if le is not None else "") if part)


def typed(hint: Any, *, ge: float | None = None, gt: float | None = None, le: float | None = None,
          pattern: str | None = None, says: str = "", words: str = "", lead: str = "expected",
          checks: tuple = ()) -> Any:
    """`hint` with its bounds (`ge`, `gt`, `le`) and `pattern`, worded from them for a problem
    line: `typed(float, gt=0, le=86_400, says="(a day)")` is `expected a number > 0 and <= 86400
    (a day)`. `says` adds what the bounds do not say (what a pattern means), `words` replaces the
    type's words; `checks` are validators of the value (before or after its type's own check),
    their problems worded the same."""
    arms = [arm for arm in _arms(hint) if arm is not type(None)]
    nullable = len(arms) < len(_arms(hint))
    named = " or ".join(TYPE_WORDS.get(typing.get_origin(a) or a, getattr(a, "__name__", str(a))) for a in arms)
    text = " ".join(part for part in (words or named, _bounds(ge, gt, le), says) if part)
    constraints = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("pattern", pattern)) if v is not None}
    inner = [Annotated[arm, Field(**constraints)] if constraints else arm for arm in arms]
    if nullable:   # "an integer or null", "an integer >= 1, or null"
        text, inner = f"{text}{',' if text != named else ''} or null", [*inner, type(None)]
    return Annotated[functools.reduce(operator.or_, inner), *checks, expect(text, lead)]


def not_blank(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise ValueError("blank")
    return value


def null_is(default: Any) -> BeforeValidator:
    """`key: null` (or left empty) means the default."""
    return BeforeValidator(lambda value: default if value is None else value)


def a_mapping(words: str) -> BeforeValidator:
    """A value that must be a mapping, its keys and values checked on their own."""
    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise PydanticCustomError(EXPECTED, f"expected {words}")
        return value
    return BeforeValidator(check)


Flag = typed(bool)
Text = typed(str)


class Entry(BaseModel):
    """A mapping of a configuration file. Subclasses say what a value that is not a mapping should
    be (`SHAPE`; default: a mapping with some of its keys) and whether unknown keys are refused one
    line for all (`UNKNOWN_KEYS_TOGETHER`) or one line each, the value shown."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)
    SHAPE: ClassVar[str] = ""
    UNKNOWN_KEYS_TOGETHER: ClassVar[bool] = False

    @classmethod
    def known_keys(cls) -> Collection[Any] | None:
        """The keys it may have; None: any (a mapping whose extra keys are checked elsewhere)."""
        return cls.model_fields if cls.model_config.get("extra") == "forbid" else None

    @classmethod
    def expected_keys(cls) -> str:
        return str(sorted(cls.model_fields))

    @classmethod
    def default(cls, name: str) -> Any:
        return cls.model_fields[name].get_default(call_default_factory=True)

    @model_validator(mode="wrap")
    @classmethod
    def _a_mapping_of_known_keys(cls, data: Any, handler: ModelWrapValidatorHandler) -> Any:
        if isinstance(data, cls):
            return handler(data)
        if not isinstance(data, dict):
            shape = cls.SHAPE or f"a mapping with some of {cls.expected_keys()}"
            raise PydanticCustomError(EXPECTED, f"expected {shape}")
        known = cls.known_keys()
        unknown = [] if known is None else [key for key in data if key not in known]
        if not unknown:
            return handler(data)
        details = cls._unknown_keys(data, unknown)
        try:
            handler({key: value for key, value in data.items() if key not in unknown})
        except ValidationError as exc:
            details += [as_details(error) for error in exc.errors(include_url=False)]
        raise ValidationError.from_exception_data(cls.__name__, details)

    @classmethod
    def _unknown_keys(cls, data: dict, unknown: list) -> list[InitErrorDetails]:
        expected = f"expected some of {cls.expected_keys()}"
        if cls.UNKNOWN_KEYS_TOGETHER:
            text = f"unknown keys {sorted(unknown, key=str)}; {expected}"
            return [InitErrorDetails(type=PydanticCustomError(PROBLEM, text), loc=(), input=data)]
        return [InitErrorDetails(type=PydanticCustomError(PROBLEM, f"unknown key (got {data[key]!r}); {expected}"),
                                 loc=(key,), input=data[key]) for key in sorted(unknown, key=str)]


def _known_benchmark(name: Any) -> Any:
    if name not in benchmarks.names():
        raise problem(f"unknown benchmark; expected one of {', '.join(benchmarks.names())}")
    return name


BenchmarkName = Annotated[Any, AfterValidator(_known_benchmark)]
BENCHMARK = TypeAdapter(BenchmarkName)
