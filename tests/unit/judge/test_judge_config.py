"""`judges:` in models.yaml: `prompts: official` fetches WenMind's official judge prompts at a
pinned commit through the sources' download machinery (verified by sha256, cached), a strong
judge asked with wenheng's own prompts is warned about, and every problem is one line naming
file, key and value. Nothing here touches the network: downloads are file:// URLs or a cache
filled beforehand."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, upstream, write_yaml

from pipeline import benchmarks, cli
from pipeline.benchmarks.wenmind import official_prompts
from pipeline.benchmarks.wenmind.official_prompts import OFFICIAL_COUNT, OFFICIAL_POEM, OFFICIAL_TYPES
from pipeline.config import ConfigError, judge_warnings, load_config, load_judges, load_models
from pipeline.judge import prompts as judge_prompts
from pipeline.judge.prompts import PromptError, load_official
from pipeline.judge.run import prompt_set
from pipeline.sources import fetch

STRONG = "  j: {engine: openai, model: x, api_key_env: null}\n"
DEMO = ("  demo: {engine: vllm, model: 'bundled:gemma3-270m', chat_template: false, dtype: bfloat16,"
        " max_model_len: 1024, enforce_eager: true}\n")
MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n" + STRONG + DEMO
SOURCES = (f"benchmarks:\n  wenmind: {{path: {ROOT / 'data' / 'samples' / 'wenmind' / 'WenMind_sample.json'}, "
           "version: s1}\n")


def _official_bytes() -> bytes:
    """A well-formed stand-in for Task_Score_Prompt.json (wenheng's own words, not WenMind's)."""
    types = [*OFFICIAL_TYPES, *(f"{OFFICIAL_POEM}form{n}" for n in range(OFFICIAL_COUNT - len(OFFICIAL_TYPES)))]
    records = [{"id": n, "type": t, "prompt": f"stand-in {t}: {{}} / {{}} / {{}}"} for n, t in enumerate(types)]
    return json.dumps(records, ensure_ascii=False, indent=1).encode("utf-8")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A download cache of its own, and no download allowed unless a test says so."""
    monkeypatch.setenv("WENHENG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _no_network(monkeypatch):
    def refuse(spec, target):
        raise AssertionError(f"tried to download {spec.url}")

    monkeypatch.setattr(fetch, "_download", refuse)


def _judges(tmp_path, judges: str, models: str = MODELS) -> Path:
    return write_yaml(tmp_path / "models.yaml", models + "judges:\n" + judges)


def _one_line(path: Path, loader=load_judges) -> str:
    with pytest.raises(ConfigError) as raised:
        loader(path)
    (line,) = str(raised.value).splitlines()
    assert line.startswith(f"{path}: ")
    return line


# -- the pin ------------------------------------------------------------------------------------

def test_the_pin_names_wenminds_repository_at_a_commit_and_matches_the_upstream_copy():
    assert judge_prompts.OFFICIAL_URL == ("https://raw.githubusercontent.com/SCUT-DLVCLab/WenMind/"
                                          f"{judge_prompts.OFFICIAL_COMMIT}/JSON/Task_Score_Prompt.json")
    assert len(judge_prompts.OFFICIAL_COMMIT) == 40 and len(judge_prompts.OFFICIAL_SHA256) == 64
    real = upstream("wenmind", "Task_Score_Prompt.json")
    assert hashlib.sha256(real.read_bytes()).hexdigest() == judge_prompts.OFFICIAL_SHA256


def test_the_pin_and_its_reader_live_in_the_wenmind_card_and_reach_the_judge_through_the_registry():
    assert benchmarks.hooks(judge_prompts.OFFICIAL_HOOK) == {"wenmind": official_prompts.OFFICIAL_JUDGE_PROMPTS}
    assert judge_prompts.official_source("wenmind") is official_prompts.OFFICIAL_JUDGE_PROMPTS
    for name in ("OFFICIAL_REPO", "OFFICIAL_COMMIT", "OFFICIAL_FILE", "OFFICIAL_URL", "OFFICIAL_SHA256"):
        assert getattr(judge_prompts, name) == getattr(official_prompts, name), name
    real = upstream("wenmind", "Task_Score_Prompt.json")
    assert load_official(real) is official_prompts.load_official(real)
    with pytest.raises(PromptError, match="the aceval card pins no official judge prompts"):
        judge_prompts.official_source("aceval")


def test_prompts_official_reads_the_pinned_file_from_the_cache_without_a_request(tmp_path, cache, monkeypatch):
    real = upstream("wenmind", "Task_Score_Prompt.json")
    cached = cache / "downloads" / judge_prompts.OFFICIAL_SHA256 / "Task_Score_Prompt.json"
    cached.parent.mkdir(parents=True)
    shutil.copyfile(real, cached)      # as a first download would have left it (a temp cache, not the repo)
    _no_network(monkeypatch)
    spec = load_judges(_judges(tmp_path, "  wenmind: {model: j, prompts: official}\n"))["wenmind"]
    assert spec.prompts == "official" and spec.official == cached
    assert prompt_set(spec).name == "official" and prompt_set(spec).version == load_official(real).version


def test_prompts_official_downloads_once_verifies_and_reuses_the_copy(tmp_path, cache, monkeypatch):
    served = tmp_path / "served" / "Task_Score_Prompt.json"
    served.parent.mkdir()
    served.write_bytes(_official_bytes())
    digest = hashlib.sha256(served.read_bytes()).hexdigest()
    monkeypatch.setattr(judge_prompts, "OFFICIAL_URL", served.as_uri())
    monkeypatch.setattr(judge_prompts, "OFFICIAL_SHA256", digest)
    path = _judges(tmp_path, "  wenmind: {model: j, prompts: official}\n")
    spec = load_judges(path)["wenmind"]
    assert spec.official == cache / "downloads" / digest / "Task_Score_Prompt.json"
    assert spec.official.read_bytes() == served.read_bytes()
    assert prompt_set(spec).label().startswith("official-")
    served.unlink()                    # the source is gone: the verified copy is used, with no request
    _no_network(monkeypatch)
    assert load_judges(path)["wenmind"].official == spec.official


def test_a_url_with_its_sha256_works_like_the_pin(tmp_path, cache):
    served = tmp_path / "mine.json"
    served.write_bytes(_official_bytes())
    digest = hashlib.sha256(served.read_bytes()).hexdigest()
    spec = load_judges(_judges(tmp_path, f"  wenmind: {{model: j, prompts: {{official: '{served.as_uri()}', "
                                         f"sha256: {digest.upper()}}}}}\n"))["wenmind"]
    assert spec.official == cache / "downloads" / digest / "mine.json"


def test_a_local_copy_keeps_working_and_is_checked_when_a_sha256_is_given(tmp_path, cache, monkeypatch):
    _no_network(monkeypatch)
    (tmp_path / "copy.json").write_bytes(_official_bytes())
    digest = hashlib.sha256(_official_bytes()).hexdigest()
    spec = load_judges(_judges(tmp_path, "  wenmind: {model: j, prompts: {official: copy.json}}\n"))["wenmind"]
    assert spec.official == (tmp_path / "copy.json").resolve()
    checked = _judges(tmp_path, f"  wenmind: {{model: j, prompts: {{official: copy.json, sha256: {digest}}}}}\n")
    assert load_judges(checked)["wenmind"].official == spec.official
    wrong = "c0" * 32
    line = _one_line(_judges(tmp_path, f"  wenmind: {{model: j, prompts: {{official: copy.json, sha256: {wrong}}}}}\n"))
    assert f"judges.wenmind.prompts: {(tmp_path / 'copy.json').resolve()} has sha256 {digest}, expected {wrong}" in line


# -- a wrong sha256 -----------------------------------------------------------------------------

def test_a_changed_pinned_file_is_one_line_naming_the_file_and_both_hashes(tmp_path, cache, monkeypatch):
    served = tmp_path / "Task_Score_Prompt.json"
    served.write_bytes(_official_bytes())
    actual = hashlib.sha256(served.read_bytes()).hexdigest()
    monkeypatch.setattr(judge_prompts, "OFFICIAL_URL", served.as_uri())   # the pinned sha256 stays
    line = _one_line(_judges(tmp_path, "  wenmind: {model: j, prompts: official}\n"))
    assert (f"judges.wenmind.prompts: {served.as_uri()} has sha256 {actual}, "
            f"expected {judge_prompts.OFFICIAL_SHA256}") in line
    assert "SCUT-DLVCLab/WenMind@586481c" in line and "discarded" in line
    folder = cache / "downloads" / judge_prompts.OFFICIAL_SHA256
    assert not any(folder.iterdir())          # nothing unverified is kept


def test_a_wrong_sha256_of_a_url_is_one_line_and_stops_the_run(tmp_path, cache):
    served = tmp_path / "mine.json"
    served.write_bytes(_official_bytes())
    wrong = "ab" * 32
    models = _judges(tmp_path, f"  wenmind: {{model: j, prompts: {{official: '{served.as_uri()}', sha256: {wrong}}}}}\n")
    sources = write_yaml(tmp_path / "sources.yaml", SOURCES)
    line = _one_line(models, lambda path: load_config(sources, path))
    assert f"{served.as_uri()} has sha256 {hashlib.sha256(_official_bytes()).hexdigest()}, expected {wrong}" in line


def test_an_unreachable_url_is_one_line_saying_how_to_use_a_copy(tmp_path, cache):
    missing = (tmp_path / "absent.json").as_uri()
    line = _one_line(_judges(tmp_path, f"  wenmind: {{model: j, prompts: {{official: '{missing}', sha256: {'c0' * 32}}}}}\n"))
    assert "judges.wenmind.prompts: " in line and "could not download" in line and "official: path/to" in line


# -- typed configuration ------------------------------------------------------------------------

@pytest.mark.parametrize(("judges", "message"), [
    ("  wenmind: {model: j, prompts: {official: x.json, sha: abc}}\n",
     "judges.wenmind.prompts.sha: unknown key (got 'abc'); expected some of ['official', 'sha256']"),
    ("  wenmind: {model: j, prompts: {official: 'https://example.org/p.json'}}\n",
     "judges.wenmind.prompts.sha256: a url (https://example.org/p.json) needs the file's sha256"),
    ("  wenmind: {model: j, prompts: {official: x.json, sha256: abc}}\n",
     "judges.wenmind.prompts.sha256: expected the file's sha256, 64 hex digits (got 'abc')"),
    ("  wenmind: {model: j, prompts: {official: 3}}\n",
     "judges.wenmind.prompts.official: expected a path or url of Task_Score_Prompt.json (got 3)"),
    ("  wenmind: {model: j, prompts: [official]}\n", "judges.wenmind.prompts: expected wenheng, official, or "),
    ("  wenmind: {model: j, prompts: OFFICIAL}\n", "(got 'OFFICIAL')"),
    ("  fuxi: {model: j, prompts: official}\n",
     "judges.fuxi.prompts: the fuxi card has no routing for official prompts (got 'official'); expected wenheng"),
    ("  wenmind: {model: j, structured: false}\n",
     "judges.wenmind.structured: unknown key (got False); expected some of ['max_tokens', 'model'"),
    ("  wenmind: {model: j, max_tokens: many}\n", "judges.wenmind.max_tokens: expected an integer >= 1 (got 'many')"),
    ("  wenmind: {model: j, structured_output: 'no'}\n",
     "judges.wenmind.structured_output: expected true or false (got 'no')"),
    ("  wenmind: {model: j, reliability: {repeat: 2}}\n",
     "judges.wenmind.reliability.repeat: unknown key (got 2); expected some of ['repeats', 'sample_per_task'"),
    ("  wenmind: {model: j, reliability: 3}\n", "judges.wenmind.reliability: expected a mapping with some of"),
    ("  wenmind: [j]\n", "judges.wenmind: expected a mapping {model: <a model>, prompts: wenheng | official} (got ['j'])"),
])
def test_each_judge_problem_is_one_line_naming_file_key_value_and_what_is_expected(tmp_path, cache, judges, message):
    line = _one_line(_judges(tmp_path, judges), load_models)
    assert message in line


def test_every_problem_of_a_judge_is_reported_one_line_each(tmp_path, cache):
    path = _judges(tmp_path, "  wenmind: {model: nobody, retries: -1, temperature: 0, prompts: theirs,"
                             " reliability: {seed: x, repeats: -2, temperature: 0}}\n")
    with pytest.raises(ConfigError) as raised:
        load_models(path)
    lines = str(raised.value).splitlines()
    keys = ["temperature", "model", "prompts", "retries", "reliability.temperature", "reliability.repeats",
            "reliability.seed"]
    assert len(lines) == len(keys), lines
    for line, key in zip(lines, keys, strict=True):
        assert line.startswith(f"{path}: judges.wenmind.{key}: "), line
        assert "(got " in line or "'nobody' is not an entry of models: (oracle, j, demo)" in line, line


# -- the warning --------------------------------------------------------------------------------

def _warnings(tmp_path, judges: str) -> list[str]:
    said: list[str] = []
    load_config(write_yaml(tmp_path / "sources.yaml", SOURCES), _judges(tmp_path, judges), warn=said.append)
    return said


def test_a_strong_judge_with_wenhengs_prompts_is_warned_about_in_one_line(tmp_path, cache):
    (line,) = _warnings(tmp_path, "  wenmind: {model: j, prompts: wenheng}\n  fuxi: {model: j}\n")
    assert line.startswith(f"warning: {tmp_path / 'models.yaml'}: judges.wenmind: judge 'j' ")
    assert "not be comparable to the WenMind paper's" in line and "`prompts: official`" in line


def test_the_demo_judge_and_the_official_prompts_give_no_warning(tmp_path, cache, monkeypatch):
    assert _warnings(tmp_path, "  wenmind: {model: demo, prompts: wenheng}\n  fuxi: {model: demo}\n") == []
    (tmp_path / "copy.json").write_bytes(_official_bytes())
    assert _warnings(tmp_path, "  wenmind: {model: j, prompts: {official: copy.json}}\n  fuxi: {model: j}\n") == []
    shipped = ROOT / "data" / "models.yaml"
    models = load_models(shipped)
    assert judge_warnings(shipped, load_judges(shipped, models), models) == []   # the demo's own judge


def test_wenheng_run_says_the_warning_before_anything_starts(tmp_path, cache, monkeypatch):
    sources = write_yaml(tmp_path / "sources.yaml", SOURCES)
    models = _judges(tmp_path, "  wenmind: {model: j}\n")
    for name, value in (("DAGSTER_HOME", tmp_path / "dagster_home"), ("WENHENG_SOURCES", sources),
                        ("WENHENG_MODELS", models), ("WENHENG_CORPORA", tmp_path / "no_corpora.yaml")):
        monkeypatch.setenv(name, str(value))   # `run` exports some of these: undone after the test
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        # an unknown --model stops the run right after the configuration is read: nothing runs
        code = cli.main(["run", "--sources", str(sources), "--models", str(models), "--model", "nobody"])
    assert code != 0 and "unknown models ['nobody']" in err.getvalue()
    (line,) = [x for x in out.getvalue().splitlines() if "warning" in x]
    assert line.startswith(f"[wenheng] warning: {models}: judges.wenmind: judge 'j' ") and "prompts: official" in line
