"""The whole graph, materialized in-process on the samples with the baseline engines."""

from __future__ import annotations

import csv
import json
import random
import shutil

import duckdb
import pytest
from conftest import BASELINES, ROOT, write_yaml

from pipeline import benchmarks
from pipeline.runner import run_pipeline

BENCHMARKS = list(benchmarks.names())


@pytest.fixture
def baseline_run(baseline_build, monkeypatch):
    """The session's baseline build (tests/conftest.py), read by the test: its summary (with its
    log lines) and a read-only connection to its warehouse."""
    root = baseline_build.use(monkeypatch)
    con = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
    yield baseline_build.summary, con
    con.close()


def test_oracle_scores_one_on_every_rule_scorable_item(baseline_run):
    _, con = baseline_run
    with_gold = con.execute("SELECT count(*) FROM items WHERE answer IS NOT NULL").fetchone()[0]
    scored, low = con.execute("""SELECT count(score), count(*) FILTER (WHERE score < 1)
        FROM scores WHERE model = 'oracle'""").fetchone()
    assert scored > 100 and low == 0
    # every item with a gold is scored by rule, except those only a judge can score (Fùxì's couplet
    # and ci items are rule-scored with the shipped tone, rhyme and cipai tables)
    unscored = dict(con.execute("""SELECT reason, count(*) FROM scores JOIN items USING (item_id)
        WHERE model = 'oracle' AND score IS NULL AND answer IS NOT NULL GROUP BY 1""").fetchall())
    assert set(unscored) <= {"needs the LLM judge"}
    assert scored + sum(unscored.values()) == with_gold
    # every paper-table row the oracle has a number for is 100, in every benchmark
    rows = con.execute("""SELECT benchmark, table_name, row_label, metric, score FROM paper_tables
        WHERE model = 'oracle' AND n_scored > 0""").fetchall()
    assert {r[0] for r in rows} == set(BENCHMARKS)
    assert [r for r in rows if r[4] != 100.0] == []


def test_leaderboard_shows_each_papers_headline_with_n_coverage_and_interval(baseline_run):
    _, con = baseline_run
    rows = con.execute("""SELECT benchmark, split, row_label, score, ci_low, ci_high, n_scored, n_items, coverage
        FROM leaderboard WHERE model = 'random'""").fetchall()
    by_key = {(b, split, label): rest for b, split, label, *rest in rows}
    # AC-EVAL: test answers are withheld (no number, coverage 0); dev is scored because the sample
    # sources ask for it, and labelled dev
    assert by_key[("aceval", "test", "average")][0] is None and by_key[("aceval", "test", "average")][5] == 0
    assert by_key[("aceval", "dev", "average")][3] == 9
    # Fùxì has no overall: its four category means; CP-DUE its modules with AU-all and OQ-all
    assert {label for b, _, label in by_key if b == "fuxi"} == {
        "reading comprehension", "question answering", "text generation", "pattern-constrained generation"}
    assert {"AU_all", "OQ_all"} <= {label for b, _, label in by_key if b == "cpdue"}
    for (b, _, label), (score, low, high, n_scored, n_items, coverage) in by_key.items():
        assert n_items > 0 and coverage == round(n_scored / n_items, 4), (b, label)
        if score is not None:
            assert low <= score <= high, (b, label)


def test_row_counts_reconcile(baseline_run):
    summary, con = baseline_run
    raw_rows = sum(summary.metadata("raw_items", b)["rows"] for b in BENCHMARKS)
    items, quarantined = (con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("items", "quarantine"))
    assert items + quarantined == raw_rows > 100
    # default protocol: one setting per benchmark, original script only -> one response per item per model
    per_model = dict(con.execute("SELECT model, count(*) FROM responses GROUP BY 1").fetchall())
    assert per_model == {"random": items, "oracle": items}
    assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 2 * items
    assert con.execute("SELECT count(*) FROM responses WHERE error IS NOT NULL").fetchone()[0] == 0
    assert con.execute("SELECT sum(n_items) FROM model_task_scores").fetchone()[0] == 2 * items


def test_one_invocation_is_one_tag_with_timed_phases_and_plain_lines(baseline_run):
    """Every Dagster run of one run_pipeline call carries its wenheng/run tag (the first line says
    which); the phases are timed; materialization lines are key=value with rounded numbers."""
    import dagster as dg

    from pipeline.runner import RUN_TAG

    summary, _ = baseline_run
    assert summary.lines[0] == f"run {RUN_TAG}={summary.run_tag} (filter on this tag in the Dagster UI)"
    instance = dg.DagsterInstance.get()
    tagged = instance.get_runs(filters=dg.RunsFilter(tags={RUN_TAG: summary.run_tag}))
    # a prepare run per benchmark, one per benchmark x model, the publish (with contamination)
    assert len(tagged) == len(instance.get_runs()) == len(BENCHMARKS) + 2 * len(BENCHMARKS) + 1
    assert set(summary.timings) == {"prepare", "evaluate", "publish"} and all(v > 0 for v in summary.timings.values())
    shown = [line for line in summary.lines if line.startswith("  scores [")]
    assert len(shown) == 2 * len(BENCHMARKS)
    for line in shown:
        pairs = dict(part.split("=", 1) for part in line.split("] ", 1)[1].split())
        assert {"rows", "scored", "item_mean_rule_score"} <= set(pairs) and "{" not in line
        assert len(pairs["item_mean_rule_score"].partition(".")[2]) <= 3   # 0.833, not 0.8333333333333334


def test_prepare_builds_only_the_requested_benchmarks(workdir, monkeypatch):
    """`wenheng run --benchmark aceval` leaves the other benchmarks' partitions as they are."""
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    summary = run_pipeline(["aceval"], ["oracle"], log=lambda _: None)
    assert summary.ok
    built = {(m["asset"], m["partition"]) for m in summary.materializations}
    assert {partition for asset, partition in built if asset == "items"} == {"aceval"}
    assert sorted(p.name for p in (workdir / "lake" / "items").iterdir()) == ["aceval.parquet"]
    assert ("contamination", None) in built and ("responses", "aceval|oracle") in built


def test_dedup_and_variants_in_the_warehouse(baseline_run):
    _, con = baseline_run
    clusters = dict(con.execute("SELECT item_id, is_representative FROM dedup_clusters").fetchall())
    assert clusters["wenmind/test/function_words/0"] is True   # simplified original, lowest id
    assert clusters["wenmind/test/function_words/12"] is False  # the same item in traditional script
    trad = con.execute("""SELECT question FROM item_variants
        WHERE item_id = 'wenmind/test/function_words/0' AND variant = 'traditional'""").fetchone()[0]
    assert trad.startswith("學而時習之")
    assert con.execute("SELECT script FROM items WHERE item_id = 'wenmind/test/function_words/12'").fetchone() == (
        "traditional",)


def test_rematerializing_sends_no_prompt_to_the_engine(baseline_build, tmp_path, monkeypatch):
    """Responses whose lake files are gone are built again, every answer from the response cache."""
    first = baseline_build.summary
    assert first.metadata("responses", "aceval|oracle")["prompts_sent"] == 12
    workdir = baseline_build.copy(tmp_path / "build", monkeypatch)
    for file in (workdir / "lake" / "responses").rglob("*.parquet"):
        file.unlink()
    second = run_pipeline(BENCHMARKS, ["random", "oracle"], log=lambda _: None)
    assert second.ok
    for model in ("random", "oracle"):
        for benchmark in BENCHMARKS:
            meta = second.metadata("responses", f"{benchmark}|{model}")
            assert meta["prompts_sent"] == 0 and meta["cache_hits"] == meta["prompts"] > 0


def test_random_baseline_is_near_chance(workdir, monkeypatch):
    """400 generated four-option items: the random baseline must land near 25%."""
    root = workdir / "aceval"
    (root / "dev").mkdir(parents=True)
    rng = random.Random(7)
    with open(root / "dev" / "geography.csv", "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["", "Question", "A", "B", "C", "D", "Answer", "Explanation"])
        for i in range(400):
            out.writerow([i, f"第{i}题：下列哪一项正确？", "甲", "乙", "丙", "丁", rng.choice("ABCD"), ""])
    sources = write_yaml(workdir / "sources.yaml", f"benchmarks:\n  aceval: {{path: {root}, version: gen, evaluate: [dev]}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    assert run_pipeline(["aceval"], ["random"], log=lambda _: None).ok
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        accuracy, n = con.execute("SELECT avg(score), count(score) FROM scores WHERE model = 'random'").fetchone()
    assert n == 400 and 0.19 <= accuracy <= 0.31  # chance 0.25, binomial sd 0.022


def test_corrections_and_aceval_submission(baseline_run, tmp_path):
    _, con = baseline_run
    applied = con.execute("""SELECT item_id, field, status FROM corrections_audit""").fetchall()
    assert ("wyweb/dev/irc/044cacad15b7", "context", "applied") in applied
    assert not con.execute("SELECT context FROM items WHERE item_id = 'wyweb/dev/irc/044cacad15b7'").fetchone()[0].startswith("<")
    from pipeline.cli import main

    out = tmp_path / "submission.json"
    assert main(["submission", "aceval", "--model", "random", "-o", str(out)]) == 0
    submitted = json.loads(out.read_text(encoding="utf-8"))
    assert submitted == {"historical_facts": {"0": submitted["historical_facts"]["0"], "1": submitted["historical_facts"]["1"]},
                         "translation": {"0": submitted["translation"]["0"]}}
    assert all(v in "ABCD" for subject in submitted.values() for v in subject.values())


@pytest.fixture
def aceval_copy(workdir, monkeypatch):
    """The AC-EVAL samples copied into the work dir (so a test can edit them), evaluated once by
    the oracle. Returns the sources file and the copied dev file of historical_facts."""
    samples = workdir / "samples"
    shutil.copytree(ROOT / "data" / "samples" / "aceval", samples)
    sources = write_yaml(workdir / "sources.yaml", f"benchmarks:\n  aceval: {{path: {samples}, version: v1, evaluate: [dev, test]}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    assert run_pipeline(["aceval"], ["oracle"], log=lambda _: None).ok
    return sources, samples / "dev" / "historical_facts.csv"


def _edit(path, old, new):
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_a_new_source_version_is_diffed_into_the_audit(workdir, aceval_copy):
    sources, dev = aceval_copy
    _edit(dev, "郡县制,分封制", "郡县制度,分封制")
    _edit(sources, "version: v1", "version: v2")
    assert run_pipeline(["aceval"], ["oracle"], log=lambda _: None).ok
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT item_id, field, status, origin FROM corrections_audit").fetchall()
    assert rows == [("aceval/dev/historical_facts/0", "choices", "changed_upstream", "upstream v1 -> v2")]


def test_responses_to_outdated_prompts_are_not_published(workdir, aceval_copy):
    _, dev = aceval_copy
    _edit(dev, "秦始皇统一六国后", "秦统一六国后")
    # rebuild items and the warehouse, but do not re-run inference
    assert run_pipeline(["aceval"], ["oracle"], selection="group:sources or group:items or key:warehouse",
                        log=lambda _: None).ok
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        ids = {row[0] for row in con.execute("SELECT item_id FROM responses").fetchall()}
        assert "aceval/dev/historical_facts/0" not in ids and len(ids) == 11
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 11


def test_drop_policy_leaves_duplicates_out_of_evaluation(workdir, monkeypatch):
    samples = ROOT / "data" / "samples" / "wenmind" / "WenMind_sample.json"
    sources = write_yaml(workdir / "sources.yaml",
                         f"duplicates: drop\nbenchmarks:\n  wenmind: {{path: {samples}, version: s}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    summary = run_pipeline(["wenmind"], ["oracle"], log=lambda _: None)
    assert summary.ok and summary.metadata("prompts", "wenmind")["items left out"] == 1
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        answered = {r[0] for r in con.execute("SELECT item_id FROM responses").fetchall()}
    assert "wenmind/test/function_words/0" in answered and "wenmind/test/function_words/12" not in answered


def test_robustness_compares_script_variants(workdir, monkeypatch):
    models = write_yaml(workdir / "models.yaml", "models:\n  random:\n    engine: baseline\n    strategy: random\n"
                                                 "    variants: [simplified, traditional]\n")
    monkeypatch.setenv("WENHENG_MODELS", str(models))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    assert run_pipeline(["aceval"], ["random"], log=lambda _: None).ok
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT task, n, simplified, traditional, delta FROM robustness").fetchall()
    assert {r[0] for r in rows} == {"historical_facts", "poetry_appreciation", "translation"}
    assert all(r[1] > 0 and abs(r[4] - (r[3] - r[2])) < 1e-9 for r in rows)


def test_limit_caps_the_items_asked_per_benchmark(workdir, monkeypatch):
    """WENHENG_LIMIT (what `wenheng run --limit N` exports): at most N evaluated items per
    benchmark, recorded in the prompts partition's metadata."""
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    monkeypatch.setenv("WENHENG_LIMIT", "4")
    summary = run_pipeline(["wyweb"], ["oracle"], log=lambda _: None)
    assert summary.ok
    meta = summary.metadata("prompts", "wyweb")
    assert meta["limit"] == 4 and meta["items asked"] == 4
    assert summary.metadata("responses", "wyweb|oracle")["prompts"] == 4   # one setting, original script
