"""models.yaml keys that change a model's outputs: checked at load, one line each, and carried
to the engine, whose identity (the response cache key) they enter."""

from __future__ import annotations

import pytest
from conftest import ROOT, write_yaml

from pipeline.config import ConfigError, load_config, load_models
from pipeline.engines.registry import build_engine

OPENAI = "    engine: openai\n    base_url: http://127.0.0.1:9/v1\n    model: served-qwen\n    api_key_env: null\n"
VLLM = "    engine: vllm\n    model: Qwen/Qwen2.5-0.5B-Instruct\n"   # a hub name: a local path must exist
WENMIND = ROOT / "data" / "samples" / "wenmind" / "WenMind_sample.json"


def _load(tmp_path, entry: str):
    return load_models(write_yaml(tmp_path / "models.yaml", f"models:\n  m:\n{entry}"))["m"]


@pytest.mark.parametrize("written, stored", [("r2", "r2"), ("'2026-05-01'", "2026-05-01"), ("2026-05-01", "2026-05-01"),
                                             ("7", "7"), ("' abc123 '", "abc123")])
def test_an_openai_revision_is_text_in_the_identity(tmp_path, written, stored):
    spec = _load(tmp_path, OPENAI + f"    revision: {written}\n")
    assert spec.params["revision"] == stored
    engine = build_engine(spec)
    assert engine.identity()["revision"] == stored and engine.identity()["model"] == "served-qwen"
    unrevised = build_engine(_load(tmp_path, OPENAI))
    assert unrevised.identity() != engine.identity()       # new weights: a new cache key


@pytest.mark.parametrize("written", ["[a, b]", "true", "''", "{v: 1}", "1.5"])
def test_a_bad_revision_is_one_line(tmp_path, written):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, OPENAI + f"    revision: {written}\n")
    (line,) = str(raised.value).splitlines()
    assert "models.m.revision: expected a label for the served weights" in line


def test_vllm_parallel_sizes_reach_the_engine(tmp_path):
    spec = _load(tmp_path, VLLM + "    tensor_parallel_size: 2\n    pipeline_parallel_size: 2\n")
    engine = build_engine(spec)
    assert engine.llm_kwargs == {"tensor_parallel_size": 2, "pipeline_parallel_size": 2,   # passed to vllm.LLM
                                 "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True}}
    identity = engine.identity()
    assert identity["tensor_parallel_size"] == 2 and identity["pipeline_parallel_size"] == 2


@pytest.mark.parametrize("key", ["tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"])
@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "true"])
def test_a_bad_parallel_size_is_one_line(tmp_path, key, value):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, VLLM + f"    {key}: {value}\n")
    (line,) = str(raised.value).splitlines()
    assert f"models.m.{key}: expected an integer >= 1" in line


def test_every_bad_key_of_a_model_is_reported(tmp_path):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, VLLM + "    tensor_parallel_size: 0\n    pipeline_parallel_size: x\n")
    lines = str(raised.value).splitlines()
    assert len(lines) == 2 and "tensor_parallel_size" in lines[0] and "pipeline_parallel_size" in lines[1]


def test_unknown_keys_are_still_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"models\.m\.revison: unknown key \(got 'r2'\); expected some of \[.*'revision'"):
        _load(tmp_path, OPENAI + "    revison: r2\n")
    with pytest.raises(ConfigError, match=r"models\.m\.revision: unknown key \(got 'r2'\); expected some of \['engine'"):
        _load(tmp_path, "    engine: baseline\n    strategy: oracle\n    revision: r2\n")


def test_good_engine_parameters_pass_their_declared_types(tmp_path):
    spec = _load(tmp_path, OPENAI + "    timeout_s: 30\n    max_retries: 20\n    concurrency: 64\n    chat: false\n"
                                    "    seed: 1\n    extra_body: {top_k: 1}\n")
    engine = build_engine(spec)
    assert (engine.timeout_s, engine.max_retries, engine.concurrency, engine.chat) == (30, 20, 64, False)
    assert build_engine(_load(tmp_path, VLLM + "    chat_template: false\n    max_model_len: 4096\n")).max_model_len == 4096


@pytest.mark.parametrize("entry, line", [
    ("    timeout_s: 0\n", "models.m.timeout_s: expected a number > 0 and <= 86400 (a day) (got 0)"),
    ("    timeout_s: 86401\n", "models.m.timeout_s: expected a number > 0 and <= 86400 (a day) (got 86401)"),
    ("    timeout_s: true\n", "models.m.timeout_s: expected a number > 0 and <= 86400 (a day) (got True)"),
    ("    max_retries: 21\n", "models.m.max_retries: expected an integer from 0 to 20 (got 21)"),
    ("    concurrency: '8'\n", "models.m.concurrency: expected an integer >= 1 (got '8')"),
    ("    chat: 1\n", "models.m.chat: expected true or false (got 1)"),
    ("    seed: .nan\n", "models.m.seed: expected an integer or null (got nan)"),
])
def test_a_value_outside_its_type_or_range_is_one_line(tmp_path, entry, line):
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, OPENAI + entry)
    (only,) = str(raised.value).splitlines()
    assert only.endswith(line), only


def test_an_unset_api_key_is_checked_for_the_models_and_judges_to_be_run(tmp_path, monkeypatch):
    monkeypatch.delenv("WENHENG_TEST_UNSET_KEY", raising=False)
    sources = write_yaml(tmp_path / "sources.yaml", f"benchmarks:\n  wenmind: {{path: '{WENMIND}', version: s}}\n")
    keyed = OPENAI.replace("api_key_env: null", "api_key_env: WENHENG_TEST_UNSET_KEY")
    models = write_yaml(tmp_path / "models.yaml", f"models:\n  oracle: {{engine: baseline, strategy: oracle}}\n"
                                                  f"  m:\n{keyed}")
    with pytest.raises(ConfigError) as raised:
        load_config(sources, models)                           # every model is to be run
    (line,) = str(raised.value).splitlines()
    assert "models.m.api_key_env: environment variable WENHENG_TEST_UNSET_KEY is not set" in line
    assert load_config(sources, models, run_models=["oracle"])[1].keys() == {"oracle", "m"}   # m is not run
    judged = write_yaml(tmp_path / "judged.yaml", models.read_text(encoding="utf-8") + "judges:\n  wenmind: {model: m}\n")
    with pytest.raises(ConfigError, match="WENHENG_TEST_UNSET_KEY is not set"):
        load_config(sources, judged, run_models=["oracle"])   # m judges wenmind, which is run
    assert load_config(sources, judged, run_models=["oracle"], run_benchmarks=["aceval"])
    monkeypatch.setenv("WENHENG_TEST_UNSET_KEY", "k")
    assert load_config(sources, judged)


def test_one_table_of_engines_for_the_config_check_and_construction():
    """models.yaml's engine names, the keys each entry may have and the object built all come from
    pipeline.engines.ENGINE_CLASSES; a name not there is refused, never read as OpenAI's."""
    import pytest

    from pipeline.config import ENGINES
    from pipeline.config.models import engine_entry
    from pipeline.engines import ENGINE_CLASSES, engine_class

    assert ENGINES == tuple(ENGINE_CLASSES)
    for name in ENGINES:
        cls = engine_class(name)
        assert cls.__name__ == ENGINE_CLASSES[name][1]
        # (vLLM's llm_kwargs are written at the top level of its entry)
        own = set(list(__import__("inspect").signature(cls.__init__).parameters)[1:]) - {"kwargs", "llm_kwargs"}
        assert own <= set(engine_entry(name).model_fields), name
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        engine_class("tgi")
