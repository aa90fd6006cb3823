"""Fùxì and CP-DUE: wenheng's own JSONL formats on the sample files, rule specs and linked groups."""

from __future__ import annotations

import json
from collections import Counter

from conftest import ROOT

from pipeline.config import SourceSpec
from pipeline.sources.ingest import parse_source
from pipeline.benchmarks.cpdue.adapter import NO_ALLUSION, STYLES
from pipeline.benchmarks.fuxi.adapter import TASKS, clause_lengths

SAMPLES = ROOT / "data" / "samples"


def _write(path, *rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_fuxi_samples_cover_all_21_tasks():
    result = parse_source(SourceSpec("fuxi", SAMPLES / "fuxi", "sample"))
    assert not result.quarantine and len(TASKS) == 21
    per_task = Counter(i["task"] for i in result.items)
    assert set(per_task) == set(TASKS) and min(per_task.values()) >= 3
    categories = Counter(i["task_group"] for i in result.items)
    assert categories == {"reading comprehension": 9, "question answering": 30, "text generation": 18,
                          "pattern-constrained generation": 6}
    by_id = {i["item_id"]: i for i in result.items}
    mcq = by_id["fuxi/test/TCMSRC/tcmsrc-001"]
    assert mcq["format"] == "mcq_single" and len(mcq["choices"]) == 4 and mcq["answer"] == "B"
    assert mcq["metadata"]["metric"] == "accuracy"
    assert by_id["fuxi/test/BA/ba-001"]["metadata"]["metric"] == "llm_judge"
    assert by_id["fuxi/test/ACT/act-001"]["format"] == "translation"
    assert by_id["fuxi/test/TCMQA/tcmqa-001"]["context"].startswith("上古之人")
    assert {i["capability"] for i in result.items if i["task_group"] == "reading comprehension"} == {"understanding"}
    assert {i["capability"] for i in result.items if i["task"] in ("PG", "CG", "CiG", "PA")} == {"generation"}


def test_fuxi_rule_specs():
    result = parse_source(SourceSpec("fuxi", SAMPLES / "fuxi", "sample"))
    by_id = {i["item_id"]: i for i in result.items}
    couplet = by_id["fuxi/test/CG/cg-001"]["metadata"]["rules"]
    assert couplet == {"type": "couplet", "clause_lengths": [7, 4], "ending_tone": "平"}
    assert by_id["fuxi/test/CG/cg-002"]["metadata"]["rules"]["clause_lengths"] == [5]   # derived from the input
    ci = by_id["fuxi/test/CiG/cig-003"]["metadata"]["rules"]
    assert ci["cipai"] == "浣溪沙" and ci["lines"] == [7] * 6 and ci["rhymes"] == [1, 2, 3, 5, 6]
    assert ci["stanza_breaks"] == [3] and ci["rhyme_book"] == "词林正韵"
    assert clause_lengths("知否？知否？应是绿肥红瘦。") == [2, 2, 6]


def test_fuxi_rules_are_checked(tmp_path):
    ci_rules = {"cipai": "忆江南", "lines": [3, 5, 7, 7, 5], "rhymes": [2, 4, 5]}
    _write(tmp_path / "test.jsonl",
           {"id": 1, "task": "CG", "input": "海内存知己", "output": "天涯若比邻", "rules": {"clause_lengths": [7]}},
           {"id": 2, "task": "CG", "input": "海内存知己", "output": "天涯比邻"},
           {"id": 3, "task": "CiG", "input": "词牌：忆江南", "output": "江南好，风景旧曾谙。", "rules": ci_rules},
           {"id": 4, "task": "CiG", "input": "词牌：如梦令", "output": "江南好", "rules": ci_rules},
           {"id": 5, "task": "CiG", "input": "词牌：忆江南", "output": "江南好",
            "rules": {**ci_rules, "tones": ["平平仄"]}},
           {"id": 6, "task": "BA", "input": "问", "output": "答", "rules": {}},
           {"id": 7, "task": "BA", "input": "问", "output": "答", "options": ["甲", "乙", "丙", "丁"]})
    result = parse_source(SourceSpec("fuxi", tmp_path, "v"))
    assert not result.items
    assert [q["reason"] for q in result.quarantine] == [
        "rules.clause_lengths [7] do not match the first line [5]",
        "the reference second line has clauses [4], not [5]",
        "the reference ci has lines [3, 5], not [3, 5, 7, 7, 5]",
        "the input does not name the tune 忆江南",
        "rules.tones must give one 平/仄/中 pattern per line, as long as the line",
        "BA has no format rules; 'rules' is only for CG and CiG",
        "BA is not a multiple-choice task; 'options' is not allowed",
    ]


def test_cpdue_samples_cover_all_6_tasks():
    result = parse_source(SourceSpec("cpdue", SAMPLES / "cpdue", "sample"))
    assert not result.quarantine
    per_task = Counter(i["task"] for i in result.items)
    assert per_task == {"CK": 3, "TH": 3, "ST": 3, "WS": 3, "AU": 9, "OQ": 4}
    assert {i["format"] for i in result.items} == {"mcq_single"}
    by_id = {i["item_id"]: i for i in result.items}
    assert len(by_id["cpdue/test/CK/ck-001"]["choices"]) == 3
    assert len(by_id["cpdue/test/TH/th-001"]["choices"]) == 10
    style = by_id["cpdue/test/ST/st-002"]
    assert style["choices"] == STYLES and style["answer"] == "C" and style["context"].startswith("如梦令 李清照\n")
    au = [i for i in result.items if i["metadata"].get("group") == "au-001"]
    assert sorted(i["metadata"]["part"] for i in au) == ["figure", "meaning", "source"]
    assert all(i["choices"][3] == NO_ALLUSION and i["context"] == au[0]["context"] for i in au)
    assert {i["answer"] for i in result.items if i["metadata"].get("group") == "au-003"} == {"D"}
    best, worst = by_id["cpdue/test/OQ/oq-001-best"], by_id["cpdue/test/OQ/oq-001-worst"]
    assert best["choices"] == worst["choices"] and (best["answer"], worst["answer"]) == ("A", "C")
    assert best["question"] != worst["question"]
    assert {i["metadata"]["level"] for i in result.items} == {1, 2, 3, 4, 5}


def test_cpdue_broken_groups_are_quarantined_whole(tmp_path):
    au = {"task": "AU", "line": "凭谁问：廉颇老矣，尚能饭否？", "options": ["甲", "乙", "丙"], "answer": "A"}
    oq = {"task": "OQ", "options": ["诗一", "诗二", "诗三"]}
    _write(tmp_path / "test.jsonl",
           {**au, "id": "a1", "group": "a", "part": "figure"},
           {**au, "id": "a2", "group": "a", "part": "source"},                      # no "meaning"
           {**au, "id": "b1", "group": "b", "part": "figure"},
           {**au, "id": "b2", "group": "b", "part": "source"},
           {**au, "id": "b3", "group": "b", "part": "meaning", "line": "另一句诗"},  # a different line
           {**oq, "id": "c1", "group": "c", "part": "best", "answer": "A"},
           {**oq, "id": "c2", "group": "c", "part": "worst", "answer": "A"},       # same poem best and worst
           {**oq, "id": "d1", "group": "d", "part": "best", "answer": "A"},
           {**oq, "id": "d2", "group": "d", "part": "worst", "answer": "B"},
           {**oq, "id": "e1", "group": "e", "part": "middle", "answer": "B"})
    result = parse_source(SourceSpec("cpdue", tmp_path, "v"))
    assert [i["item_id"] for i in result.items] == ["cpdue/test/OQ/d1", "cpdue/test/OQ/d2"]
    reasons = Counter(q["reason"] for q in result.quarantine)
    assert reasons == {
        "AU group a has parts ['figure', 'source'], needs exactly ['figure', 'meaning', 'source']": 2,
        "AU group b: its questions quote different lines": 3,
        "OQ group c: the same poem cannot be both best and worst": 2,
        "part 'middle' is not one of ['best', 'worst']": 1,
    }
    assert sum(result.raw_counts.values()) == len(result.items) + len(result.quarantine) == 10
