"""`wenheng run` again after a change launches the runs the change calls for and no other: none on
unchanged inputs, a re-score without the model after a corrected gold, the model asked again
after a corrected question, every stage of a new model's partition."""

from __future__ import annotations

import shutil

import dagster as dg
import duckdb
import pandas as pd
import pytest
import yaml
from conftest import ROOT, write_yaml

from pipeline.definitions import defs
from pipeline.runner import RUN_TAG, run_pipeline
from pipeline.staleness import unsynced

# random's answers depend on the prompt only; the oracle's on the gold too (its cache keys hold it)
BASELINES = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
  oracle: {engine: baseline, strategy: oracle}
"""
EVALUATED = {"model_inputs", "responses", "judgements", "scores", "judge_reliability", "judge_validity"}


@pytest.fixture
def built(workdir, monkeypatch):
    """The AC-EVAL samples (copied, so a test can edit them) built once for both baselines."""
    samples = workdir / "samples"
    shutil.copytree(ROOT / "data" / "samples" / "aceval", samples)
    (workdir / "corrections").mkdir()
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(workdir / "corrections"))
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(
        workdir / "sources.yaml", f"benchmarks:\n  aceval: {{path: {samples}, version: v1, evaluate: [dev, test]}}\n")))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    assert run_pipeline(["aceval"], ["random", "oracle"], log=lambda _: None).ok
    return workdir


def _run(models=("random", "oracle"), corpora=()):
    """run_pipeline on aceval; returns its summary and its Dagster runs, (job, partition) -> assets."""
    summary = run_pipeline(["aceval"], list(models), log=lambda _: None, corpora=list(corpora))
    assert summary.ok
    runs = dg.DagsterInstance.get().get_runs(filters=dg.RunsFilter(tags={RUN_TAG: summary.run_tag}))
    return summary, {(run.job_name, run.tags.get("dagster/partition")):
                     {key.to_user_string() for key in run.asset_selection or ()} for run in runs}


def _materialized(summary, partition: str) -> set[str]:
    return {m["asset"] for m in summary.materializations if m["partition"] == partition}


def _correct(workdir, field: str, edit) -> str:
    """A correction of `field` of the first dev item with a gold; returns the item's id."""
    items = pd.read_parquet(workdir / "lake" / "items" / "aceval.parquet")
    item = items[(items["split"] == "dev") & items["answer"].notna()].sort_values("item_id").iloc[0]
    entry = {"item_id": item["item_id"], "field": field, "old": item[field], "new": edit(item[field]),
             "reason": "test", "date": "2026-11-22"}
    (workdir / "corrections" / f"{field}.yaml").write_text(
        yaml.safe_dump({"corrections": [entry]}, allow_unicode=True), encoding="utf-8")
    return item["item_id"]


def test_unchanged_inputs_launch_no_run(built):
    summary, runs = _run()
    assert runs == {} and summary.materializations == []
    assert summary.up_to_date == ["prepare [aceval]", "evaluate [aceval|random]", "evaluate [aceval|oracle]",
                                  "publish"]


def test_an_answer_correction_rescores_without_asking_the_model(built):
    item_id = _correct(built, "answer", lambda old: "B" if old != "B" else "C")
    # the corrections are observed as data (benchmark_corrections): once a plan has looked, the
    # UI's "unsynced" names the items as wenheng's plan does, and not the raw rows
    from pipeline.run_inputs import Inputs

    instance = dg.DagsterInstance.get()
    assert unsynced(instance, defs)[1] == []
    Inputs(instance, defs).prepare("aceval", [dg.AssetKey("items")])
    stale = unsynced(instance, defs)[1]
    assert "items [aceval]" in stale and "raw_items [aceval]" not in stale
    summary, runs = _run()
    # random reads no MCQ gold: what it reads (model_inputs), its prompts and its cache keys did not
    # change, so its evaluate run has no responses step
    assert runs[("evaluate", "aceval|random")] == EVALUATED - {"responses"}
    assert _materialized(summary, "aceval|random") == EVALUATED - {"responses"}
    # the oracle answers the gold: asked again, for the corrected item alone
    assert runs[("evaluate", "aceval|oracle")] == EVALUATED
    assert summary.metadata("responses", "aceval|oracle")["prompts_sent"] == 1
    assert set(runs) == {("prepare", "aceval"), ("evaluate", "aceval|random"), ("evaluate", "aceval|oracle"),
                         ("publish", None)}
    # corrections apply after the raw rows: the source files are not parsed again
    assert "raw_items" not in runs[("prepare", "aceval")] and "items" in runs[("prepare", "aceval")]
    with duckdb.connect(str(built / "warehouse.duckdb"), read_only=True) as con:
        gold, oracle = con.execute("""SELECT i.answer, s.score FROM items i JOIN scores s USING (item_id)
            WHERE item_id = ? AND s.model = 'oracle' AND s.kind = 'rule'""", [item_id]).fetchone()
        extracted, score = con.execute("""SELECT extracted, score FROM scores
            WHERE item_id = ? AND model = 'random' AND kind = 'rule'""", [item_id]).fetchone()
    assert gold in ("B", "C") and oracle == 1.0
    assert score == float(extracted == gold)   # re-scored against the corrected gold
    assert _run()[1] == {}   # and then nothing is left to do
    # and Dagster's own stale rule, the UI's "unsynced", agrees: random's responses, left alone, are
    # not stale by it either
    total, stale = unsynced(dg.DagsterInstance.get(), defs)
    assert total > 20 and stale == []


def test_a_changed_question_and_a_new_model_are_asked(built, monkeypatch):
    _correct(built, "question", lambda old: old + "？")
    summary, runs = _run()
    for model in ("random", "oracle"):
        assert runs[("evaluate", f"aceval|{model}")] == EVALUATED
        assert summary.metadata("responses", f"aceval|{model}")["prompts_sent"] == 1
    models = built / "models.yaml"
    write_yaml(models, models.read_text(encoding="utf-8") + "  other: {engine: baseline, strategy: random, seed: 1}\n")
    summary, runs = _run(["random", "oracle", "other"])
    # the prompts do not change (the same variants and settings are asked): only the new partition
    assert set(runs) == {("evaluate", "aceval|other"), ("publish", None)}
    assert runs[("evaluate", "aceval|other")] == EVALUATED
    assert summary.metadata("responses", "aceval|other")["prompts_sent"] == 12


def test_a_changed_model_setting_is_seen_by_dagsters_own_rule_once_observed(built):
    """models.yaml is observed as data (model_settings): once a plan has observed a changed seed,
    the UI's "unsynced" names that model's responses, as wenheng's plan does, and the rebuild
    leaves nothing unsynced."""
    from pipeline.run_inputs import Inputs

    instance = dg.DagsterInstance.get()
    assert unsynced(instance, defs)[1] == []
    write_yaml(built / "models.yaml", BASELINES.replace("seed: 0", "seed: 1"))
    assert unsynced(instance, defs)[1] == []     # nothing observed yet: Dagster cannot know
    Inputs(instance, defs).evaluate("aceval", "random", [dg.AssetKey("responses")])
    stale = unsynced(instance, defs)[1]
    assert "responses [aceval|random]" in stale and not any("oracle" in name for name in stale)
    summary, runs = _run()
    assert runs[("evaluate", "aceval|random")] >= {"responses"} and ("evaluate", "aceval|oracle") not in runs
    assert unsynced(instance, defs)[1] == []
    Inputs(instance, defs).evaluate("aceval", "random", [dg.AssetKey("responses")])   # the same: not reported again
    assert len(instance.fetch_observations(dg.AssetKey("model_settings"), limit=100).records) == 3


def test_a_changed_setting_of_the_sources_file_rebuilds_the_items(built):
    """A key of the sources file outside the benchmark's entry (dedup's parameters) is an input of
    the dedup stages, observed as data (dedup_settings): once a plan has looked, Dagster's own rule
    calls them stale with the definitions as loaded (no reload), and not the raw rows. A corpus
    scan reads the items' and their index's content, which did not change: it is not run again."""
    from pipeline.run_inputs import Inputs

    instance = dg.DagsterInstance.get()
    assert ("scan", "sample-web") in _run(corpora=["sample-web"])[1]   # the default corpus, scanned once
    sources = built / "sources.yaml"
    write_yaml(sources, "dedup: {threshold: 0.9}\n" + sources.read_text(encoding="utf-8"))   # the default
    assert _run()[1] == {}   # the parameters did not change
    write_yaml(sources, sources.read_text(encoding="utf-8").replace("0.9", "0.8"))
    Inputs(instance, defs).prepare("aceval", [dg.AssetKey("items")])
    stale = unsynced(instance, defs)[1]
    assert {"item_signatures [aceval]", "dedup_clusters [aceval]", "contamination"} <= set(stale)
    assert "raw_items [aceval]" not in stale and "items [aceval]" not in stale
    summary, runs = _run(corpora=["sample-web"])
    # each stage's fingerprint holds the configuration upstream of it: what reads the clusters runs
    assert runs[("prepare", "aceval")] == {"item_signatures", "dedup_clusters", "prompts"}
    assert "contamination" in runs[("publish", None)]
    assert not any(job == "scan" for job, _ in runs) and "scan [sample-web]" in summary.up_to_date
    assert unsynced(instance, defs)[1] == [] and _run(corpora=["sample-web"])[1] == {}


def test_a_pair_models_yaml_asks_is_seen_by_dagsters_own_rule_once_observed(built):
    """The pairs models.yaml asks are observed as data (prompt_settings): a model asking the
    traditional script makes the benchmark's variants and prompts stale by Dagster's rule, with the
    definitions as loaded, and the rebuild leaves nothing unsynced."""
    from pipeline.run_inputs import Inputs

    instance = dg.DagsterInstance.get()
    models = built / "models.yaml"
    write_yaml(models, models.read_text(encoding="utf-8").replace("seed: 0}", "seed: 0, variants: [traditional]}"))
    Inputs(instance, defs).prepare("aceval", [dg.AssetKey("prompts")])
    stale = set(unsynced(instance, defs)[1])
    assert {"item_variants [aceval]", "prompts [aceval]"} <= stale and "item_signatures [aceval]" not in stale
    summary, runs = _run()
    assert runs[("prepare", "aceval")] == {"item_variants", "prompts"}
    assert unsynced(instance, defs)[1] == [] and _run()[1] == {}


def _random_wywmt(workdir, samples, monkeypatch) -> dict[str, str]:
    """random's answers to the WYWEB translation samples at `samples`, built in `workdir`."""
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(
        workdir / "sources.yaml", f"benchmarks:\n  wyweb: {{path: {samples}, version: {samples.name}}}\n")))
    assert run_pipeline(["wyweb"], ["random"], log=lambda _: None).ok
    frame = pd.read_parquet(workdir / "lake" / "responses" / "wyweb" / "random.parquet")
    return dict(zip(frame["item_id"], frame["text"]))


def test_a_new_gold_of_an_open_item_gives_random_the_answers_of_a_build_from_scratch(workdir, monkeypatch):
    """random draws an open answer from the characters of its task's golds: a release that edits
    one translation's gold (no prompt changes) gives every translation of the task the answer a
    build from scratch on that release gives."""
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    v1, v2 = workdir / "v1", workdir / "v2"
    shutil.copytree(ROOT / "data" / "samples" / "wyweb" / "wywmt", v1 / "wywmt")
    shutil.copytree(v1, v2)
    lines = (v1 / "wywmt" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].split("\t")[0] + "\t温习旧课，按时复习，岂不快乐？"
    (v2 / "wywmt" / "dev.tsv").write_text("\n".join(lines), encoding="utf-8")
    before = _random_wywmt(workdir, v1, monkeypatch)
    incremental = _random_wywmt(workdir, v2, monkeypatch)
    scratch_dir = workdir / "scratch"
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
        monkeypatch.setenv(name, str(scratch_dir / sub))
    (scratch_dir / "dagster_home").mkdir(parents=True)
    shutil.copy(workdir / "dagster_home" / "dagster.yaml", scratch_dir / "dagster_home" / "dagster.yaml")
    scratch = _random_wywmt(scratch_dir, v2, monkeypatch)
    assert len(scratch) == 4 and incremental == scratch
    assert all(before[item_id] != text for item_id, text in scratch.items())   # the pool changed for each


def test_forced_runs_record_nothing_new_in_the_history(built):
    """`--force` runs every stage again: the same answers, from the cache, are no new recording."""
    def recordings():
        return sorted(p.relative_to(built / "history").as_posix() for p in (built / "history").rglob("*.parquet"))

    first = recordings()
    assert any(name.startswith("response_history/aceval/v1/random/") for name in first)
    for _ in range(2):
        summary = run_pipeline(["aceval"], ["random", "oracle"], log=lambda _: None, force=True)
        assert summary.ok and summary.metadata("responses", "aceval|random")["prompts_sent"] == 0
        assert recordings() == first


def test_a_deleted_correction_is_audited_reverted_not_changed_upstream(built):
    """The upstream file never changed: the item has its upstream answer again, and the audit says
    the correction was reverted."""
    upstream = pd.read_parquet(built / "lake" / "items" / "aceval.parquet").set_index("item_id")["answer"]
    item_id = _correct(built, "answer", lambda old: "B" if old != "B" else "C")
    _run()
    (built / "corrections" / "answer.yaml").unlink()
    _run()
    with duckdb.connect(str(built / "warehouse.duckdb"), read_only=True) as con:
        audit = con.execute("SELECT item_id, field, status, origin FROM corrections_audit").fetchall()
        statuses = con.execute("SELECT status FROM audit_history WHERE item_id = ? ORDER BY recorded_at",
                               [item_id]).fetchall()
        answer = con.execute("SELECT answer FROM items WHERE item_id = ?", [item_id]).fetchone()[0]
    assert audit == [(item_id, "answer", "reverted", f"{(built / 'corrections' / 'answer.yaml').as_posix()}:1")]
    assert statuses == [("applied",), ("reverted",)] and answer == upstream[item_id]
