"""The environment variables: declared once in pipeline/settings.py, read through it everywhere,
listed in the README, and a bad value is one line naming the variable, its value and what is
expected (exit 2 from `wenheng run`, before any stage)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from pipeline import history, paths, stopping
from pipeline.config import ConfigError
from pipeline.settings import Settings, markdown_table, settings

BAD = [
    ("WENHENG_MAX_ERROR_RATE", "abc", "a share from 0 to 1, e.g. 0.05"),
    ("WENHENG_MAX_ERROR_RATE", "2", "a share from 0 to 1, e.g. 0.05"),
    ("WENHENG_MAX_ERROR_RATE", "nan", "a share from 0 to 1, e.g. 0.05"),
    ("WENHENG_LIMIT", "-1", "a positive whole number"),
    ("WENHENG_LIMIT", "1.5", "a positive whole number"),
    ("WENHENG_STOP_GRACE_S", "x", "seconds from 0 to 86400, e.g. 10"),
    ("WENHENG_STOP_GRACE_S", "-1", "seconds from 0 to 86400, e.g. 10"),
    ("WENHENG_EXECUTOR", "nosuch", "one of in_process, multiprocess, k8s"),
    ("WENHENG_SCAN_ENGINE", "nosuch", "one of local, ray"),
    ("WENHENG_MAX_CONCURRENT", "0", "a positive whole number"),
    ("WENHENG_K8S_GPUS", "one", "a positive whole number"),
    ("WENHENG_K8S_GPU_NODE_SELECTOR", "gpu", "key=value[,key=value], or empty for none"),
]


@pytest.mark.parametrize(("name", "value", "expected"), BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_a_bad_value_is_one_line_naming_the_variable_its_value_and_what_is_expected(name, value, expected):
    with pytest.raises(ConfigError) as error:
        settings({name: value}).check()
    assert str(error.value) == f"{name}={value!r}: expected {expected}"


def test_unset_or_blank_is_the_default_and_each_reader_sees_the_environment_as_it_is_now(monkeypatch, tmp_path):
    from assets.evaluate import max_error_rate
    from resources.engines import SourcesResource

    for v in Settings.declared():
        monkeypatch.delenv(v.name, raising=False)
    assert settings().max_error_rate == 0.05 and stopping.grace_s() == 10 and SourcesResource().limit() is None
    assert paths.lake_dir() == paths.DATA_DIR / "lake" and paths.reports_dir() == paths.DATA_DIR / "reports"
    assert paths.run_log_file("t") == paths.DATA_DIR / "logs" / "t.log"
    assert history.default_dir(tmp_path / "lake") == tmp_path / "history"
    monkeypatch.setenv("WENHENG_MAX_ERROR_RATE", " ")
    monkeypatch.setenv("WENHENG_K8S_GPU_NODE_SELECTOR", "")   # blank here means: no selector
    assert max_error_rate() == 0.05 and settings().k8s_gpu_node_selector == {}
    monkeypatch.setenv("WENHENG_MAX_ERROR_RATE", "0.2")
    monkeypatch.setenv("WENHENG_STOP_GRACE_S", "3")
    monkeypatch.setenv("WENHENG_LIMIT", "7")
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(tmp_path / "w" / "warehouse.duckdb"))
    monkeypatch.setenv("WENHENG_HISTORY", str(tmp_path / "h"))
    assert max_error_rate() == 0.2 and stopping.grace_s() == 3 and SourcesResource().limit() == 7
    assert paths.logs_dir() == tmp_path / "w" / "logs" and paths.reports_dir() == tmp_path / "w" / "reports"
    assert history.default_dir(tmp_path / "lake") == tmp_path / "h"
    monkeypatch.setenv("WENHENG_LIMIT", "0")
    with pytest.raises(ConfigError, match=r"^WENHENG_LIMIT='0': expected a positive whole number$"):
        SourcesResource().limit()


@pytest.mark.parametrize("command", [["run"], ["contamination", "scan"]], ids=["run", "scan"])
@pytest.mark.parametrize(("name", "value", "expected"), [BAD[1], BAD[7]], ids=["error-rate", "executor"])
def test_the_commands_that_run_stages_refuse_a_bad_value_before_any_stage(tmp_path, name, value, expected, command):
    """`wenheng run` and `wenheng contamination scan` go through one guarded sequence
    (pipeline/cli/guarded.py): the settings are checked before anything is made."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WENHENG_")}
    env.update({"DAGSTER_HOME": str(tmp_path / "home"), "WENHENG_LAKE": str(tmp_path / "lake"),
                "WENHENG_WAREHOUSE": str(tmp_path / "warehouse.duckdb"), "WENHENG_CACHE": str(tmp_path / "cache"),
                name: value})
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", *command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == f"wenheng: {name}={value!r}: expected {expected}\n"
    assert done.stdout == "" and not (tmp_path / "lake").exists() and not (tmp_path / "home").exists()


def test_the_readme_lists_every_variable_once_as_the_settings_declare_them():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    assert markdown_table() in section, ("README.md's configuration table differs from pipeline/settings.py: "
                                         "paste the output of `.venv/bin/python -c 'from pipeline.settings import "
                                         "markdown_table; print(markdown_table())'`")
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for v in Settings.declared():
        assert sum(row.startswith(f"| `{v.name}` |") for row in rows) == 1, v.name
    assert len({v.name for v in Settings.declared()}) == len(Settings.declared())   # each declared once


def _environment_reads(source: str) -> list[str]:
    """Reads of a WENHENG_* variable from an environment mapping: os.environ.get / [..] / in,
    os.getenv, env.get, by literal or by a module constant that holds the name."""
    tree = ast.parse(source)
    constants = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and str(node.value.value).startswith("WENHENG_")
                 for target in node.targets if isinstance(target, ast.Name)}

    def names_one(node) -> bool:
        if isinstance(node, ast.Constant):
            return str(node.value).startswith("WENHENG_")
        if isinstance(node, ast.JoinedStr):
            return ast.unparse(node).startswith(("f'WENHENG_", 'f"WENHENG_'))
        return isinstance(node, ast.Name) and node.id in constants

    def is_environment(node) -> bool:
        text = ast.unparse(node)
        return text.endswith("environ") or text in ("env", "environment")

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args
                and names_one(node.args[0])
                and ((node.func.attr in ("get", "pop") and is_environment(node.func.value))
                     or node.func.attr == "getenv")):
            found.append(ast.unparse(node))
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environment(node.value)
              and names_one(node.slice)):
            found.append(ast.unparse(node))
        elif (isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
              and names_one(node.left) and any(is_environment(c) for c in node.comparators)):
            found.append(ast.unparse(node))
    return found


def test_no_module_reads_a_wenheng_variable_but_the_settings():
    assert _environment_reads('import os\nX = "WENHENG_X"\nos.environ.get("WENHENG_A"); os.getenv("WENHENG_B")\n'
                              'os.environ[X]; env.get(X, "1"); "WENHENG_C" in os.environ\n'
                              'os.environ["WENHENG_D"] = "written, not read"') == [
        "os.environ.get('WENHENG_A')", "os.getenv('WENHENG_B')", "os.environ[X]", "env.get(X, '1')",
        "'WENHENG_C' in os.environ"]
    offenders = {}
    for folder in ("pipeline", "assets", "resources"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "pipeline" / "settings.py":
                continue
            if reads := _environment_reads(path.read_text(encoding="utf-8")):
                offenders[str(Path(path).relative_to(ROOT))] = reads
    assert offenders == {}, "read these through pipeline.settings.settings()"
