"""Fùxì and CP-DUE: wenheng's own JSONL formats on the sample files, rule specs and linked groups."""

from __future__ import annotations

import json
from collections import Counter

from conftest import ROOT

from pipeline.benchmarks.cpdue.adapter import NO_ALLUSION, STYLES
from pipeline.benchmarks.fuxi.adapter import TASKS, clause_lengths
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source

SAMPLES = ROOT / "data" / "samples"


def _accounted(result) -> Counter:
    """Raw rows the parse result stands for, per file: an item counts 1 + the rows merged into it
    (`metadata.merged_rows`, as the rows_reconcile check counts), a quarantine row 1."""
    counts = Counter(q["source_file"] for q in result.quarantine)
    for item in result.items:
        counts[item["source_file"]] += 1 + len(item["metadata"].get("merged_rows", []))
    return counts


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
    assert per_task == {"CK": 3, "TH": 3, "ST": 3, "WS": 3, "AU": 3, "OQ": 4}   # AU: three rows per item
    assert {i["format"] for i in result.items} == {"mcq_single"}
    by_id = {i["item_id"]: i for i in result.items}
    assert len(by_id["cpdue/test/CK/ck-001"]["choices"]) == 3
    assert len(by_id["cpdue/test/TH/th-001"]["choices"]) == 10
    style = by_id["cpdue/test/ST/st-002"]
    assert style["choices"] == STYLES and style["answer"] == "C"
    assert style["context"] == "如梦令\n常记溪亭日暮，沉醉不知归路。兴尽晚回舟，误入藕花深处。争渡，争渡，惊起一滩鸥鹭。"
    assert style["metadata"]["author"] == "李清照"          # kept, but not shown: the paper's prompt has no author
    best, worst = by_id["cpdue/test/OQ/oq-001-best"], by_id["cpdue/test/OQ/oq-001-worst"]
    assert best["choices"] == worst["choices"] and (best["answer"], worst["answer"]) == ("A", "C")
    assert (best["question"], worst["question"]) == ("最好", "最坏")
    assert (best["metadata"]["group"], best["metadata"]["part"]) == ("oq-001", "best")
    assert {i["metadata"]["level"] for i in result.items} == {1, 2, 3, 4, 5}
    # 25 lines, 19 items: each AU item stands for its first line and the two merged into it
    assert result.raw_counts == {"test.jsonl": 25} == _accounted(result)
    assert sum(len(i["metadata"].get("merged_rows", [])) for i in result.items) == 6


def test_cpdue_au_group_is_one_item_with_three_letters():
    result = parse_source(SourceSpec("cpdue", SAMPLES / "cpdue", "sample"))
    by_id = {i["item_id"]: i for i in result.items}
    au = by_id["cpdue/test/AU/au-001"]
    assert au["answer"] == "BCA"                                  # figure, source, meaning
    assert {by_id[f"cpdue/test/AU/au-00{n}"]["answer"] for n in (2, 3)} == {"ABC", "DDD"}
    assert au["context"] == "商女不知亡国恨，隔江犹唱后庭花。" and au["choices"] == []
    assert au["question"] == (
        "典故人物:A. 隋炀帝\nB. 陈后主\nC. 南唐后主李煜\nD. " + NO_ALLUSION + "\n"
        "典故出处:A. 汉乐府《陌上桑》\nB. 唐玄宗所制《霓裳羽衣曲》\nC. 南朝陈后主所作乐曲《玉树后庭花》\nD. " + NO_ALLUSION + "\n"
        "典故含义:A. 借亡国之音讽刺当权者沉溺享乐、不以国事为念\nB. 赞美江南歌女技艺高超\nC. 抒发诗人客居异乡的思念之情\n"
        "D. " + NO_ALLUSION)
    assert NO_ALLUSION == "没有使用典故或使用的典故不在以上三个选项里。"      # the paper's D (Figure 6)
    assert au["source_locator"] == "line 13" and au["task_group"] == "allusion understanding"
    meta = au["metadata"]
    assert (meta["group"], meta["level"], meta["options_per_question"]) == ("au-001", 4, 4)
    assert meta["questions"] == [{"part": "figure", "label": "典故人物", "id": "au-001-figure"},
                                 {"part": "source", "label": "典故出处", "id": "au-001-source"},
                                 {"part": "meaning", "label": "典故含义", "id": "au-001-meaning"}]
    assert meta["merged_rows"] == [{"source_locator": "line 14", "id": "au-001-source", "part": "source"},
                                   {"source_locator": "line 15", "id": "au-001-meaning", "part": "meaning"}]


def test_cpdue_au_rows_in_any_order_and_row_counts_reconcile(tmp_path):
    au = {"task": "AU", "group": "g", "line": "凭谁问：廉颇老矣，尚能饭否？"}
    _write(tmp_path / "test.jsonl",
           {"id": "ck", "task": "CK", "question": "问", "options": ["甲", "乙", "丙"], "answer": "A"},
           {**au, "id": "m", "part": "meaning", "options": ["意一", "意二", "意三"], "answer": "C"},
           {**au, "id": "f", "part": "figure", "options": ["廉颇", "蔺相如", "李牧"], "answer": "A"},
           {**au, "id": "s", "part": "source", "options": ["《左传》", "《史记》", "《战国策》"], "answer": "D",
            "meta": {"note": "出处不在选项中"}})
    result = parse_source(SourceSpec("cpdue", tmp_path, "v"))
    assert not result.quarantine
    au_item = result.items[-1]
    assert au_item["item_id"] == "cpdue/test/AU/g" and au_item["answer"] == "ADC"
    assert au_item["question"].startswith("典故人物:A. 廉颇\n") and "典故含义:A. 意一" in au_item["question"]
    assert au_item["source_locator"] == "line 2"                  # the group's first line in the file
    assert [m["source_locator"] for m in au_item["metadata"]["merged_rows"]] == ["line 3", "line 4"]
    assert au_item["metadata"]["questions"][1]["meta"] == {"note": "出处不在选项中"}
    assert result.raw_counts == {"test.jsonl": 4} == _accounted(result)


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
           {**oq, "id": "e1", "group": "e", "part": "middle", "answer": "B"},
           {**au, "id": "f1", "group": "f", "part": "figure"},
           {**au, "id": "f2", "group": "f", "part": "figure"},                     # figure twice
           {**au, "id": "f3", "group": "f", "part": "meaning"},
           {**au, "id": "g1", "group": "g/1", "part": "figure"},                   # not usable as an id
           {**au, "id": "h1", "group": "h", "part": "figure"},
           {**au, "id": "h2", "group": "h", "part": "source", "answer": "E"},       # E: beyond D
           {**au, "id": "h3", "group": "h", "part": "meaning"},
           {**au, "id": "i1", "group": "i", "part": "figure"},
           {**au, "id": "i2", "group": "i", "part": "source"},
           {**au, "id": "i3", "group": "i", "part": "meaning", "answer": "D"})      # complete: one item
    result = parse_source(SourceSpec("cpdue", tmp_path, "v"))
    assert [i["item_id"] for i in result.items] == ["cpdue/test/OQ/d1", "cpdue/test/OQ/d2", "cpdue/test/AU/i"]
    assert result.items[-1]["answer"] == "AAD"
    reasons = Counter(q["reason"] for q in result.quarantine)
    assert reasons == {
        "AU group a has parts ['figure', 'source'], needs exactly ['figure', 'meaning', 'source']": 2,
        "AU group b: its questions quote different lines": 3,
        "OQ group c: the same poem cannot be both best and worst": 2,
        "part 'middle' is not one of ['best', 'worst']": 1,
        "AU group f has parts ['figure', 'figure', 'meaning'], needs exactly ['figure', 'meaning', 'source']": 3,
        "an AU group becomes the item's id: no '/'": 1,
        "answer 'E' is not one of ABCD": 1,
        "AU group h has parts ['figure', 'meaning'], needs exactly ['figure', 'meaning', 'source']": 2,
    }
    # every line is in an item (the complete AU group's three lines in one) or in quarantine
    assert sum(result.raw_counts.values()) == len(result.items) + 2 + len(result.quarantine) == 20
    assert _accounted(result) == result.raw_counts


def test_cpdue_st_options_are_the_eight_styles(tmp_path):
    _write(tmp_path / "test.jsonl",
           {"id": 1, "task": "ST", "content": "词", "answer": "A", "options": STYLES},
           {"id": 2, "task": "ST", "content": "词", "answer": "A", "options": STYLES[::-1]})
    result = parse_source(SourceSpec("cpdue", tmp_path, "v"))
    assert [i["item_id"] for i in result.items] == ["cpdue/test/ST/1"]
    assert [q["reason"] for q in result.quarantine] == [
        "ST options must be CP-DUE's eight styles in order (真率明朗、高旷清雄、婉约清新、奇艳俊秀、典丽精工、豪迈奔放、"
        "骚雅清劲、密丽险涩): its prompt names them"]
