"""The dedup parameters come from one place, `dedup:` in the sources file (each key a DedupParams
field, its default DedupParams'), and reach every dedup asset: a changed parameter changes every
signature's key_hash and the dedup assets' code version, and each materialization shows them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import ROOT

from assets.items import _dedup_params
from pipeline.config import ConfigError, load_dedup_params, load_sources
from pipeline.config.sources import DEDUP_VALUES, DedupEntry
from pipeline.dedup import DedupParams, item_signatures
from pipeline.ingest import parse_source
from pipeline.standardize import standardize
from resources.engines import SourcesResource

GOOD = "benchmarks:\n  wenmind: {path: x.json, version: s1}\n"
# a value other than the default for each parameter, all within its range
CHANGED = {"num_perm": 128, "threshold": 0.8, "contamination_threshold": 0.6, "ngram": 4, "short_ngram": 2,
           "short_len": 20, "template_ngram": 5, "template_share": 0.4, "template_min_items": 4,
           "lsh_recall": 0.95, "seed": 7}


def _sources(tmp_path: Path, top: str = "") -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(top + GOOD, encoding="utf-8")
    return path


def test_every_parameter_is_a_key_of_dedup_with_its_default():
    fields = [f.name for f in dataclasses.fields(DedupParams)]
    assert list(DEDUP_VALUES) == fields == list(DedupEntry.model_fields) and set(CHANGED) == set(fields)
    assert DedupEntry().params() == DedupParams()


@pytest.mark.parametrize("top", ["", "dedup:\n", "dedup: {}\n"])
def test_no_dedup_key_is_the_defaults(tmp_path, top):
    assert load_dedup_params(_sources(tmp_path, top)) == DedupParams()


def test_each_key_sets_its_parameter(tmp_path):
    text = "dedup:\n" + "".join(f"  {k}: {v}\n" for k, v in CHANGED.items())
    params = load_dedup_params(_sources(tmp_path, text))
    assert params == DedupParams(**CHANGED)
    one = load_dedup_params(_sources(tmp_path, "dedup: {threshold: 1}\n"))   # an integer is a number here
    assert one == dataclasses.replace(DedupParams(), threshold=1.0) and isinstance(one.threshold, float)


@pytest.mark.parametrize(("top", "line"), [
    ("dedup: {threshold: 2}\n", "dedup.threshold: expected a number > 0 and <= 1 (got 2)"),
    ("dedup: {nosuch: 1}\n", "dedup: unknown keys ['nosuch']"),
    ("dedup: {template_share: 0}\n", "dedup.template_share: expected a number > 0 and <= 1 (got 0)"),
    ("dedup: {short_len: -1}\n", "dedup.short_len: expected an integer >= 0 (got -1)"),
    ("dedup: {num_perm: 2}\n", "dedup.num_perm: num_perm 2 is too few permutations"),
    ("dedup: [0.9]\n", "dedup: expected a mapping of dedup parameters"),
])
def test_a_bad_parameter_is_one_line_naming_the_key(tmp_path, top, line):
    path = _sources(tmp_path, top)
    with pytest.raises(ConfigError) as caught:
        load_dedup_params(path)
    (message,) = str(caught.value).splitlines()
    assert message.startswith(f"{path}: {line}")
    # the run's own check of the file (load_config) reads the same key
    with pytest.raises(ConfigError, match="dedup"):
        load_sources(path)


def _sample_items() -> list[dict]:
    specs = load_sources(ROOT / "data" / "sources.yaml")
    return standardize([i for spec in specs.values() for i in parse_source(spec).items])[0]


@pytest.mark.parametrize("field", list(CHANGED))
def test_a_changed_parameter_changes_every_key_hash(field):
    items = _sample_items()[:40]
    before = [r["key_hash"] for r in item_signatures(items)[0]]
    after = [r["key_hash"] for r in item_signatures(items, dataclasses.replace(DedupParams(),
                                                                               **{field: CHANGED[field]}))[0]]
    assert len(before) == len(after) == 40 and not set(before) & set(after)


def test_the_assets_read_the_parameters_once_and_show_them(tmp_path):
    path = _sources(tmp_path, "dedup: {threshold: 0.8, seed: 3}\n")
    params, shown = _dedup_params(SourcesResource(sources_file=str(path)))
    assert params == DedupParams(threshold=0.8, seed=3)
    assert json.loads(json.dumps(shown["dedup_params"].data)) == dataclasses.asdict(params)
