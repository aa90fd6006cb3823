"""Broken configuration stops `wenheng run` before any stage: exit code 2, one line per problem on
stderr naming the file, the key and the value with what is expected, never a traceback.

CASES is the bad-config corpus (config_cases.py, config_cases_more.py): a broken sources.yaml,
models.yaml or corpora.yaml (beside good other files), correction files, variables, the response
cache, or a bad command line (`args`). config_corpus.py (beside this file) runs it against any
checkout, as subprocesses, and counts clean one-line errors, tracebacks and configurations
silently accepted (a stage started or exit 0)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from config_cases import CASES as FIRST_CASES
from config_cases import GOOD_MODELS, GOOD_SOURCES, UNSET_KEY, _models
from config_cases_more import MORE_CASES
from conftest import ROOT

from pipeline import cli

CASES = FIRST_CASES + MORE_CASES


@pytest.fixture
def isolated(tmp_path, monkeypatch) -> Path:
    """A run that is not refused writes its lake, warehouse, cache and history here, never into
    the project's own; the unset API key stays unset."""
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"), ("WENHENG_CACHE", "cache"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CORRECTIONS", "corrections"),
                      ("WENHENG_CORPORA", "corpora.yaml"), ("WENHENG_REPORTS", "reports")]:
        monkeypatch.setenv(name, str(tmp_path / sub))
    for name in (UNSET_KEY, "OPENAI_API_KEY", "WENHENG_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _run(tmp_path: Path, monkeypatch, sources: str | bytes, models: str | bytes,
         args: list[str] = ()) -> tuple[int, str, str]:
    files = {}
    for name, text in (("sources", sources), ("models", models)):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    # `wenheng run --sources/--models` exports these; set them here so they are undone after the test
    monkeypatch.setenv("WENHENG_SOURCES", str(files["sources"]))
    monkeypatch.setenv("WENHENG_MODELS", str(files["models"]))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(["run", "--no-report", "--sources", str(files["sources"]), "--models",
                             str(files["models"]), *args])
        except SystemExit as exc:   # argparse's own errors (--limit 0)
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def case_files(broken: str, text) -> tuple[str | bytes, str | bytes, list[str]]:
    """(sources text, models text, extra arguments) of a corpus case."""
    if broken == "args":
        return GOOD_SOURCES, GOOD_MODELS, list(text)
    if broken not in ("sources", "models"):
        return GOOD_SOURCES, GOOD_MODELS, []
    return (text, GOOD_MODELS, []) if broken == "sources" else (GOOD_SOURCES, text, [])


def case_environment(broken: str, text, work: Path) -> dict[str, str]:
    """The variables a case sets, and what it puts in `work` beside the two files: correction
    files (in work/corrections), a file for `{file}`, or the response cache (work/cache)."""
    if broken == "env":
        (work / "a_file").write_text("a file, not a folder", encoding="utf-8")
        return {name: value.replace("{file}", str(work / "a_file")) for name, value in text.items()}
    if broken == "corrections":
        (work / "corrections").mkdir(exist_ok=True)
        for name, content in text.items():
            (work / "corrections" / name).write_bytes(content)
        return {"WENHENG_CORRECTIONS": str(work / "corrections")}
    if broken == "cache":
        (work / "cache").mkdir(exist_ok=True)
        (work / "cache" / "responses.sqlite").write_bytes(text)
        return {"WENHENG_CACHE": str(work / "cache")}
    if broken == "corpora":
        return {"WENHENG_CORPORA": str(corpora_file(text, work))}
    return {}


def corpora_file(text, work: Path) -> Path:
    """A corpora case's file, `{dir}` in it the folder beside it: a corpus file (data.jsonl), one
    whose format cannot be told (data.dat) and symlink loops (loop.jsonl, loop/)."""
    (work / "data.jsonl").write_text('{"text": "北冥有鱼，其名为鲲。"}\n', encoding="utf-8")
    (work / "data.dat").write_text("北冥有鱼\n", encoding="utf-8")
    for loop in ("loop.jsonl", "loop"):
        if not (work / loop).is_symlink():
            (work / loop).symlink_to(work / loop)
    content = text if isinstance(text, bytes) else text.replace("{dir}", str(work)).encode("utf-8")
    (work / "corpora.yaml").write_bytes(content)
    return work / "corpora.yaml"


def test_the_corpus_is_large_and_names_every_case_once():
    assert len(CASES) >= 200
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("case", "broken", "text", "keys"), CASES, ids=[c[0] for c in CASES])
def test_broken_config_stops_the_run_with_one_line_per_problem(isolated, monkeypatch, case, broken, text, keys):
    sources, models, args = case_files(broken, text)
    for name, value in case_environment(broken, text, isolated).items():
        monkeypatch.setenv(name, value)
    code, out, err = _run(isolated, monkeypatch, sources, models, args)
    lines = err.strip().splitlines()
    assert code == 2, (case, out, err)
    assert "Traceback" not in out + err
    assert "prepare" not in out  # no stage started
    assert len(lines) == len(keys), lines
    path = str(isolated / f"{broken}.yaml")
    for line, key in zip(lines, keys, strict=True):
        fragments = (key,) if isinstance(key, str) else key
        assert broken not in ("sources", "models") or path in line, line
        assert all(fragment in line for fragment in fragments), (fragments, line)


def test_every_problem_of_both_files_is_reported(isolated, monkeypatch):
    models = _models("    engine: baseline\n    strategy: oracle\n    variants: [latin]\n"
                     "    sampling: {temperature: hot}\n")
    code, _, err = _run(isolated, monkeypatch, "benchmarks:\n  - wenmind\n", models)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 3, lines
    assert "sources.yaml: benchmarks" in lines[0]
    assert any("models.m.variants" in line for line in lines)
    assert any("models.m.sampling.temperature" in line for line in lines)


def test_the_shipped_files_are_valid():
    from pipeline.config import load_config

    sources, models = load_config(ROOT / "data" / "sources.yaml", ROOT / "data" / "models.yaml")
    assert sources and models


def test_broken_corrections_stop_the_run_with_one_line_per_problem(tmp_path, monkeypatch):
    """Correction files are configuration too: checked before any stage, beside both files."""
    corrections = tmp_path / "corrections"
    corrections.mkdir()
    (corrections / "fix.yaml").write_text(
        "benchmark: wyweb\nrelease: 1\ncorrections:\n"
        "  - {item_id: wyweb/dev/tlc/abc, field: answer, old: A, new: B, reason: r, date: 2026-01-01, path: []}\n",
        encoding="utf-8")
    (corrections / "fix.csv").write_text("item_id,field,old,new,reason,date\naceval/dev/t/1,gold,A,B,r,2026-01-01\n",
                                         encoding="utf-8")
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(corrections))
    code, out, err = _run(tmp_path, monkeypatch, GOOD_SOURCES, GOOD_MODELS + "  extra: {engine: baseline, strategy: oracle, bad_key: 1}\n")
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in out + err and "prepare" not in out
    assert len(lines) == 3, lines
    assert "models.extra" in lines[0]
    assert str(corrections / "fix.csv") in lines[1] and "field 'gold' cannot be corrected" in lines[1]
    assert str(corrections / "fix.yaml") in lines[2] and "unknown keys ['release']" in lines[2]

