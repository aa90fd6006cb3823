"""Every environment variable wenheng reads, declared once: its name, default, type, the values it
may take and one line of help. `settings()` reads the environment at call time and returns a
frozen snapshot; each value is checked when it is read, and `Settings.check()` reads them all
(`wenheng run` does, before any stage). A bad value is a `pipeline.config.ConfigError` of one
line naming the variable, its value and what is expected.

    from pipeline.settings import settings
    settings().lake                 # Path
    settings().max_error_rate       # float in [0, 1]
    settings({"WENHENG_LIMIT": "5"}).limit   # any mapping instead of os.environ (tests, executors)

The README's configuration table lists the same variables (`markdown_table()` writes it)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from pipeline.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"

T = TypeVar("T")


class _Invalid(ValueError):
    """A value a variable cannot take; its message is what is expected."""


class Setting(Generic[T]):
    """One environment variable: read from a `Settings` snapshot, it is the parsed value (or the
    default when the variable is unset or blank); read from the class, it is this declaration."""

    def __init__(self, name: str, parse: Callable[[str], T], default: T | Callable[[Settings], T], *,
                 expected: str, help: str, default_text: str | None = None, blank_is_unset: bool = True):
        self.name, self.parse, self.default, self.expected, self.help = name, parse, default, expected, help
        self.default_text = default_text if default_text is not None else f"`{_shown(default)}`"
        self.blank_is_unset = blank_is_unset

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Setting[T]: ...

    @overload
    def __get__(self, obj: Settings, objtype: type | None = None) -> T: ...

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        raw = obj.environ.get(self.name)
        if raw is None or (self.blank_is_unset and not raw.strip()):
            return self.default(obj) if callable(self.default) else self.default
        try:
            return self.parse(raw)
        except _Invalid as exc:
            raise ConfigError(f"{self.name}={raw!r}: expected {exc}") from None


def _shown(default: Any) -> str:
    if isinstance(default, Path):
        return str(default.relative_to(PROJECT_ROOT))
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


# -- parsers: each raises _Invalid with what a good value looks like ----------------------------

def _path(raw: str) -> Path:
    return Path(raw).expanduser().resolve()


def _folder(raw: str) -> Path:
    """A folder wenheng creates when it is missing: anything but a file (mkdir said only
    `[Errno 17] File exists` deep inside a run)."""
    path = _path(raw)
    if path.exists() and not path.is_dir():
        raise _Invalid(f"a folder path ({path} is a file)")
    return path


def _card_folders(raw: str) -> tuple[Path, ...]:
    """Card folders, each a package (an __init__.py): checked here, so a wrong one is one line
    before any stage, not an ImportError where the registry loads it."""
    folders = tuple(_path(p) for p in raw.split(os.pathsep) if p.strip())
    for folder in folders:
        if not (folder / "__init__.py").is_file():
            why = "does not exist" if not folder.exists() else "has no __init__.py"
            raise _Invalid(f"card folders separated by `:` (os.pathsep), each with an __init__.py "
                           f"({folder} {why})")
    return folders


def _text(raw: str) -> str:
    return raw.strip()


def _positive_int(raw: str) -> int:
    text = raw.strip()
    if not text.isdigit() or int(text) < 1:
        raise _Invalid("a positive whole number")
    return int(text)


def _number(low: float, high: float, what: str) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise _Invalid(what) from None
        if not (low <= value <= high) or math.isnan(value):
            raise _Invalid(what)
        return value
    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw.strip() not in choices:
            raise _Invalid(f"one of {', '.join(choices)}")
        return raw.strip()
    return parse


def _pairs(raw: str) -> dict[str, str]:
    selector = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _Invalid("key=value[,key=value], or empty for none")
        selector[key.strip()] = value.strip()
    return selector


EXECUTORS = ("in_process", "multiprocess", "k8s")
SCAN_ENGINES = ("local", "ray")
# The label NVIDIA's GPU feature discovery puts on GPU nodes, and the taint GPU node pools usually carry.
DEFAULT_GPU_NODE_SELECTOR = "nvidia.com/gpu.present=true"


@dataclass(frozen=True)
class Settings:
    """A snapshot of the environment; each attribute below is one variable, parsed when read."""

    environ: Mapping[str, str] = field(default_factory=dict)

    # -- where things live ----------------------------------------------------------------------
    sources = Setting("WENHENG_SOURCES", _path, DATA_DIR / "sources.yaml", expected="a file path",
                      help="the sources file: each benchmark's files, version and splits (`wenheng run --sources`)")
    models = Setting("WENHENG_MODELS", _path, DATA_DIR / "models.yaml", expected="a file path",
                     help="the models file: engines, sampling, settings, judges (`wenheng run --models`)")
    corpora = Setting("WENHENG_CORPORA", _path, DATA_DIR / "corpora.yaml", expected="a file path",
                      help="corpora scanned for contamination")
    corrections = Setting("WENHENG_CORRECTIONS", _path, DATA_DIR / "corrections", expected="a folder path",
                          help="correction files, checked with the sources and models before any stage")
    warehouse = Setting("WENHENG_WAREHOUSE", _path, DATA_DIR / "warehouse.duckdb", expected="a file path",
                        help="the DuckDB warehouse")
    reports = Setting("WENHENG_REPORTS", _folder, lambda s: s.warehouse.parent / "reports", expected="a folder path",
                      default_text="`reports/` beside the warehouse (`data/reports`)",
                      help="HTML reports, one folder per run")
    charts = Setting("WENHENG_CHARTS", _folder, lambda s: s.warehouse.parent / "charts", expected="a folder path",
                     default_text="`charts/` beside the warehouse (`data/charts`)",
                     help="the scores' charts, kept by what they draw: a publish draws only those that changed")
    logs = Setting("WENHENG_LOGS", _folder, lambda s: s.warehouse.parent / "logs", expected="a folder path",
                   default_text="`logs/` beside the warehouse (`data/logs`)",
                   help="one log file per `wenheng run`: full tracebacks of failed steps, third-party "
                        "warnings and log lines")
    lake = Setting("WENHENG_LAKE", _folder, DATA_DIR / "lake", expected="a folder path",
                   help="parquet files written by the assets, one per asset or partition")
    history = Setting("WENHENG_HISTORY", _folder, None, expected="a folder path",
                      default_text="`history/` beside the lake (`data/history`)",
                      help="the warehouse's append-only history (`wenheng diff`)")
    cache = Setting("WENHENG_CACHE", _folder, DATA_DIR / "cache", expected="a folder path",
                    help="the response cache, downloaded sources and the contamination scans' state")
    model_store = Setting("WENHENG_MODEL_STORE", _folder, DATA_DIR / "cache" / "models", expected="a folder path",
                          help="bundled models converted for vLLM")
    cards = Setting("WENHENG_CARDS", _card_folders, (), expected="folders separated by `:` (os.pathsep)",
                    default_text="none",
                    help="benchmark card folders kept outside pipeline/benchmarks")
    dagster_home = Setting("DAGSTER_HOME", _folder, PROJECT_ROOT / ".dagster_home", expected="a folder path",
                           help="the Dagster instance, shared by `wenheng run` and `dagster dev`")

    # -- how a run behaves ----------------------------------------------------------------------
    limit = Setting("WENHENG_LIMIT", _positive_int, None, expected="a positive whole number", default_text="every item",
                    help="at most N evaluated items per benchmark, round-robin over its tasks "
                         "(`wenheng run --limit`)")
    max_error_rate = Setting("WENHENG_MAX_ERROR_RATE", _number(0.0, 1.0, "a share from 0 to 1, e.g. 0.05"), 0.05,
                             expected="a share from 0 to 1",
                             help="share of failed prompts above which a responses partition fails")
    stop_grace_s = Setting("WENHENG_STOP_GRACE_S", _number(0.0, 86400.0, "seconds from 0 to 86400, e.g. 10"), 10.0,
                           expected="seconds from 0 to 86400",
                           help="how long answers in flight are waited for after Ctrl-C or SIGTERM")
    wait_for_runs_s = Setting("WENHENG_WAIT_FOR_RUNS_S", _number(0.0, 604800.0, "seconds from 0 to 604800, e.g. 3600"),
                              3600.0, expected="seconds from 0 to 604800",
                              help="how long `wenheng run` waits for runs launched elsewhere (the daemon, the UI)")
    scan_engine = Setting("WENHENG_SCAN_ENGINE", _choice(*SCAN_ENGINES), None, expected=" | ".join(SCAN_ENGINES),
                          default_text="each corpus's own `engine`",
                          help="overrides the contamination scan's engine (`wenheng contamination scan --engine`)")

    # -- where the steps of a run execute -------------------------------------------------------
    executor = Setting("WENHENG_EXECUTOR", _choice(*EXECUTORS), "in_process", expected=" | ".join(EXECUTORS),
                       help="how the steps of one run execute (see \"Scaling out\")")
    max_concurrent = Setting("WENHENG_MAX_CONCURRENT", _positive_int, None, expected="a positive whole number",
                             default_text="one per CPU (multiprocess), unlimited (k8s)",
                             help="steps at once under the multiprocess or k8s executor")
    k8s_gpus = Setting("WENHENG_K8S_GPUS", _positive_int, 1, expected="a positive whole number",
                       help="GPUs per inference-pool step under the k8s executor")
    k8s_gpu_node_selector = Setting("WENHENG_K8S_GPU_NODE_SELECTOR", _pairs,
                                    lambda s: _pairs(DEFAULT_GPU_NODE_SELECTOR), expected="key=value[,key=value]",
                                    default_text=f"`{DEFAULT_GPU_NODE_SELECTOR}`",
                                    blank_is_unset=False,
                                    help="node labels of the GPU nodes (k8s executor; empty: none)")
    k8s_namespace = Setting("WENHENG_K8S_NAMESPACE", _text, None, expected="a Kubernetes namespace",
                            default_text="dagster-k8s's",
                            help="namespace of the step Jobs under the k8s executor")

    @classmethod
    def declared(cls) -> list[Setting]:
        """Every variable, in the order above."""
        return [v for v in vars(cls).values() if isinstance(v, Setting)]

    def check(self) -> None:
        """Read every variable: the first bad one raises ConfigError (one line)."""
        for variable in self.declared():
            variable.__get__(self)

    def __repr__(self) -> str:   # the variables as set (reading them could raise)
        return f"Settings({', '.join(f'{k}={v!r}' for k, v in sorted(self.environ.items()))})"


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """A snapshot of the declared variables in `environ` (default: os.environ, read now)."""
    source = os.environ if environ is None else environ
    names = {v.name for v in Settings.declared()}
    return Settings({k: v for k, v in source.items() if k in names})


def written(setting: Setting) -> str:
    """The variable as written ("" when unset), unparsed: a cheap key for a cache that parses it
    with `settings()` only when it changes."""
    return os.environ.get(setting.name, "")


def markdown_table() -> str:
    """The README's table of variables."""
    rows = ["| variable | default | value | what |", "| --- | --- | --- | --- |"]
    for v in Settings.declared():
        rows.append(f"| `{v.name}` | {v.default_text} | {v.expected.replace('|', chr(92) + '|')} | {v.help} |")
    return "\n".join(rows)
