"""Broken configuration stops `wenheng run` before any stage: exit code 2, one line per problem on
stderr naming the file, the key and the value with what is expected, never a traceback.

CASES is the bad-config corpus: a broken sources.yaml, models.yaml or corpora.yaml (beside good
other files), correction files, variables, the response cache, or a bad command line (`args`). config_corpus.py (beside this file) runs it against any checkout, as
subprocesses, and counts clean one-line errors, tracebacks and configurations silently accepted
(a stage started or exit 0)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from conftest import ROOT

from pipeline import cli

SAMPLES = ROOT / "data" / "samples"
CORPUS = Path(__file__).parent / "corpus"
WENMIND = SAMPLES / "wenmind" / "WenMind_sample.json"
ACEVAL = SAMPLES / "aceval"
GOOD_SOURCES = f"benchmarks:\n  wenmind: {{path: {WENMIND}, version: s1}}\n"
GOOD_MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n"
JUDGE_MODELS = GOOD_MODELS + "  j: {engine: openai, model: x, base_url: 'http://127.0.0.1:9/v1', api_key_env: null}\n"
UNSET_KEY = "WENHENG_CORPUS_UNSET_KEY"   # never set: the api_key_env cases name it
OPENAI = "    engine: openai\n    model: x\n    base_url: http://127.0.0.1:9/v1\n    api_key_env: null\n"


def _models(entry: str) -> str:
    return f"models:\n  m:\n{entry}"


def _source(name: str, entry: str) -> str:
    return f"benchmarks:\n  {name}: {{{entry}}}\n"


def _aceval(extra: str = "", path: Path = ACEVAL) -> str:
    return _source("aceval", f"path: '{path}', version: s1{extra}")


def _wenmind(extra: str = "", path: str = str(WENMIND)) -> str:
    return _source("wenmind", f"path: '{path}', version: s1{extra}")


def _corpora(extra: str = "", path: str = "['{dir}/data.jsonl']", fields: str | None = "[text]") -> str:
    """corpora.yaml with one corpus `web` (`{dir}`: the case's folder, corpora_file)."""
    return f"corpora:\n  web: {{paths: {path}{f', fields: {fields}' if fields else ''}, version: 1{extra}}}\n"


BASELINE = "    engine: baseline\n    strategy: oracle\n"
URL = "url: http://127.0.0.1:9/x.json"
SHA = "0123456789abcdef" * 4

# (name, what is broken: sources | models | args | corrections | env | cache | corpora, its text (str
# or bytes; args: a list; corrections: file name -> bytes; env: variable -> value, `{file}` a file
# made for the case; cache: the response cache's bytes; corpora: corpora.yaml, `{dir}` its folder,
# see corpora_file), [what each problem line must name: a key, or a tuple of fragments that must
# all be in the line])
CASES = [
    # -- sources.yaml: the file and its keys
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
    # -- sources.yaml: `dedup:`, the dedup parameters
    ("dedup_threshold_above_one", "sources", GOOD_SOURCES + "dedup: {threshold: 2}\n",
     [("dedup.threshold", "expected a number > 0 and <= 1", "(got 2)")]),
    ("dedup_unknown_key", "sources", GOOD_SOURCES + "dedup: {nosuch: 1}\n",
     [("dedup", "unknown keys ['nosuch']", "threshold")]),
    ("dedup_not_mapping", "sources", GOOD_SOURCES + "dedup: 0.9\n", [("dedup", "expected a mapping", "(got 0.9)")]),
    ("dedup_ngram_float", "sources", GOOD_SOURCES + "dedup: {ngram: 4.5}\n",
     [("dedup.ngram", "expected an integer >= 1", "(got 4.5)")]),
    ("dedup_lsh_recall_one", "sources", GOOD_SOURCES + "dedup: {lsh_recall: 1}\n",
     [("dedup.lsh_recall", "> 0 and < 1", "(got 1)")]),
    ("dedup_too_few_permutations", "sources", GOOD_SOURCES + "dedup: {num_perm: 4}\n",
     [("dedup.num_perm", "too few permutations")]),
    ("dedup_every_bad_key", "sources", GOOD_SOURCES + "dedup: {threshold: -1, seed: x, contamination_threshold: 0}\n",
     ["dedup.threshold", "dedup.contamination_threshold", "dedup.seed"]),
    ("sources_bad_yaml", "sources", "benchmarks:\n  wenmind: {path: x\n", ["line"]),
    ("sources_no_benchmarks", "sources", "benchmarks: {}\n", [("benchmarks", "no benchmarks configured")]),
    ("sources_entry_not_mapping", "sources", "benchmarks:\n  wenmind: WenMind.json\n",
     [("benchmarks.wenmind", "'WenMind.json'")]),
    ("sources_entry_unknown_key", "sources", _wenmind(", pth: x"), [("benchmarks.wenmind", "'pth'")]),
    ("sources_path_and_url", "sources", _wenmind(f", {URL}"), [("benchmarks.wenmind", "either a 'path' or a 'url'")]),
    ("sources_list_as_key", "sources", "benchmarks:\n  ? [wenmind, aceval]\n  : {path: x, version: s1}\n",
     [("line 2", "a key must be a name or a number, not ['wenmind', 'aceval']")]),
    ("sources_bad_quality", "sources", _wenmind(", quality: sometimes"), [("benchmarks.wenmind", "'sometimes'")]),
    # -- sources.yaml: a path that is not the benchmark's files
    ("path_missing", "sources", _wenmind(path="nowhere.json"),
     [("benchmarks.wenmind.path", "nowhere.json does not exist", "expected a WenMind JSON file")]),
    ("path_empty", "sources", _wenmind(path=""), [("benchmarks.wenmind.path", "(got '')")]),
    ("path_number", "sources", "benchmarks:\n  wenmind: {path: 42, version: s1}\n",
     [("benchmarks.wenmind.path", "(got 42)")]),
    ("path_list", "sources", "benchmarks:\n  wenmind: {path: [a, b], version: s1}\n",
     [("benchmarks.wenmind.path", "(got ['a', 'b'])")]),
    ("path_file_for_folder", "sources", _aceval(path=ACEVAL / "dev" / "translation.csv"),
     [("benchmarks.aceval.path", "translation.csv is a file; expected a folder")]),
    ("path_wyweb_file", "sources", _source("wyweb", f"path: '{WENMIND}', version: s1"),
     [("benchmarks.wyweb.path", "is a file; expected a folder of <task>/<split>.<ext> files")]),
    ("path_folder_without_layout", "sources", _wenmind(path=str(ACEVAL)),
     [("benchmarks.wenmind.path", "holds no wenmind file", "allow_empty")]),
    ("path_jsonl_folder_without_files", "sources", _source("fuxi", f"path: '{SAMPLES / 'wyweb'}', version: s1"),
     [("benchmarks.fuxi.path", "holds no fuxi file; expected a .jsonl file")]),
    ("path_nul_byte", "sources", 'benchmarks:\n  wenmind: {path: "x\\0y.json", version: s1}\n',
     [("benchmarks.wenmind.path", "holds no NUL character", "(got 'x\\x00y.json')")]),
    ("subpath_nul_byte", "sources", _source("wenmind", f'{URL}, sha256: {SHA}, subpath: "a\\0b"'),
     [("benchmarks.wenmind.subpath", "holds no NUL character")]),
    ("allow_empty_not_boolean", "sources", _wenmind(", allow_empty: maybe"),
     [("benchmarks.wenmind.allow_empty", "expected true or false (got 'maybe')")]),
    ("mapping_broken_json", "sources", _aceval(", evaluate: [dev]", CORPUS / "aceval" / "mapping_broken_json"),
     [("benchmarks.aceval.path", "subject_mapping.json is not valid JSON")]),
    ("mapping_not_utf8", "sources", _aceval(", evaluate: [dev]", CORPUS / "aceval" / "mapping_not_utf8"),
     [("benchmarks.aceval.path", "subject_mapping.json is not UTF-8")]),
    ("mapping_not_object", "sources", _aceval(", evaluate: [dev]", CORPUS / "aceval" / "mapping_not_object"),
     [("benchmarks.aceval.path", "subject_mapping.json is an array; expected an object")]),
    # -- sources.yaml: splits the files do not hold
    ("evaluate_unknown_split", "sources", _aceval(", evaluate: [nosuch]"),
     [("benchmarks.aceval.evaluate", "'nosuch'", "the source has dev, test")]),
    ("splits_unknown_split", "sources", _aceval(", splits: [nosuch]"),
     [("benchmarks.aceval.splits", "'nosuch'", "the source has dev, test")]),
    ("splits_wenmind_has_test_only", "sources", _wenmind(", splits: [dev]"),
     [("benchmarks.wenmind.splits", "'dev'", "the source has test")]),
    ("evaluate_not_ingested", "sources", _aceval(", splits: [dev], evaluate: [test]"),
     [("benchmarks.aceval.evaluate", "'test' is not ingested")]),
    ("evaluate_default_not_ingested", "sources", _aceval(", splits: [dev]"),
     [("benchmarks.aceval.evaluate", "not set, so test would be asked", "evaluate: [dev]")]),
    ("evaluate_not_list", "sources", _aceval(", evaluate: dev"),
     [("benchmarks.aceval.evaluate", "(got 'dev')")]),
    ("splits_numbers", "sources", _aceval(", splits: [1, 2]"), [("benchmarks.aceval.splits", "(got [1, 2])")]),
    # -- sources.yaml: url sources
    ("url_without_sha256", "sources", _source("wenmind", f"{URL}, version: s1"), [("benchmarks.wenmind.sha256", "needs 'sha256'")]),
    ("url_ftp", "sources", _source("wenmind", f"url: 'ftp://127.0.0.1/x.json', sha256: {SHA}, version: s1"),
     [("benchmarks.wenmind.url", "(got 'ftp://127.0.0.1/x.json')")]),
    ("url_subpath_escapes", "sources", _source("wenmind", f"{URL}, sha256: {SHA}, subpath: ../x"),
     [("benchmarks.wenmind.subpath", "must stay inside")]),
    ("url_limit_on_path", "sources", _wenmind(", max_bytes: 10"), [("benchmarks.wenmind", "max_bytes only apply")]),
    ("url_bad_limit", "sources", _source("wenmind", f"{URL}, sha256: {SHA}, max_bytes: lots"),
     [("benchmarks.wenmind", "max_bytes must be a size")]),
    # -- models.yaml: the file and its keys
    ("models_not_utf8", "models", "models:\n  m: {engine: baseline, strategy: \xff}\n".encode("latin-1"), ["UTF-8"]),
    ("models_top_string", "models", "just a string\n", ["top level"]),
    ("models_empty", "models", "models: {}\n", [("models", "at least one model")]),
    ("models_duplicate_model", "models", GOOD_MODELS + "  oracle: {engine: baseline, strategy: random}\n",
     ["oracle"]),
    ("models_duplicate_param", "models", _models("    engine: baseline\n    strategy: oracle\n    strategy: random\n"),
     ["strategy"]),
    ("model_name_integer", "models", "models:\n  42: {engine: baseline, strategy: oracle}\n",
     [("models.42", "(got 42)", "quote")]),
    ("model_name_boolean", "models", "models:\n  yes: {engine: baseline, strategy: oracle}\n",
     [("models.True", "(got True)")]),
    ("models_list_as_key", "models", "models:\n  ? [a, b]\n  : {engine: baseline, strategy: oracle}\n",
     [("line 2", "a key must be a name or a number")]),
    ("judges_list_as_key", "models", GOOD_MODELS + "judges:\n  ? [wenmind]\n  : {model: oracle}\n",
     [("line 4", "a key must be a name or a number")]),
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
    ("settings_not_list", "models",
     _models("    engine: baseline\n    strategy: oracle\n    settings: {aceval: zero_shot_ao}\n"),
     [("models.m.settings.aceval", "'zero_shot_ao'")]),
    ("engine_unknown", "models", _models("    engine: tgi\n"),
     [("models.m: engine must be one of vllm, openai, baseline", "(got 'tgi')")]),
    # -- models.yaml: engine parameters, each against its engine's declared type and rules
    ("baseline_unknown_param", "models", _models("    engine: baseline\n    strategy: oracle\n    temprature: 1\n"),
     ["models.m"]),
    ("baseline_bad_strategy", "models", _models("    engine: baseline\n    strategy: clever\n"), ["models.m"]),
    ("baseline_seed_string", "models", _models("    engine: baseline\n    strategy: random\n    seed: '3'\n"),
     [("models.m.seed", "expected an integer (got '3')")]),
    ("openai_unknown_param", "models", _models(OPENAI + "    concurency: 4\n"), ["models.m"]),
    ("openai_missing_model", "models", _models("    engine: openai\n    base_url: http://127.0.0.1:9/v1\n"),
     ["models.m"]),
    ("openai_bad_concurrency", "models", _models(OPENAI + "    concurrency: 0\n"),
     [("models.m.concurrency", ">= 1 (got 0)")]),
    ("openai_concurrency_float", "models", _models(OPENAI + "    concurrency: 2.5\n"),
     [("models.m.concurrency", "an integer >= 1", "(got 2.5)")]),
    ("openai_timeout_negative", "models", _models(OPENAI + "    timeout_s: -1\n"),
     [("models.m.timeout_s", "> 0", "(got -1)")]),
    ("openai_timeout_word", "models", _models(OPENAI + "    timeout_s: fast\n"),
     [("models.m.timeout_s", "a number", "(got 'fast')")]),
    ("openai_timeout_infinite", "models", _models(OPENAI + "    timeout_s: .inf\n"),
     [("models.m.timeout_s", "(got inf)")]),
    ("openai_max_retries_huge", "models", _models(OPENAI + "    max_retries: 1000000000\n"),
     [("models.m.max_retries", "from 0 to 20", "(got 1000000000)")]),
    ("openai_max_retries_negative", "models", _models(OPENAI + "    max_retries: -1\n"),
     [("models.m.max_retries", "from 0 to 20")]),
    ("openai_chat_maybe", "models", _models(OPENAI + "    chat: maybe\n"),
     [("models.m.chat", "expected true or false (got 'maybe')")]),
    ("openai_model_empty", "models", _models(OPENAI.replace("model: x", "model: ''")),
     [("models.m.model", "not empty")]),
    ("openai_model_number", "models", _models(OPENAI.replace("model: x", "model: 7")),
     [("models.m.model", "expected a string", "(got 7)")]),
    ("openai_base_url_no_scheme", "models", _models(OPENAI.replace("http://127.0.0.1:9/v1", "localhost:8000")),
     [("models.m.base_url", "http://", "(got 'localhost:8000')")]),
    ("openai_base_url_number", "models", _models(OPENAI.replace("http://127.0.0.1:9/v1", "8000")),
     [("models.m.base_url", "(got 8000)")]),
    ("openai_seed_float", "models", _models(OPENAI + "    seed: 1.5\n"), [("models.m.seed", "(got 1.5)")]),
    ("openai_extra_body_list", "models", _models(OPENAI + "    extra_body: [1]\n"),
     [("models.m.extra_body", "a mapping")]),
    ("openai_api_key_env_not_a_name", "models", _models(OPENAI.replace("api_key_env: null", "api_key_env: 'my key'")),
     [("models.m.api_key_env", "(got 'my key')")]),
    ("openai_api_key_unset", "models", _models(OPENAI.replace("api_key_env: null", f"api_key_env: {UNSET_KEY}")),
     [("models.m.api_key_env", UNSET_KEY, "is not set")]),
    ("openai_default_api_key_unset", "models", _models(OPENAI.replace("    api_key_env: null\n", "")),
     [("models.m.api_key_env", "OPENAI_API_KEY (the default) is not set")]),
    ("openai_revision_list", "models", _models(OPENAI + "    revision: [r1, r2]\n"), ["models.m.revision"]),
    ("openai_every_bad_key", "models", _models(OPENAI + "    timeout_s: -1\n    chat: maybe\n    max_retries: 99\n"),
     ["models.m.chat", "models.m.timeout_s", "models.m.max_retries"]),   # in the engine's parameter order
    ("vllm_unknown_param", "models", _models("    engine: vllm\n    model: x\n    gpu_memory_utilisation: 0.5\n"),
     ["models.m"]),
    ("vllm_tensor_parallel_zero", "models", _models("    engine: vllm\n    model: x\n    tensor_parallel_size: 0\n"),
     ["models.m.tensor_parallel_size"]),
    ("vllm_parallel_sizes_not_ints", "models",
     _models("    engine: vllm\n    model: x\n    pipeline_parallel_size: two\n    data_parallel_size: 1.5\n"),
     ["models.m.pipeline_parallel_size", "models.m.data_parallel_size"]),
    ("vllm_data_parallel_offline", "models", _models("    engine: vllm\n    model: x\n    data_parallel_size: 2\n"),
     ["models.m"]),
    ("vllm_max_model_len_zero", "models", _models("    engine: vllm\n    model: x\n    max_model_len: 0\n"),
     [("models.m.max_model_len", ">= 1")]),
    ("vllm_chat_template_number", "models", _models("    engine: vllm\n    model: x\n    chat_template: 3\n"),
     [("models.m.chat_template", "(got 3)")]),
    ("vllm_model_path_missing", "models", _models("    engine: vllm\n    model: /nonexistent/model\n"),
     [("models.m.model", "/nonexistent/model does not exist", "config.json")]),
    ("vllm_model_folder_without_config", "models", _models(f"    engine: vllm\n    model: '{SAMPLES}'\n"),
     [("models.m.model", "holds no config.json")]),
    ("judge_unknown_model", "models", GOOD_MODELS + "judges:\n  wenmind: {model: nobody}\n",
     ["judges.wenmind.model"]),
    ("judge_baseline_model", "models", GOOD_MODELS + "judges:\n  wenmind: {model: oracle}\n",
     [("judges.wenmind.model", "baseline")]),
    ("judge_unknown_key", "models", GOOD_MODELS + "judges:\n  wenmind: {model: oracle, tempreature: 0}\n",
     ["judges.wenmind.tempreature", "judges.wenmind.model"]),
    ("judge_unknown_benchmark", "models", GOOD_MODELS + "judges:\n  nosuch: {model: oracle}\n", ["judges.nosuch"]),
    ("models_unknown_top", "models", GOOD_MODELS + "judge:\n  wenmind: {model: oracle}\n", ["judge"]),
    # -- values of a type the key does not take (`false` or 0 is not `null`: only null means the default)
    ("sources_sha256_list_on_path", "sources", _wenmind(", sha256: [a]"),
     [("benchmarks.wenmind.sha256", "expected a string", "(got ['a'])")]),
    ("sampling_false", "models", _models("    engine: baseline\n    strategy: oracle\n    sampling: false\n"),
     [("models.m.sampling", "expected a mapping with some of ['max_tokens', 'temperature']", "(got False)")]),
    ("sampling_max_tokens_float", "models",
     _models("    engine: baseline\n    strategy: oracle\n    sampling: {max_tokens: 64.0}\n"),
     [("models.m.sampling.max_tokens", "an integer >= 1", "(got 64.0)")]),
    ("variants_zero", "models", _models("    engine: baseline\n    strategy: oracle\n    variants: 0\n"),
     [("models.m.variants", "expected a list", "(got 0)")]),
    ("judges_false", "models", GOOD_MODELS + "judges: false\n", [("judges", "expected a mapping", "(got False)")]),
    # -- judges and their models: each value typed, every problem of the file reported together
    ("judges_list_beside_a_broken_model", "models",
     GOOD_MODELS + "  bad: {engine: baseline, strategy: oracle, seed: x}\njudges: [wenmind]\n",
     [("judges", "expected a mapping", "(got ['wenmind'])"), ("models.bad.seed", "(got 'x')")]),
    ("judge_model_negative_concurrency", "models", JUDGE_MODELS.replace("api_key_env: null", "concurrency: -2")
     + "judges:\n  wenmind: {model: j}\n", [("models.j.concurrency", "an integer >= 1", "(got -2)")]),
    ("judge_max_tokens_float", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, max_tokens: 2.0}\n",
     [("judges.wenmind.max_tokens", "expected an integer >= 1", "(got 2.0)")]),
    ("judge_reliability_list", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, reliability: [1, 2]}\n",
     [("judges.wenmind.reliability", "expected a mapping with some of", "(got [1, 2])")]),
    ("judge_reliability_zero", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, reliability: 0}\n",
     [("judges.wenmind.reliability", "expected a mapping with some of", "(got 0)")]),
    ("judge_reliability_repeats_float", "models",
     JUDGE_MODELS + "judges:\n  wenmind: {model: j, reliability: {repeats: 2.5, temperature: .nan}}\n",
     [("judges.wenmind.reliability.temperature", "repeats need a number > 0 and <= 2", "(got nan)"),
      ("judges.wenmind.reliability.repeats", "expected an integer >= 0", "(got 2.5)")]),
    ("judge_prompts_without_file", "models",
     JUDGE_MODELS + f"judges:\n  wenmind: {{model: j, prompts: {{sha256: {SHA}}}}}\n",
     [("judges.wenmind.prompts.official", "missing")]),
    # -- correction files, the environment and the response cache (`case_environment`)
    ("corrections_yaml_not_utf8", "corrections",
     {"fix.yaml": "benchmark: wenmind\ncorrections: []\n# caf\xe9\n".encode("latin-1")},
     [("fix.yaml", "not UTF-8 text")]),
    ("corrections_csv_not_utf8", "corrections",
     {"fix.csv": "item_id,field,old,new,reason,date\nwenmind/test/t/1,answer,\xe9,B,r,2026-01-01\n".encode("latin-1")},
     [("fix.csv", "not UTF-8 text")]),
    ("cards_folder_missing", "env", {"WENHENG_CARDS": "/nonexistent"},
     [("WENHENG_CARDS='/nonexistent'", "/nonexistent does not exist")]),
    ("lake_is_a_file", "env", {"WENHENG_LAKE": "{file}"}, [("WENHENG_LAKE=", "a folder path", "is a file")]),
    ("cache_is_a_file", "env", {"WENHENG_CACHE": "{file}"}, [("WENHENG_CACHE=", "a folder path", "is a file")]),
    ("response_cache_corrupt", "cache", b"not an SQLite file" * 300,
     [("responses.sqlite", "file is not a database")]),
    # -- the command line
    ("select_no_asset", "args", ["--select", "key:nosuch_asset"], [("--select 'key:nosuch_asset'", "matches no asset")]),
    ("select_unknown_key", "args", ["--select", "nosuch"], [("--select 'nosuch'", "nosuch")]),
    ("select_bad_syntax", "args", ["--select", "+++"], [("--select '+++'", "Invalid selection")]),
    ("select_empty_group", "args", ["--select", "group:nosuch"], [("--select 'group:nosuch'", "matches no asset")]),
    ("benchmark_unknown", "args", ["--benchmark", "nosuch"], [("unknown benchmark 'nosuch'", "known: wenmind")]),
    ("benchmark_not_configured", "args", ["--benchmark", "aceval"], [("benchmark aceval is not configured",)]),
    ("model_unknown", "args", ["--model", "nobody"], [("unknown models ['nobody']", "configured: oracle")]),
    ("limit_zero", "args", ["--limit", "0"], [("--limit", "expected a positive whole number, got '0'")]),
    # -- a key holding a line break (a carriage return, U+2028): shown escaped, the problem stays one line
    ("models_key_with_line_break", "models", 'models:\n  "m\\r": {engine: baseline, strategy: oracle}\n',
     [("models.m\\r:", "expected a name of letters", "(got 'm\\r')")]),
    ("corpora_name_with_line_break", "corpora", _corpora().replace("web:", '"we\\u2028b":'),
     [("corpora.we\\u2028b:", "the name may hold letters")]),
    ("sources_key_with_line_break", "sources", 'benchmarks:\n  "wen\\nmind": {path: x, version: 1}\n',
     [("benchmarks.wen\\nmind:", "unknown benchmark")]),
    # -- grown: corpora.yaml (`wenheng run` checks it before any stage), and more of each file
    ("corpora_unknown_protocol", "corpora", _corpora(path="['foo://x/a.jsonl']"),
     [('corpora.web: paths: foo://x/a.jsonl', "unknown protocol 'foo'")]),
    ("corpora_s3_without_s3fs", "corpora", _corpora(path="['s3://bucket/a.jsonl']"),
     [('corpora.web: paths: s3://bucket/a.jsonl', 'needs a package that is not installed', 's3fs')]),
    ("corpora_gcs_without_gcsfs", "corpora", _corpora(path="['gs://bucket/a.jsonl']"),
     [('corpora.web: paths: gs://bucket/a.jsonl', 'needs a package that is not installed', 'gcsfs')]),
    ("corpora_symlink_loop", "corpora", _corpora(path="['{dir}/loop/a.jsonl']"),
     [('corpora.web: paths:', 'loop/a.jsonl cannot be resolved (a symlink loop)')]),
    ("corpora_symlink_loop_file", "corpora", _corpora(path="['{dir}/loop.jsonl']"),
     [('corpora.web: paths:', 'loop.jsonl cannot be resolved (a symlink loop)')]),
    ("corpora_path_missing", "corpora", _corpora(path="['{dir}/nowhere.jsonl']"),
     [('corpora.web: paths:', 'nowhere.jsonl does not exist')]),
    ("corpora_glob_matches_nothing", "corpora", _corpora(path="['{dir}/*.parquet']"),
     [('corpora.web: paths:', '*.parquet does not exist (or the glob matches no file)')]),
    ("corpora_paths_empty", "corpora", _corpora(path="[]"), [('corpora.web.paths', 'at least 1 item', '(got [])')]),
    ("corpora_paths_number", "corpora", _corpora(path="42"), [('corpora.web.paths', '(got 42)')]),
    ("corpora_unknown_key", "corpora", _corpora(", feilds: [text]"), [('corpora.web.feilds', 'unknown key')]),
    ("corpora_bad_format", "corpora", _corpora(", format: csv"), [('corpora.web.format', "(got 'csv')")]),
    ("corpora_ngram_too_small", "corpora", _corpora(", ngram: 4"),
     [('corpora.web.ngram', 'greater than or equal to 5', '(got 4)')]),
    ("corpora_ngram_too_large", "corpora", _corpora(", ngram: 65"),
     [('corpora.web.ngram', 'less than or equal to 64', '(got 65)')]),
    ("corpora_ngram_float", "corpora", _corpora(", ngram: 7.5"), [('corpora.web.ngram', '(got 7.5)')]),
    ("corpora_threshold_zero", "corpora", _corpora(", threshold: 0"),
     [('corpora.web.threshold', 'greater than 0', '(got 0)')]),
    ("corpora_threshold_above_one", "corpora", _corpora(", threshold: 2"),
     [('corpora.web.threshold', 'less than or equal to 1', '(got 2)')]),
    ("corpora_unknown_engine", "corpora", _corpora(", engine: spark"),
     [('corpora.web.engine', "'local' or 'ray'", "(got 'spark')")]),
    ("corpora_reference_maybe", "corpora", _corpora(", reference: maybe"),
     [('corpora.web.reference', "(got 'maybe')")]),
    ("corpora_id_field_list", "corpora", _corpora(", id_field: [a, b]"),
     [('corpora.web.id_field', "(got ['a', 'b'])")]),
    ("corpora_fields_missing", "corpora", _corpora(fields=None),
     [('corpora.web: fields:', 'name the key(s) that hold the text')]),
    ("corpora_version_missing", "corpora", _corpora().replace(", version: 1", ""),
     [('corpora.web.version', 'required')]),
    ("corpora_bad_name", "corpora", _corpora().replace("web:", "'my web':"),
     [('corpora.my web', 'the name may hold letters', "(got 'my web')")]),
    ("corpora_format_unknowable", "corpora", _corpora(path="['{dir}/data.dat']"),
     [('corpora.web: format:', '.dat is none of')]),
    ("corpora_not_mapping", "corpora", "corpora: [web]\n", [('corpora:', "(got ['web'])")]),
    ("corpora_entry_not_mapping", "corpora", "corpora:\n  web: '{dir}/data.jsonl'\n",
     [('corpora.web:', 'valid dictionary')]),
    ("corpora_top_unknown", "corpora", _corpora().replace("corpora:", "corpus:"),
     [('corpus: unknown key',)]),
    ("corpora_top_list", "corpora", "- web\n", [('top level', '(got list)')]),
    ("corpora_bad_yaml", "corpora", "corpora:\n  web: {paths: [\n", [('not valid YAML at line 3',)]),
    ("corpora_not_utf8", "corpora", "corpora:\n  web: {paths: [caf\xe9], version: 1}\n".encode("latin-1"),
     [('not UTF-8 text',)]),
    ("corpora_duplicate_name", "corpora", _corpora() + "  web: {paths: [x], version: 2}\n",
     [("duplicate key 'web'",)]),
    ("corpora_every_bad_key", "corpora", _corpora(", ngram: 3, threshold: -1, engine: spark"),
     ['corpora.web.ngram', 'corpora.web.threshold', 'corpora.web.engine']),
    ("corpora_two_broken", "corpora", _corpora(path="['foo://x']") + "  other: {paths: ['{dir}/no'], fields: [t], version: 1}\n",
     [('corpora.web: paths: foo://x', 'unknown protocol'), ('corpora.other: paths:', 'does not exist')]),
    ("corpora_ray_address_number", "corpora", _corpora(", ray_address: 7"), [('corpora.web.ray_address', '(got 7)')]),
    ("corpora_license_list", "corpora", _corpora(", license: [a]"), [('corpora.web.license', "(got ['a'])")]),
    ("corpora_fields_number", "corpora", _corpora(fields="3"),
     [('corpora.web.fields', '(got 3)')]),
    ("sources_empty_file", "sources", "", [('benchmarks', 'no benchmarks configured')]),
    ("sources_null_benchmarks", "sources", "benchmarks: null\n", [('benchmarks', 'no benchmarks configured')]),
    ("sources_benchmarks_string", "sources", "benchmarks: wenmind\n",
     [('benchmarks', 'expected a mapping', "(got 'wenmind')")]),
    ("sources_license_list", "sources", _wenmind(", license: [a, b]"),
     [('benchmarks.wenmind.license', "(got ['a', 'b'])")]),
    ("sources_quality_number", "sources", _wenmind(", quality: 3"),
     [('benchmarks.wenmind', 'quality must be one of drop, keep', '(got 3)')]),
    ("sources_duplicates_number", "sources", GOOD_SOURCES + "duplicates: 1\n",
     [('duplicates must be one of flag, drop', '(got 1)')]),
    ("dedup_seed_float", "sources", GOOD_SOURCES + "dedup: {seed: 1.5}\n", [('dedup.seed', '(got 1.5)')]),
    ("dedup_threshold_text", "sources", GOOD_SOURCES + "dedup: {threshold: high}\n",
     [('dedup.threshold', "(got 'high')")]),
    ("dedup_num_perm_zero", "sources", GOOD_SOURCES + "dedup: {num_perm: 0}\n",
     [('dedup.num_perm', '>= 2', '(got 0)')]),
    ("dedup_ngram_zero", "sources", GOOD_SOURCES + "dedup: {ngram: 0}\n", [('dedup.ngram', '>= 1', '(got 0)')]),
    ("dedup_list", "sources", GOOD_SOURCES + "dedup: [0.9]\n", [('dedup', 'expected a mapping', '(got [0.9])')]),
    ("path_tilde_missing", "sources", _wenmind(path="~/wenheng-nowhere/WenMind.json"),
     [('benchmarks.wenmind.path', 'wenheng-nowhere/WenMind.json does not exist')]),
    ("url_sha256_short", "sources", _source("wenmind", f"{URL}, sha256: abc, version: s1"),
     [('benchmarks.wenmind.sha256', '64 hex digits', "(got 'abc')")]),
    ("url_sha256_not_hex", "sources", _source("wenmind", f"{URL}, sha256: {'z' * 64}, version: s1"),
     [('benchmarks.wenmind.sha256', '64 hex digits')]),
    ("url_empty", "sources", _source("wenmind", f"url: '', sha256: {SHA}, version: s1"),
     [('benchmarks.wenmind.url', 'must start with http://', "(got '')")]),
    ("url_max_bytes_negative", "sources", _source("wenmind", f"{URL}, sha256: {SHA}, max_bytes: -5"),
     [('benchmarks.wenmind', 'max_bytes must be a size', '(got -5)')]),
    ("allow_empty_number", "sources", _wenmind(", allow_empty: 2"),
     [('benchmarks.wenmind.allow_empty', 'expected true or false', '(got 2)')]),
    ("models_list", "models", "models: [oracle]\n", [('models', 'expected a mapping', "(got ['oracle'])")]),
    ("models_null", "models", "models: null\n", [('models', 'at least one model', '(got None)')]),
    ("model_entry_string", "models", "models:\n  m: baseline\n",
     [('models.m', 'expected a mapping', "(got 'baseline')")]),
    ("model_missing_engine", "models", _models("    strategy: oracle\n"), [('models.m.engine', 'missing')]),
    ("model_unknown_engine", "models", _models("    engine: llamacpp\n    model: x\n"),
     [('models.m', 'engine must be one of', "(got 'llamacpp')")]),
    ("baseline_unknown_strategy", "models", _models("    engine: baseline\n    strategy: clever\n"),
     [('models.m', 'baseline strategy must be one of', "'clever'")]),
    ("baseline_strategy_number", "models", _models("    engine: baseline\n    strategy: 3\n"),
     [('models.m.strategy', '(got 3)')]),
    ("sampling_temperature_negative", "models", _models(BASELINE + "    sampling: {temperature: -1}\n"),
     [('models.m.sampling.temperature', 'from 0 to 2', '(got -1)')]),
    ("sampling_max_tokens_zero", "models", _models(BASELINE + "    sampling: {max_tokens: 0}\n"),
     [('models.m.sampling.max_tokens', '>= 1', '(got 0)')]),
    ("sampling_list", "models", _models(BASELINE + "    sampling: [1]\n"),
     [('models.m.sampling', 'expected a mapping with some of', '(got [1])')]),
    ("variants_string", "models", _models(BASELINE + "    variants: latin\n"),
     [('models.m.variants', 'expected a list', "(got 'latin')")]),
    ("openai_timeout_zero", "models", _models(OPENAI + "    timeout_s: 0\n"),
     [('models.m.timeout_s', '> 0', '(got 0)')]),
    ("openai_concurrency_zero", "models", _models(OPENAI + "    concurrency: 0\n"),
     [('models.m.concurrency', '>= 1', '(got 0)')]),
    ("openai_concurrency_text", "models", _models(OPENAI + "    concurrency: many\n"),
     [('models.m.concurrency', "(got 'many')")]),
    ("openai_extra_body_string", "models", _models(OPENAI + "    extra_body: '{}'\n"),
     [('models.m.extra_body', 'a mapping', "(got '{}')")]),
    ("openai_base_url_ftp", "models", _models(OPENAI.replace("http://127.0.0.1:9/v1", "ftp://127.0.0.1/v1")),
     [('models.m.base_url', 'http://', "(got 'ftp://127.0.0.1/v1')")]),
    ("vllm_model_empty", "models", _models("    engine: vllm\n    model: ''\n"), [('models.m.model', 'not empty')]),
    ("vllm_tensor_parallel_float", "models", _models("    engine: vllm\n    model: x\n    tensor_parallel_size: 1.5\n"),
     [('models.m.tensor_parallel_size', '(got 1.5)')]),
    ("judge_prompts_unknown", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, prompts: nosuch}\n",
     [('judges.wenmind.prompts', 'expected wenheng, official', "(got 'nosuch')")]),
    ("judge_entry_string", "models", JUDGE_MODELS + "judges:\n  wenmind: j\n",
     [('judges.wenmind', 'expected a mapping', "(got 'j')")]),
    ("judge_max_tokens_zero", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, max_tokens: 0}\n",
     [('judges.wenmind.max_tokens', '>= 1', '(got 0)')]),
    ("judge_reliability_unknown_key", "models", JUDGE_MODELS + "judges:\n  wenmind: {model: j, reliability: {again: 2}}\n",
     [('judges.wenmind.reliability.again', 'unknown key')]),
    ("models_bad_yaml", "models", "models:\n  m: {engine: baseline\n", [('not valid YAML at line 3',)]),
    ("models_top_list", "models", "- oracle\n", [('top level', '(got list)')]),
    ("limit_negative", "args", ["--limit", "-1"], [('--limit', "got '-1'")]),
    ("limit_text", "args", ["--limit", "abc"], [('--limit', "got 'abc'")]),
    ("model_two_unknown", "args", ["--model", "a", "--model", "b"],
     [("unknown models ['a', 'b']", 'configured: oracle')]),
    ("corrections_yaml_broken", "corrections", {"fix.yaml": b"benchmark: [wenmind\n"},
     [('fix.yaml', 'not valid YAML')]),
    ("corrections_unknown_benchmark", "corrections", {"fix.yaml": b"benchmark: nosuch\ncorrections: []\n"},
     [('fix.yaml', "benchmark 'nosuch' is not one of")]),
    ("corrections_csv_missing_column", "corrections", {"fix.csv": b"item_id,field,old,new\nwenmind/test/t/1,answer,A,B\n"},
     [('fix.csv', "missing columns ['reason', 'date']")]),
]


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

