"""Broken configuration files stop `wenheng run` before any stage: exit code 2, one line per
problem on stderr naming the file and the key, never a traceback."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from conftest import ROOT

from pipeline import cli

SAMPLES = ROOT / "data" / "samples"
GOOD_SOURCES = f"benchmarks:\n  wenmind: {{path: {SAMPLES / 'wenmind' / 'WenMind_sample.json'}, version: s1}}\n"
GOOD_MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n"


def _models(entry: str) -> str:
    return f"models:\n  m:\n{entry}"


# (name, which file is broken, its text (str or bytes), [a key each problem line must name])
CASES = [
    ("benchmarks_list", "sources", "benchmarks:\n  - wenmind\n", ["benchmarks"]),
    ("sources_not_utf8", "sources", "benchmarks:\n  wenmind: {path: x, license: caf\xe9}\n".encode("latin-1"),
     ["UTF-8"]),
    ("sources_top_list", "sources", "- wenmind\n", ["top level"]),
    ("sources_duplicate_benchmark", "sources", GOOD_SOURCES + "  wenmind: {path: y, version: s2}\n",
     ["wenmind"]),
    ("sources_duplicate_top", "sources", GOOD_SOURCES + "duplicates: flag\nduplicates: drop\n", ["duplicates"]),
    ("sources_version_list", "sources", GOOD_SOURCES.replace("version: s1", "version: [1, 2]"),
     ["benchmarks.wenmind.version"]),
    ("sources_unknown_benchmark", "sources", GOOD_SOURCES + "  nosuch: {path: x, version: s1}\n",
     ["benchmarks.nosuch"]),
    ("sources_unknown_top", "sources", GOOD_SOURCES + "benchmark_defaults: {}\n", ["benchmark_defaults"]),
    ("sources_bad_duplicates", "sources", GOOD_SOURCES + "duplicates: sometimes\n", ["duplicates"]),
    ("sources_bad_yaml", "sources", "benchmarks:\n  wenmind: {path: x\n", ["line"]),
    ("models_not_utf8", "models", "models:\n  m: {engine: baseline, strategy: \xff}\n".encode("latin-1"), ["UTF-8"]),
    ("models_top_string", "models", "just a string\n", ["top level"]),
    ("models_duplicate_model", "models", GOOD_MODELS + "  oracle: {engine: baseline, strategy: random}\n",
     ["oracle"]),
    ("models_duplicate_param", "models", _models("    engine: baseline\n    strategy: oracle\n    strategy: random\n"),
     ["strategy"]),
    ("sampling_not_mapping", "models", _models("    engine: baseline\n    strategy: oracle\n    sampling: 0.5\n"),
     ["models.m.sampling"]),
    ("temperature_not_number", "models",
     _models("    engine: baseline\n    strategy: oracle\n    sampling: {temperature: hot}\n"),
     ["models.m.sampling.temperature"]),
    ("sampling_unknown_key", "models",
     _models("    engine: baseline\n    strategy: oracle\n    sampling: {top_q: 1}\n"), ["models.m.sampling.top_q"]),
    ("max_tokens_negative", "models",
     _models("    engine: baseline\n    strategy: oracle\n    sampling: {max_tokens: -3}\n"),
     ["models.m.sampling.max_tokens"]),
    ("variants_unknown", "models", _models("    engine: baseline\n    strategy: oracle\n    variants: [latin]\n"),
     ["models.m.variants"]),
    ("settings_unknown_benchmark", "models",
     _models("    engine: baseline\n    strategy: oracle\n    settings: {nosuch: [zero_shot_ao]}\n"),
     ["models.m.settings.nosuch"]),
    ("settings_unknown_setting", "models",
     _models("    engine: baseline\n    strategy: oracle\n    settings: {aceval: [ten_shot]}\n"),
     ["models.m.settings.aceval"]),
    ("engine_unknown", "models", _models("    engine: tgi\n"), ["models.m.engine"]),
    ("baseline_unknown_param", "models", _models("    engine: baseline\n    strategy: oracle\n    temprature: 1\n"),
     ["models.m"]),
    ("baseline_bad_strategy", "models", _models("    engine: baseline\n    strategy: clever\n"), ["models.m"]),
    ("openai_unknown_param", "models",
     _models("    engine: openai\n    model: x\n    base_url: http://127.0.0.1:9/v1\n    concurency: 4\n"),
     ["models.m"]),
    ("openai_missing_model", "models", _models("    engine: openai\n    base_url: http://127.0.0.1:9/v1\n"),
     ["models.m"]),
    ("openai_bad_concurrency", "models", _models("    engine: openai\n    model: x\n    concurrency: 0\n"),
     ["models.m"]),
    ("vllm_unknown_param", "models", _models("    engine: vllm\n    model: x\n    gpu_memory_utilisation: 0.5\n"),
     ["models.m"]),
    ("openai_revision_list", "models",
     _models("    engine: openai\n    model: x\n    revision: [r1, r2]\n"), ["models.m.revision"]),
    ("vllm_tensor_parallel_zero", "models", _models("    engine: vllm\n    model: x\n    tensor_parallel_size: 0\n"),
     ["models.m.tensor_parallel_size"]),
    ("vllm_parallel_sizes_not_ints", "models",
     _models("    engine: vllm\n    model: x\n    pipeline_parallel_size: two\n    data_parallel_size: 1.5\n"),
     ["models.m.pipeline_parallel_size", "models.m.data_parallel_size"]),
    ("vllm_data_parallel_offline", "models", _models("    engine: vllm\n    model: x\n    data_parallel_size: 2\n"),
     ["models.m"]),
    ("judge_unknown_model", "models", GOOD_MODELS + "judges:\n  wenmind: {model: nobody}\n",
     ["judges.wenmind.model"]),
    ("judge_unknown_benchmark", "models", GOOD_MODELS + "judges:\n  nosuch: {model: oracle}\n", ["judges.nosuch"]),
    ("models_unknown_top", "models", GOOD_MODELS + "judge:\n  wenmind: {model: oracle}\n", ["judge"]),
]


def _run(tmp_path: Path, monkeypatch, sources: str | bytes, models: str | bytes) -> tuple[int, str, str]:
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
        code = cli.main(["run", "--sources", str(files["sources"]), "--models", str(files["models"])])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("case", "broken", "text", "keys"), CASES, ids=[c[0] for c in CASES])
def test_broken_config_stops_the_run_with_one_line_per_problem(tmp_path, monkeypatch, case, broken, text, keys):
    sources, models = (text, GOOD_MODELS) if broken == "sources" else (GOOD_SOURCES, text)
    code, out, err = _run(tmp_path, monkeypatch, sources, models)
    lines = err.strip().splitlines()
    assert code == 2, (case, out, err)
    assert "Traceback" not in out + err
    assert "prepare" not in out  # no stage started
    assert len(lines) == len(keys), lines
    path = str(tmp_path / f"{broken}.yaml")
    for line, key in zip(lines, keys, strict=True):
        assert path in line and key in line, line


def test_every_problem_of_both_files_is_reported(tmp_path, monkeypatch):
    models = _models("    engine: baseline\n    strategy: oracle\n    variants: [latin]\n"
                     "    sampling: {temperature: hot}\n")
    code, _, err = _run(tmp_path, monkeypatch, "benchmarks:\n  - wenmind\n", models)
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

