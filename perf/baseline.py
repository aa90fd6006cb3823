"""A module as an earlier revision wrote it, loaded from git beside today's, for the perf scripts
that time the code before a change in the same process as the code after it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def before_introducing(text: str, path: str) -> str | None:
    """The revision just before the oldest commit that added `text` to `path`; None if none did."""
    introduced = git("log", "--format=%H", "-S", text, "--", path).split()
    return introduced[-1] + "^" if introduced else None


def module_at(revision: str, path: str, name: str) -> ModuleType:
    """`revision`'s `path` (relative to the repository) loaded as a module called `name`."""
    source = git("show", f"{revision}:{path}")
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / f"{name}.py"
        file.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module   # dataclasses look their module up
        spec.loader.exec_module(module)
    return module
