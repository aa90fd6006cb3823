"""Paper tables from item scores: micro and nested means, corpus metrics, intervals, coverage."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from pipeline.aggregate import (
    CardTables,
    TableSpec,
    item_stats,
    load_tables,
    paper_tables,
    poisson_weights,
)
from pipeline.benchmarks import cards


def _units(rows):
    base = {"model": "m", "variant": "original", "setting": "s", "group": None, "part": None, "details": {},
            "task_group": "g", "domain": None, "capability": None}
    frame = pd.DataFrame([{**base, **r} for r in rows])
    frame["unit_id"] = frame.get("unit_id", pd.Series([f"u{i}" for i in range(len(frame))]))
    return frame


def _table(spec: TableSpec, units, **kw) -> pd.DataFrame:
    return paper_tables(CardTables((spec,), kw.get("task_metrics", {}), kw.get("extra", {}), {}), "b", units)


def test_bootstrap_weights_are_seeded_poisson_and_depend_only_on_the_id():
    w = poisson_weights([f"item{i}" for i in range(2000)], replicates=200)
    assert w.shape == (2000, 200) and abs(w.mean() - 1) < 0.02 and abs(w.var() - 1) < 0.05
    again = poisson_weights(["item5", "item0"], replicates=200)
    assert (again[0] == w[5]).all() and (again[1] == w[0]).all()


def test_micro_mean_interval_and_coverage():
    rows = [{"task": "t", "score": float(i % 2)} for i in range(200)] + [{"task": "t", "score": None}] * 50
    out = _table(TableSpec("all", "All"), _units(rows)).iloc[0]
    assert out["score"] == 50.0 and out["n_items"] == 250 and out["n_scored"] == 200 and out["coverage"] == 0.8
    assert out["ci_low"] < 50 < out["ci_high"] and 5 < out["ci_high"] - out["ci_low"] < 20  # ~ +-1.96*3.5


def test_nested_means_and_a_missing_group_makes_the_mean_undefined():
    rows = ([{"task": "a", "task_group": "L1", "score": 1.0}] * 3 + [{"task": "b", "task_group": "L1", "score": 0.0}]
            + [{"task": "c", "task_group": "L2", "score": 0.5}] * 10)
    units = _units(rows)
    by_level = _table(TableSpec("lv", "L", rows="task_group", mean_of=("task",)), units)
    assert list(by_level["score"]) == [50.0, 50.0]   # L1 = mean(100, 0), not micro 75
    average = _table(TableSpec("avg", "A", mean_of=("task_group", "task")), units).iloc[0]
    assert average["score"] == 50.0 and average["n_items"] == 14
    listed = _table(TableSpec("avg", "A", where={"task": ["a", "b", "c", "d"]}, mean_of=("task",)), units).iloc[0]
    assert listed["score"] is None or math.isnan(listed["score"])   # d has no items: no average
    assert listed["n_items"] == 14


def test_corpus_bleu_and_chrf_from_summed_item_statistics_equal_sacrebleu():
    hyps = ["学而时习之不亦说乎", "有朋自远方来", "人不知而不愠不亦君子乎", "温故而知新"]
    refs = [["学而时习之，不亦说乎", "学习了又按时温习"], ["有朋友从远方来"], ["人家不了解我，我不怨恨"], ["温习旧知识而得到新体会"]]
    rows = [{"task": "mt", "score": 0.0, "details": {"bleu_stats": item_stats("bleu", h, r),
                                                     "chrf_stats": item_stats("chrf", h, r)}}
            for h, r in zip(hyps, refs)]
    out = _table(TableSpec("mt", "MT", rows="task"), _units(rows), task_metrics={"mt": "corpus_bleu"},
                 extra={"mt": ["corpus_chrf"]})
    by_metric = dict(zip(out["metric"], out["score"]))
    n_refs = max(len(r) for r in refs)
    ref_streams = [[r[k] if k < len(r) else None for r in refs] for k in range(n_refs)]
    assert by_metric["corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, ref_streams, tokenize="zh").score)
    assert by_metric["corpus_chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, ref_streams).score)


def test_micro_f1_sums_counts_over_items():
    rows = [{"task": "punc", "score": 1.0, "details": {"tp": 9, "fp": 0, "fn": 0}},
            {"task": "punc", "score": 0.0, "details": {"tp": 0, "fp": 1, "fn": 1}}]
    out = _table(TableSpec("p", "P", rows="task"), _units(rows), task_metrics={"punc": "micro_f1"}).iloc[0]
    assert out["score"] == pytest.approx(100 * 18 / 20)   # not the item mean, 50


def test_group_units_are_right_only_when_every_item_is():
    rows = [{"task": "OQ", "group": "1", "part": "best", "score": 1.0},
            {"task": "OQ", "group": "1", "part": "worst", "score": 1.0},
            {"task": "OQ", "group": "2", "part": "best", "score": 1.0},
            {"task": "OQ", "group": "2", "part": "worst", "score": 0.0}]
    spec = TableSpec("m", "M", cells={"OQ_best": {"where": {"part": ["best"]}}, "OQ_all": {"unit": "group"}})
    out = _table(spec, _units(rows))
    assert dict(zip(out["row_label"], out["score"])) == {"OQ_best": 100.0, "OQ_all": 50.0}
    assert list(out["n_items"]) == [2, 2]


@pytest.mark.parametrize("name", sorted(cards()))
def test_every_card_declares_its_tables(name):
    tables = load_tables(cards()[name].folder / "tables.yaml")
    assert tables.tables and any(t.headline for t in tables.tables)
    assert Path(cards()[name].folder / "tables.yaml").is_file()


def test_interval_width_shrinks_with_more_items():
    small = _table(TableSpec("all", "A"), _units([{"task": "t", "score": float(i % 2)} for i in range(50)])).iloc[0]
    large = _table(TableSpec("all", "A"), _units([{"task": "t", "score": float(i % 2)} for i in range(800)])).iloc[0]
    assert (large["ci_high"] - large["ci_low"]) < (small["ci_high"] - small["ci_low"]) / 2.5
    assert np.isfinite([small["ci_low"], small["ci_high"]]).all()


def test_every_run_computed_from_one_plan_equals_table_rows_run_by_run():
    from pipeline.aggregate import table_rows, unit_weights
    from pipeline.aggregate.chance import unit_chance

    rng = np.random.default_rng(3)
    rows = []
    for model, fractional in (("a", False), ("b", False), ("c", True)):
        for variant in ("original", "simplified"):
            for i in range(60):
                score = None if i % 17 == 0 else float(rng.integers(0, 2)) if not fractional else float(rng.random())
                rows.append({"model": model, "variant": variant, "unit_id": f"u{i}", "task": f"t{i % 3}",
                             "task_group": f"g{i % 2}", "group": str(i // 2) if i < 8 else None,
                             "part": ("best", "worst")[i % 2] if i < 8 else None, "score": score,
                             "n_options": 4, "scored_by": "judge j (p prompts)" if i % 5 == 0 else "rules",
                             "paper_judge": i % 3 == 1, "not_asked": "duplicate" if i == 59 else None})
    units = _units(rows).drop(columns=["unit_id"]).assign(unit_id=[r["unit_id"] for r in rows])
    tables = CardTables((TableSpec("by_task", "T", rows="task"), TableSpec("avg", "A", mean_of=("task_group", "task")),
                         TableSpec("g", "G", cells={"all": {"unit": "group"}, "t0": {"where": {"task": ["t0"]}}})),
                        {}, {}, {}, chance={"default": "options"})
    planned = paper_tables(tables, "b", units, replicates=True)
    # table_rows on each run, as paper_tables computed them before the plans
    prepared = units.copy()
    for column in ("split", "context_id"):
        prepared[column] = None
    for column in ("capped", "demo_judge"):
        prepared[column] = False
    prepared["chance"], prepared["chance_each"] = unit_chance(tables, prepared)
    weights = unit_weights(prepared)
    expected = [row for _, part in prepared.groupby(["model", "variant", "setting", "split"], sort=True, dropna=False)
                for row in table_rows(tables, part, "b", weights, replicates=True)]
    assert len(planned) == len(expected)
    for got, want in zip(planned.to_dict("records"), expected):
        assert np.array_equal(got.pop("replicates"), want.pop("replicates"), equal_nan=True)
        assert {k: got[k] for k in want} == want


@pytest.mark.parametrize("body, says", [
    ("task_metrics: {punc: micro_f2}\ntables: {t: {rows: task}}\n", "task_metrics: punc: 'micro_f2' is not a metric"),
    ("extra_metrics: {mt: [corpus_chrf, chrf]}\ntables: {t: {rows: task}}\n", "extra_metrics: mt: 'chrf'"),
    ("tables: {t: {rows: task, metric: acc}}\n", "table t: metric: 'acc' is not a metric"),
])
def test_a_metric_typo_in_a_card_is_one_line_when_it_loads(tmp_path, body, says):
    path = tmp_path / "tables.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        load_tables(path)
    assert says in str(err.value) and "expected one of accuracy, micro_f1" in str(err.value)
    assert "\n" not in str(err.value)


def test_every_shipped_card_reads_its_tables_once_through_the_card():
    for card in cards().values():
        assert card.tables is card.tables and card.tables == load_tables(card.folder / "tables.yaml")


@pytest.mark.parametrize("body, says", [
    # WYWEB routes punc to punctuation_f1: it writes tp/fp/fn, not sacrebleu's statistics
    ("task_metrics: {punc: corpus_bleu}\ntables: {t: {rows: task}}\n",
     "task_metrics: punc: 'corpus_bleu' sums bleu_stats from each score's details, which the punctuation_f1 scorer"),
    ("extra_metrics: {wywmt: [micro_f1]}\ntables: {t: {rows: task}}\n",
     "extra_metrics: wywmt: 'micro_f1' sums tp, fp, fn from each score's details, which the chrf scorer"),
    ("tables: {t: {rows: task, cells: {q4: {where: {task: [wywmt]}, metric: 'detail:q4'}}}}\n",
     "table t: q4: metric: 'detail:q4' sums q4"),
])
def test_a_metric_the_routed_scorer_cannot_feed_is_one_line_when_the_card_loads(tmp_path, body, says):
    import dataclasses

    wyweb = cards()["wyweb"]
    (tmp_path / "tables.yaml").write_text(body, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        _ = dataclasses.replace(wyweb, folder=tmp_path).tables
    assert says in str(err.value) and "\n" not in str(err.value), str(err.value)
