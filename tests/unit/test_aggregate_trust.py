"""Who scored a number, whether it stands beside the paper's, clustered intervals and paired
differences: pipeline/aggregate/ and pipeline/compare.py on synthetic units."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from pipeline.aggregate import CardTables, TableSpec, load_tables, paper_tables, unit_weights
from pipeline.compare import paired_difference


def _units(rows, model="m"):
    base = {"model": model, "variant": "original", "setting": "s", "group": None, "part": None, "details": {},
            "task": "t", "task_group": "g", "domain": None, "capability": None}
    frame = pd.DataFrame([{**base, **r} for r in rows])
    if "unit_id" not in frame:
        frame["unit_id"] = [f"u{i}" for i in range(len(frame))]
    return frame


def _row(units, cluster=None, replicates=False):
    tables = CardTables((TableSpec("all", "All"),), {}, {}, {}, cluster)
    return paper_tables(tables, "b", units, replicates=replicates).iloc[0]


def test_correlated_answers_within_a_passage_widen_the_clustered_interval():
    """40 passages x 10 questions; a model knows a passage or not (every answer about it right or
    wrong): 400 answers carry the evidence of 40. The cluster bootstrap's interval is about
    sqrt(10) times the naive one; with independent answers both are alike."""
    rng = np.random.default_rng(0)
    known = rng.random(40) < 0.5
    rows = [{"unit_id": f"p{p}q{q}", "context_id": f"passage{p}", "score": float(known[p])}
            for p in range(40) for q in range(10)]
    units = _units(rows)
    naive, clustered = _row(units), _row(units, cluster="context")
    assert naive["score"] == clustered["score"]
    naive_width = naive["ci_high"] - naive["ci_low"]
    clustered_width = clustered["ci_high"] - clustered["ci_low"]
    assert 2.2 < clustered_width / naive_width < 4.5, (naive_width, clustered_width)
    assert "interval clustered by context: 40 clusters of 400 items (40 of 10) resampled whole" in clustered["note"]
    assert naive["note"] is None
    # the design effect of whole passages known or not: the passage size (x 40/39 x 399/400, exactly)
    assert re.search(r"design effect 10\.23; the interval's ends carry a Monte Carlo error of about ±\d\.\d\d "
                     r"\(1,000 replicates\)", clustered["note"]), clustered["note"]
    mc = float(re.search(r"±(\d\.\d\d)", clustered["note"])[1])
    assert 0 < mc < 0.1 * clustered_width   # small beside the interval it qualifies

    independent = _units([{**r, "score": float(rng.random() < 0.5)} for r in rows])
    a, b = _row(independent), _row(independent, cluster="context")
    ratio = (b["ci_high"] - b["ci_low"]) / (a["ci_high"] - a["ci_low"])
    assert 0.7 < ratio < 1.45, ratio
    deff = float(re.search(r"design effect (\d+\.\d\d)", b["note"])[1])
    assert 0.6 < deff < 1.5, deff   # independent answers: about 1


def test_cluster_weights_are_shared_within_a_cluster_and_unchanged_without_one():
    units = _units([{"unit_id": "a", "context_id": "x"}, {"unit_id": "b", "context_id": "x"},
                    {"unit_id": "c", "context_id": None}, {"unit_id": "d", "context_id": "y"}])
    w = unit_weights(units, "context")
    assert (w["a"] == w["b"]).all() and not (w["a"] == w["d"]).all()
    plain = unit_weights(units)
    assert (plain["c"] == w["c"]).all() and not (plain["a"] == plain["b"]).all()


def test_the_shipped_cards_cluster_cpdue_poems_and_wyweb_passages():
    from pipeline.benchmarks import cards

    clustered = {name for name, card in cards().items() if load_tables(card.folder / "tables.yaml").cluster}
    assert {"cpdue", "wyweb"} <= clustered


def test_a_row_says_who_scored_it_and_whether_it_stands_beside_the_paper():
    judge = "judge served-qwen (official prompts)"
    rule_only = _units([{"score": 1.0, "scored_by": "rules", "paper_judge": True},
                        {"score": None, "scored_by": "rules", "paper_judge": True},
                        {"score": 0.0, "scored_by": "rules", "paper_judge": False}])
    row = _row(rule_only)
    assert row["scored_by"] == "rules" and not row["comparable"]
    assert "no judge here (rule-scored items only: 2/3)" in row["note"]

    demo = _units([{"score": 1.0, "scored_by": "judge gemma3-270m (wenheng prompts)", "paper_judge": True,
                    "demo_judge": True}])
    assert not _row(demo)["comparable"] and "bundled demo judge" in _row(demo)["note"]

    strong = _units([{"score": 1.0, "scored_by": judge, "paper_judge": True},
                     {"score": 0.0, "scored_by": "rules", "paper_judge": False}])
    row = _row(strong)
    assert row["comparable"] and row["scored_by"] == f"{judge}, rules" and row["note"] is None

    never_judged = _units([{"score": 1.0, "scored_by": "rules"}])
    assert _row(never_judged)["comparable"] and _row(never_judged)["scored_by"] == "rules"


def test_paired_difference_interval_and_p_value():
    """Two models on the same 300 items, one right on 20 more of them: the paired interval
    excludes 0 though the unpaired intervals overlap; equal models give p = 1."""
    rng = np.random.default_rng(1)
    base = rng.random(300) < 0.6
    better = base.copy()
    better[np.flatnonzero(~base)[:20]] = True
    a = _row(_units([{"unit_id": f"i{k}", "score": float(s)} for k, s in enumerate(better)], "a"), replicates=True)
    b = _row(_units([{"unit_id": f"i{k}", "score": float(s)} for k, s in enumerate(base)], "b"), replicates=True)
    d = paired_difference(a["score"], b["score"], a["replicates"], b["replicates"])
    assert abs(d.difference - 100 * 20 / 300) < 1e-6
    assert 0 < d.ci_low < d.difference < d.ci_high and d.p_value < 0.01
    assert a["ci_low"] < b["ci_high"]   # each model's own interval overlaps the other's
    same = paired_difference(b["score"], b["score"], b["replicates"], b["replicates"])
    assert same.difference == 0 and same.p_value == 1.0 and same.ci_low == same.ci_high == 0


def test_every_benchmark_asked_to_compare_is_shown_or_said_why():
    """`wenheng compare --benchmark aceval --benchmark wenmind` used to drop aceval without a word
    when it had nothing to compare (its test answers withheld)."""
    import duckdb

    from pipeline.compare import not_compared

    con = duckdb.connect()
    con.execute("CREATE TABLE responses AS SELECT * FROM (VALUES ('aceval', 'a'), ('aceval', 'b'), "
                "('wenmind', 'a'), ('wenmind', 'b'), ('fuxi', 'a')) t(benchmark, model)")
    frame = pd.DataFrame({"benchmark": ["wenmind"]})
    lines = not_compared(con, frame, "a", "b", ["aceval", "wenmind", "fuxi", "aceval"])
    assert len(lines) == 2 and lines[0].startswith("aceval: nothing to compare: no paper row")
    assert "withheld" in lines[0] and lines[1] == "fuxi: nothing to compare: no responses of b to it in the warehouse"
    assert not_compared(con, frame, "a", "b", None) == []


def test_compare_text_says_what_a_difference_covers():
    """Scored items (not the row's items) beside each difference, 0.0 for no difference, p at the
    bootstrap's resolution, and a mark on rows with few scored items."""
    import pandas as pd

    from pipeline import aggregate
    from pipeline.compare import COLUMNS, text

    base = {"benchmark": "wenmind", "table_name": "overall", "row_order": 0, "metric": "mean", "split": "test",
            "setting": "question_only", "variant": "original", "title": "Table 3", "headline": True,
            "model_a": "a", "model_b": "b", "comparable": True}
    rows = pd.DataFrame([
        base | {"row_label": "overall", "score_a": 60.0, "score_b": 50.0, "difference": 10.0, "ci_low": 6.0,
                "ci_high": 14.0, "p_value": 1 / (aggregate.REPLICATES + 1), "n_items": 4875, "n_scored_a": 947,
                "n_scored_b": 947},
        base | {"row_label": "tiny", "score_a": 50.0, "score_b": 50.0, "difference": -0.0001, "ci_low": -0.01,
                "ci_high": 0.04, "p_value": 1.0, "n_items": 2, "n_scored_a": 2, "n_scored_b": 1},
    ], columns=COLUMNS)
    lines = text(rows).splitlines()
    overall = next(line for line in lines if "Table 3: overall" in line)
    assert "947 of 4,875" in overall and "≤0.001" in overall and "<0.001" not in overall
    tiny = next(line for line in lines if "Table 3: tiny" in line)
    assert "0.0‡" in tiny and "[0.0, 0.0]" in tiny and "-0.0" not in tiny and "2, 1 of 2" in tiny
    assert "‡ = fewer than 30 scored items" in lines[0]


def test_compare_says_answers_withheld_when_the_shared_runs_have_no_score(monkeypatch):
    import duckdb
    import pytest

    from pipeline import compare as comparing

    con = duckdb.connect()
    con.execute("CREATE TABLE items AS SELECT * FROM (VALUES ('aceval/test/x/0', 'aceval', 'test')) "
                "t(item_id, benchmark, split)")
    con.execute("CREATE TABLE responses AS SELECT * FROM (VALUES ('aceval/test/x/0', 'aceval', 'a', 'zero_shot_ao', "
                "'original'), ('aceval/test/x/0', 'aceval', 'b', 'zero_shot_ao', 'original')) "
                "t(item_id, benchmark, model, setting, variant)")
    monkeypatch.setattr(comparing, "pairwise", lambda *args, **kwargs: {})   # no row with a score
    assert comparing.shared_runs(con, "a", "b", ["aceval"]) == 1 and comparing.shared_runs(con, "a", "b", ["fuxi"]) == 0
    with pytest.raises(comparing.CompareError, match=r"share 1 benchmark run\(s\), but no paper row .* withheld"):
        comparing.compare(con, "a", "b", ["aceval"])
    with pytest.raises(comparing.CompareError, match="share no benchmark run"):
        comparing.compare(con, "a", "b", ["fuxi"])


def test_a_p_value_at_the_floor_is_drawn_again_with_more_replicates():
    """A clear difference reaches the floor of 1,000 replicates (1/1,001): its table is drawn again
    with 10,000 (the first 1,000 the same draws), and p prints at that resolution; a table whose p
    is above the floor keeps its 1,000."""
    from pipeline.compare import MORE_REPLICATES, _p, _pairs, _resolve_floor

    rng = np.random.default_rng(2)
    base = rng.random(400) < 0.5
    rows = [{"unit_id": f"i{k}", "task": "clear", "score": float(s)} for k, s in enumerate(base)]
    rows += [{"unit_id": f"j{k}", "task": "close", "score": float(rng.random() < 0.5)} for k in range(100)]
    a = _units([{**r, "score": 1.0} if r["task"] == "clear" else r for r in rows], "a")
    b = _units([{**r, "score": float(rng.random() < 0.5)} if r["task"] == "close" else r for r in rows], "b")
    units = pd.concat([a, b], ignore_index=True)
    tables = CardTables((TableSpec("clear", "Clear", where={"task": ["clear"]}),
                         TableSpec("close", "Close", where={"task": ["close"]})), {}, {}, {}, None)
    pairs = {("a", "b"): _pairs(paper_tables(tables, "x", units, replicates=True), "a", "b")}
    before = pairs[("a", "b")].set_index("table_name")
    assert before.loc["clear", "p_value"] == pytest.approx(1 / 1001) and before.loc["close", "p_value"] > 0.01
    after = _resolve_floor(tables, "x", units, pairs)[("a", "b")].set_index("table_name")
    assert list(after.index) == ["clear", "close"]
    assert after.loc["clear", "replicates"] == MORE_REPLICATES and after.loc["close", "replicates"] == 1000
    assert after.loc["clear", "p_value"] == pytest.approx(1 / (MORE_REPLICATES + 1))
    assert after.loc["close", "p_value"] == before.loc["close", "p_value"]
    assert _p(after.loc["clear", "p_value"], MORE_REPLICATES) == "≤0.0001"
    assert _p(0.0123, MORE_REPLICATES) == "0.0123" and _p(0.0123) == "0.012"
