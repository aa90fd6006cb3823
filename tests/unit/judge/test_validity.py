"""Judge validity: the known-answer controls' sampling (seeded, deterministic, whatever the row
order), the accept rates and Youden's J with their intervals, a judge that reads the gold (J = 1)
and one that accepts everything (J = 0, uninformative) through the real judging path on the
loopback server, the uninformative mark on a paper-table row, and the baseline checks."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from scripted_judge import item, scripted_judge

from pipeline.aggregate.coverage import provenance
from pipeline.config import JudgeSpec, ValiditySpec
from pipeline.engines.cache import open_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.judge import validity
from pipeline.judge.run import judge_responses, prompt_set

SPEC = JudgeSpec("wenmind", "judge", retries=0, max_tokens=64)
PROMPTS = prompt_set(SPEC)
# single-answer MCQs (judged by comparing with the gold) and creative writing (always 0.8)
MCQ = [item(n, "function words", "function words", "mcq_single", f"第{n}题：“说”的意思是：A、说话 B、高兴 C、解说",
            "ABC"[n % 3]) for n in range(12)]
POEMS = [item(100 + n, "poetry writing", "ancient poetry writing", "open_qa", f"以“秋月{n}”为题写一首五言绝句。",
              f"（示例{n}）") for n in range(6)]


def test_controls_are_a_seeded_sample_per_task_with_a_negative_each():
    spec = ValiditySpec(sample_per_task=5, seed=3)
    rows = validity.controls(MCQ + POEMS, PROMPTS, spec, "wenmind")
    shuffled = MCQ + POEMS
    random.Random(1).shuffle(shuffled)
    assert validity.controls(shuffled, PROMPTS, spec, "wenmind") == rows   # the row order does not matter
    assert validity.controls(MCQ + POEMS, PROMPTS, ValiditySpec(sample_per_task=5, seed=4), "wenmind") != rows
    by_id = {it["item_id"]: it for it in MCQ + POEMS}
    positives = [r for r in rows if r["model"] == "control:gold"]
    negatives = [r for r in rows if r["model"] != "control:gold"]
    assert len(positives) == len(negatives) == 10   # 5 + 5 per task, two tasks
    assert all(r["text"] == by_id[r["item_id"]]["answer"] for r in positives)
    kinds = [r["model"] for r in negatives]
    assert set(kinds) == {"control:other_gold", "control:off_topic", "control:empty"}
    for r in negatives:
        gold = by_id[r["item_id"]]["answer"]
        if r["model"] == "control:other_gold":   # another item's gold of the same task, never this one's
            assert r["text"] != gold and r["text"] in {it["answer"] for it in MCQ + POEMS
                                                       if it["task"] == by_id[r["item_id"]]["task"]}
    assert {r["text"] for r in negatives if r["model"] == "control:empty"} == {""}
    assert validity.controls(MCQ, PROMPTS, ValiditySpec(sample_per_task=0), "wenmind") == []


def test_wilson_and_newcombe_intervals():
    low, high = validity.wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)   # Newcombe (1998), table I: 0.4902-0.9433
    assert validity.wilson(0, 10)[0] == 0.0 and validity.wilson(10, 10)[1] == pytest.approx(1.0)
    assert validity.wilson(0, 0) == (None, None)
    low, high = validity.newcombe(56, 70, 48, 80)   # Newcombe (1998), method 10: 0.0524 to 0.3339
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    assert validity.newcombe(5, 5, 0, 5)[0] > 0 and validity.newcombe(3, 5, 3, 5)[0] < 0 < validity.newcombe(3, 5, 3, 5)[1]


def test_a_judge_that_reads_the_gold_has_j_1_and_one_that_accepts_everything_is_uninformative(monkeypatch, tmp_path):
    spec = ValiditySpec(sample_per_task=6)
    rows = validity.controls(MCQ + POEMS, PROMPTS, spec, "wenmind")
    by_id = {it["item_id"]: it for it in MCQ + POEMS}
    with scripted_judge(monkeypatch) as server, open_cache(tmp_path) as cache:
        engine = OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, max_retries=0)
        judged, stats = judge_responses(SPEC, PROMPTS, engine, rows, by_id, cache)
        again, second = judge_responses(SPEC, PROMPTS, engine, rows, by_id, cache)   # another partition's
    assert stats.sent == len(rows) == 24 and second.sent == 0 and second.cache_hits == len(rows)
    table = {r["task"]: r for r in validity.rows("wenmind", "m", judged, {i: it["task"] for i, it in by_id.items()},
                                                 spec, "judge", "wenheng-1")}
    mcq, poems, everything = table["function words"], table["poetry writing"], table[validity.ALL]
    assert (mcq["positive_rate"], mcq["negative_rate"], mcq["youden_j"], mcq["informative"]) == (1.0, 0.0, 1.0, True)
    assert mcq["j_low"] > 0.4 and mcq["note"] is None   # 6 + 6 controls: a perfect judge's J is 1 [0.45, 1]
    assert (poems["positive_rate"], poems["negative_rate"], poems["youden_j"]) == (1.0, 1.0, 0.0)
    assert not poems["informative"] and "cannot tell the gold from a wrong answer" in poems["note"]
    assert everything["n_positive"] == everything["n_negative"] == 12 and everything["youden_j"] == 0.5


def test_a_row_judged_by_an_uninformative_judge_is_marked_with_its_weight_and_j():
    units = pd.DataFrame({
        "score": [1.0, 0.8, 0.8, None], "scored_by": ["judge j (wenheng prompts)"] * 4,
        "paper_judge": [True] * 4, "demo_judge": [False] * 4, "task": ["mcq", "poem", "poem", "poem"],
        "judge_uninformative": [False, True, True, True], "judge_j": [1.0, 0.0, 0.0, 0.0],
        "judge_j_low": [0.6, -0.4, -0.4, -0.4], "judge_j_high": [1.0, 0.4, 0.4, 0.4]})
    scored_by, comparable, note = provenance(units)
    assert not comparable
    assert note == ("uninformative judge: 2 of its 3 scored items were judged where its known-answer controls do not "
                    "show that it tells the gold from a wrong answer (poem J 0.00 [-0.40, 0.40]; judge_validity)")
    fine = units.assign(judge_uninformative=False)
    assert provenance(fine)[1:] == (True, None)


def test_the_baselines_check_the_judge():
    measured = {("wenmind", "poem", "j"): {"negative_rate": 0.25, "negative_low": 0.1, "negative_high": 0.5}}
    lines = validity.baseline_checks([("wenmind", "mcq", "j", "oracle", 0.667), ("wenmind", "poem", "j", "random", 0.81),
                                      ("wenmind", "poem", "j", "oracle", 1.0), ("wenmind", "mcq", "j", "random", 0.9)],
                                     measured)
    assert lines == [
        "judge check: wenmind/mcq: judge j gives the oracle (the golds) 66.7, below 95: it rejects right answers",
        "judge check: wenmind/poem: judge j gives the random baseline 81.0, above its wrong-answer controls' accept "
        "rate 25.0 [10.0, 50.0]: it accepts wrong answers"]


@pytest.mark.parametrize("n", [0, 1, 7])
def test_rates_are_those_of_the_readable_verdicts(n):
    judged = [{"item_id": f"i{k}", "model": "control:gold", "score": 1.0 if k < n else None} for k in range(7)]
    judged += [{"item_id": f"i{k}", "model": "control:empty", "score": 0.0} for k in range(7)]
    [task, _] = validity.rows("b", "m", judged, {f"i{k}": "t" for k in range(7)}, ValiditySpec(), "j", "p")
    assert task["n_positive"] == n and task["unreadable"] == 7 - n
    assert task["youden_j"] == (1.0 if n else None)
    assert task["informative"] == (n > 0 and task["j_low"] > 0)
    assert np.isfinite(task["negative_high"])


def test_a_perfect_judge_on_one_control_each_is_not_yet_shown_informative():
    judged = [{"item_id": "i", "model": "control:gold", "score": 1.0},
              {"item_id": "i", "model": "control:other_gold", "score": 0.0}]
    [task, _] = validity.rows("b", "m", judged, {"i": "t"}, ValiditySpec(), "j", "p")
    assert task["youden_j"] == 1.0 and task["j_low"] < 0 and not task["informative"]
    assert "too few controls to show that the judge tells the gold from a wrong answer" in task["note"]
