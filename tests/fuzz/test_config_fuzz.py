"""No configuration crashes a loader: sources.yaml (load_sources, load_duplicate_policy,
load_dedup_params), models.yaml with its judges (load_models, load_judges), both together
(load_config) and corpora.yaml (pipeline.contamination.corpora.load_corpora) are fed arbitrary
YAML shapes (recursive dicts, lists and scalars dumped with yaml.safe_dump), shapes near the real
ones (the files' own keys with any values), YAML text of any characters, and bytes.

The property: the loader returns, or raises the project's ConfigError whose message is one line per
problem, each naming the file; never another exception.

Budget and the example database: tests/fuzz/fuzz_budget.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from fuzz_budget import budget, seeded  # noqa: F401 - seeded: the autouse fixture
from hypothesis import example, given
from hypothesis import strategies as st

from pipeline import benchmarks
from pipeline.config import (
    ENGINES,
    ConfigError,
    load_config,
    load_dedup_params,
    load_duplicate_policy,
    load_judges,
    load_models,
    load_sources,
)
from pipeline.config.judges import JudgeEntry
from pipeline.config.models import engine_entry
from pipeline.config.sources import DedupEntry, _SourceKeys
from pipeline.contamination.corpora import CorpusSpec, load_corpora

_CHARS = st.characters(exclude_categories=["Cs"])
NAMES = st.sampled_from(["wenmind", "aceval", "m", "oracle", "j", "x", "", "0", "a b", "../x", "nosuch", "a\rb", "\u2028"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(_CHARS, max_size=20),
                    st.sampled_from(["baseline", "oracle", "random", "openai", "vllm", "wenheng", "s1", "test",
                                     "dev", "http://127.0.0.1:9/v1", "/nonexistent", ".", "drop", "flag", "keep",
                                     "jsonl", "txt", "local", "ray", "foo://x", "*.jsonl", "~", "0" * 64]))
KEYS = st.one_of(SCALARS.filter(lambda k: not isinstance(k, float)), NAMES)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=10)


def keys_of(*models: Any) -> list[str]:
    return sorted({name for model in models for name in model.model_fields})


def entries(keys: list[str], fixed: dict[str, st.SearchStrategy] | None = None) -> st.SearchStrategy:
    """A mapping of some of `keys` (and a stray one) to any values."""
    known = st.dictionaries(st.sampled_from(keys), VALUES, max_size=5)
    return st.builds(lambda base, extra: {**base, **extra}, known, st.fixed_dictionaries(fixed or {}))


SOURCE = entries(keys_of(_SourceKeys))
MODEL = st.sampled_from(ENGINES).flatmap(
    lambda engine: entries(keys_of(engine_entry(engine)), {"engine": st.just(engine)}))
JUDGE = entries(keys_of(JudgeEntry))
CORPUS = entries(keys_of(CorpusSpec))


def named(entry: st.SearchStrategy, names: st.SearchStrategy = NAMES) -> st.SearchStrategy:
    return st.one_of(st.dictionaries(names, entry, max_size=3), VALUES)


SOURCES_FILE = st.fixed_dictionaries({}, optional={
    "benchmarks": named(SOURCE, st.one_of(st.sampled_from(sorted(benchmarks.names())), NAMES)),
    "duplicates": SCALARS, "quality": SCALARS, "dedup": st.one_of(entries(keys_of(DedupEntry)), VALUES),
    "nosuch": VALUES})
MODELS_FILE = st.fixed_dictionaries({}, optional={
    "models": named(MODEL), "judges": named(JUDGE, st.one_of(st.sampled_from(sorted(benchmarks.names())), NAMES)),
    "nosuch": VALUES})
CORPORA_FILE = st.fixed_dictionaries({}, optional={"corpora": named(CORPUS), "nosuch": VALUES})


@st.composite
def yaml_bytes(draw, shaped: st.SearchStrategy) -> bytes:
    """Any YAML shape, one near the file's own, YAML text of any characters, or bytes."""
    value = draw(st.one_of(shaped, VALUES))
    dumped = yaml.safe_dump(value, allow_unicode=draw(st.booleans()), default_flow_style=draw(st.booleans()))
    return draw(st.one_of(st.just(dumped.encode("utf-8")), st.text(_CHARS, max_size=200).map(str.encode),
                          st.binary(max_size=100)))


def refused_cleanly(exc: ConfigError, *files: Path) -> None:
    lines = str(exc).splitlines()
    assert lines and all(line.strip() for line in lines), str(exc)
    for line in lines:
        assert any(str(file) in line for file in files), line


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@example(b"benchmarks:\n  wenmind: {path: '.', version: [1]}\n")
@example(b"? [a, b]\n: 1\n")
@example(b"\xff\xfe")
@budget(80)
@given(data=yaml_bytes(SOURCES_FILE))
def test_a_sources_file_loads_or_is_refused_in_lines(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "sources.yaml", data)
        for load in (load_sources, load_duplicate_policy, load_dedup_params):
            try:
                load(path)
            except ConfigError as exc:
                refused_cleanly(exc, path)


@example(b"models:\n  m: {engine: openai, model: x, timeout_s: .inf}\n")
@example(b"judges: {wenmind: {model: m}}\nmodels:\n  m: {engine: baseline, strategy: oracle}\n")
@example(b'models:\n  "m\\r": {engine: baseline, strategy: oracle, "\\x85": 1}\njudges: {"\\u2029": 1}\n')
@budget(80)
@given(data=yaml_bytes(MODELS_FILE))
def test_a_models_file_loads_or_is_refused_in_lines(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "models.yaml", data)
        for load in (load_models, load_judges):
            try:
                load(path)
            except ConfigError as exc:
                refused_cleanly(exc, path)


@example(sources=b"{}\n", models=b'"\\r": null\n')   # a key holding a line break: shown escaped, one line
@budget(30)
@given(sources=yaml_bytes(SOURCES_FILE), models=yaml_bytes(MODELS_FILE))
def test_both_files_load_or_are_refused_together(sources, models):
    with tempfile.TemporaryDirectory() as tmp:
        files = write(Path(tmp), "sources.yaml", sources), write(Path(tmp), "models.yaml", models)
        try:
            load_config(*files)
        except ConfigError as exc:
            refused_cleanly(exc, *files)


@example(b"corpora:\n  c: {paths: ['foo://x'], fields: [text], version: 1}\n")
@example(b"corpora:\n  c: {paths: [], version: 1}\n")
@example(b"corpora: {'': {paths: x, version: 1}}\n")
@example(b'corpora: {"a\\rb": {paths: [nowhere], version: 1}, "c\\u2028": 1}\n')
@budget(80)
@given(data=yaml_bytes(CORPORA_FILE))
def test_a_corpora_file_loads_or_is_refused_in_lines(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "corpora.yaml", data)
        try:
            load_corpora(path)
        except ConfigError as exc:
            refused_cleanly(exc, path)
