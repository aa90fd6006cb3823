"""Problems of a configuration file, one line each naming the file, the key path, the value and
what is expected; every problem of a file collected so that one run reports them all.

The typed entries (entries.py) are pydantic models: their ValidationError entries are turned into
these lines here (`problem_line`), never shown in pydantic's own multi-line form. A validator that
finds a problem pydantic has no word for raises `problem(...)`, the line's text after the key."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from pipeline.errors import ConfigError

Loc = tuple[Any, ...]

# The error types of entries.py and of the validators (pydantic's own types keep their names):
EXPECTED = "expected"      # "<lead> <what is expected>": the line adds the value, (got ...)
PROBLEM = "problem"        # the whole text after the key path (it shows the value where it helps)
NAMES_KEY = "names_key"    # a text that begins with the key itself: the line names the mapping above it


def problem(text: str, at: Loc = ()) -> Exception:
    """The exception a validator raises for one problem: `text` follows the key path of the value
    validated, or of the key `at` below it (a mapping's key, for a check of the whole mapping)."""
    error = PydanticCustomError(PROBLEM, text)
    if not at:
        return error
    return ValidationError.from_exception_data(PROBLEM, [InitErrorDetails(type=error, loc=at, input=None)])


def problems_at(found: Sequence[tuple[Loc, str]]) -> ValidationError:
    """Several problems of one value at once, each (key path below it, text)."""
    return ValidationError.from_exception_data(
        PROBLEM, [InitErrorDetails(type=PydanticCustomError(PROBLEM, text), loc=at, input=None) for at, text in found])


def as_details(error: dict[str, Any]) -> InitErrorDetails:
    """A ValidationError entry as it can be raised again (beside others), its words kept."""
    context = error.get("ctx") if error["type"] == "literal_error" else None
    return InitErrorDetails(type=PydanticCustomError(error["type"], error["msg"], context),
                            loc=error["loc"], input=error.get("input"))


# what str.splitlines breaks a line at: a key or a value holding one is shown escaped, so a
# problem stays one line
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """`text` with its line breaks escaped (`\\r`, `\\u2028`)."""
    return _LINE_BREAKS.sub(lambda m: repr(m.group())[1:-1], text)


def where(path: Path | str, loc: Loc) -> str:
    """`<file>: <key.path>`, or the file alone for the top level."""
    keys = ".".join(str(key) for key in loc)
    return one_line(f"{path}: {keys}" if keys else str(path))


def problem_line(path: Path | str, loc: Loc, error: dict[str, Any]) -> str:
    """One ValidationError entry as one line: file, key path, what is wrong, the value."""
    loc = tuple(key for key in (*loc, *error["loc"]) if key != "[key]")   # a mapping's key: named by the path
    kind, text, value = error["type"], error["msg"], error.get("input")
    if kind == "literal_error" and loc:
        expected = error.get("ctx", {}).get("expected", "")
        choices = ", ".join(re.findall(r"'([^']*)'", expected)) or expected
        return f"{where(path, loc[:-1])}: {loc[-1]} must be one of {choices} (got {value!r})"
    if kind == NAMES_KEY and loc:
        return f"{where(path, loc[:-1])}: {text}"
    if kind == "missing":
        return f"{where(path, loc)}: missing; this key is required"
    if kind == PROBLEM:
        return f"{where(path, loc)}: {text}"
    return f"{where(path, loc)}: {text} (got {value!r})"   # EXPECTED, and pydantic's own one-line words


class Problems:
    """Every problem of one or more files, collected so that one run reports them all (one line each)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        self.lines.append(one_line(line))

    def check(self, step: Callable[..., Any], *args: Any) -> Any:
        """`step(*args)`, or None with its ConfigError recorded."""
        try:
            return step(*args)
        except ConfigError as exc:
            self.lines.extend(str(exc).splitlines())
            return None

    def validate(self, kind: type[BaseModel] | TypeAdapter, data: Any, path: Path, loc: Loc = (),
                 context: dict[str, Any] | None = None) -> Any:
        """`data` (found at `loc` of the file `path`) as the typed entry `kind`, or None with a line
        recorded for each of its problems."""
        try:
            if isinstance(kind, TypeAdapter):
                return kind.validate_python(data, context=context)
            return kind.model_validate(data, context=context)
        except ValidationError as exc:
            self.lines.extend(one_line(problem_line(path, loc, error)) for error in exc.errors(include_url=False))
            return None

    def raise_any(self) -> None:
        if self.lines:
            raise ConfigError("\n".join(self.lines))
