"""The bad-config corpus, first part: broken sources.yaml and models.yaml beside a good other
file, correction files, variables, the response cache and the command line, with the helpers that
write them (config_cases_more.py holds the rest; test_config_errors.py runs them all)."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

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
]
