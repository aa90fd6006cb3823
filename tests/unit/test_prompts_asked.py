"""Prompt rows only for the (variant, setting) pairs a configured model asks: each row the row the
full build gives, in the same order; the pairs follow models.yaml, and so does the prompts asset's
code version."""

from __future__ import annotations

from collections import Counter
from itertools import product

import duckdb
import pyarrow as pa
import pytest
from conftest import ROOT, write_yaml
from test_prompts_linear import _sample_items, _synthetic, _variants

from pipeline.config import ModelSpec
from pipeline.prompts import asked_pairs, build_prompt_columns, build_prompt_rows, protocol, variants_built
from pipeline.runner import run_pipeline
from pipeline.schema import PROMPTS, VARIANTS, to_frame


def _every_pair(benchmark: str) -> set[tuple[str, str]]:
    return set(product(VARIANTS, protocol(benchmark).settings))


def _check(items, asked, evaluate=None, limit=None):
    variants = _variants(items)
    full = build_prompt_rows(items, variants, evaluate, limit=limit)
    rows = build_prompt_rows(items, variants, evaluate, limit=limit, asked=asked)
    want = [r for r in full if (r["variant"], r["setting"]) in asked.get(r["benchmark"], ())]
    assert rows == want
    columns = build_prompt_columns(items, variants, evaluate, limit=limit, asked=asked)
    assert pa.Table.from_pydict(columns, schema=PROMPTS).equals(pa.Table.from_pandas(to_frame(want, PROMPTS),
                                                                                     schema=PROMPTS))
    return rows


def test_the_asked_pairs_give_the_full_builds_rows_of_those_pairs():
    items = _sample_items()
    benches = {it["benchmark"] for it in items}
    one = {b: {("original", protocol(b).default_settings[0])} for b in benches}
    rows = _check(items, one)
    assert rows and {(r["variant"], r["setting"]) for r in rows} == {p for b in benches for p in one[b]}
    mixed = {"aceval": {("simplified", "five_shot_ao"), ("original", "zero_shot_cot"),
                        ("traditional", "five_shot_cot")},
             "wenmind": {("traditional", "question_only")}}
    rows = _check(items, mixed)
    assert {r["benchmark"] for r in rows} == {"aceval", "wenmind"}   # the others: no model asks them
    everything = {b: _every_pair(b) for b in benches}
    assert _check(items, everything) == build_prompt_rows(items, _variants(items))


def test_few_shot_rows_are_the_same_whichever_other_pairs_are_asked():
    """Shots come from the pools of the item's own variant: asking five_shot_ao in simplified
    alone, or also zero_shot_ao in original, changes none of its rows."""
    items = _synthetic()
    evaluate = {"aceval": ["dev", "test"]}
    alone = _check(items, {"aceval": {("simplified", "five_shot_ao")}}, evaluate)
    both = _check(items, {"aceval": {("simplified", "five_shot_ao"), ("original", "zero_shot_ao")}}, evaluate)
    assert alone == [r for r in both if r["variant"] == "simplified"]
    assert any(r["messages"][0]["content"].count("示例") == 5 for r in alone)


def test_the_limit_picks_the_same_items():
    items = _synthetic()
    asked = {"aceval": {("original", "zero_shot_ao")}, "wyweb": {("traditional", "verbalized")}}
    rows = _check(items, asked, {"aceval": ["dev", "test"]}, limit=30)
    assert Counter(r["benchmark"] for r in rows) == {"aceval": 30, "wyweb": 30}


def test_an_unknown_setting_is_refused():
    items = _sample_items()
    with pytest.raises(ValueError, match="unknown settings"):
        build_prompt_rows(items, _variants(items), asked={"aceval": {("original", "no_such_setting")}})


def test_asked_pairs_are_each_models_variants_times_its_settings():
    default = protocol("aceval").default_settings
    plain = ModelSpec("a", "baseline")
    assert asked_pairs([plain], "aceval") == {("original", s) for s in default}
    scripts = ModelSpec("b", "baseline", variants=("simplified", "traditional"),
                        settings={"aceval": ("five_shot_ao", "zero_shot_cot"), "wenmind": ("question_only",)})
    assert asked_pairs([plain, scripts], "aceval") == {("original", s) for s in default} | {
        (v, s) for v in ("simplified", "traditional") for s in ("five_shot_ao", "zero_shot_cot")}
    assert asked_pairs([scripts], "wyweb") == {(v, s) for v in ("simplified", "traditional")
                                               for s in protocol("wyweb").default_settings}


def test_every_item_gets_the_three_scripts_and_the_regional_forms_a_model_asks():
    plain = ModelSpec("a", "baseline")
    regional = ModelSpec("b", "baseline", variants=("traditional_tw", "simplified"))
    assert variants_built([plain]) == list(VARIANTS)
    assert variants_built([plain, regional]) == [*VARIANTS, "traditional_tw"]


MODELS = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
"""


def test_a_model_added_to_models_yaml_gets_its_rows_at_the_next_run(workdir, monkeypatch):
    """The next `wenheng run` builds the new pairs; the rows of the pairs built before stay the same."""
    def prompt_rows() -> dict[tuple, tuple]:
        with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
            return {row[:3]: row[3:] for row in con.execute(
                "SELECT item_id, variant, setting, messages, max_tokens, prompt_hash FROM prompts").fetchall()}

    models = workdir / "models.yaml"
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(models, MODELS)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    assert run_pipeline(["wyweb"], ["random"], log=lambda _: None).ok
    before = prompt_rows()
    assert {(v, s) for _, v, s in before} == {("original", s) for s in protocol("wyweb").default_settings}

    write_yaml(models, MODELS + "  scripts: {engine: baseline, strategy: random, variants: [traditional]}\n")
    summary = run_pipeline(["wyweb"], ["scripts"], log=lambda _: None)
    assert summary.ok
    after = prompt_rows()
    assert {key: after[key] for key in before} == before
    new = {(v, s) for _, v, s in set(after) - set(before)}
    assert new == {("traditional", s) for s in protocol("wyweb").default_settings}
    assert summary.metadata("responses", "wyweb|scripts")["prompts"] == len(after) - len(before) > 0
