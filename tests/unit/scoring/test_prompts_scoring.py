"""Prompt protocols and rule scorers, without Dagster."""

from __future__ import annotations

import re

import sacrebleu

from pipeline.prompts import build_prompt_rows, render
from pipeline.scoring.extract import AMBIGUOUS, extract_aceval, extract_label
from pipeline.scoring.rules import score_response


def _aceval(item_id, split, n, answer="A", task="geography"):
    return {"item_id": item_id, "benchmark": "aceval", "split": split, "task": task, "format": "mcq_single",
            "task_group": "General Historical Knowledge", "source_file": f"{split}/{task}.csv",
            "question": f"问题{n}", "context": None, "choices": ["甲", "乙", "丙", "丁"], "answer": answer,
            "references": [], "domain": "古代地理", "source_locator": f"row {n}",
            "metadata": {"topic_zh": "古代地理", "explanation": f"解析{n}"}}


def _variant(item):
    return {k: item[k] for k in ("item_id", "context", "question", "choices", "answer", "references")} | {
        "variant": "original", "benchmark": item["benchmark"]}


def test_aceval_zero_shot_prompt_is_the_official_template():
    item = _aceval("aceval/test/geography/0", "test", 0, answer=None)
    (message,), max_tokens = render(item, _variant(item), "zero_shot_ao")
    assert message == {"role": "user", "content":
                       "以下是中国古代古代地理领域的单项选择题，请直接给出正确答案对应的选项。\n\n"
                       "题目：问题0\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案："}
    assert max_tokens is None   # AC-EVAL sets no budget: up to the model's context


def test_five_shot_uses_dev_in_file_order_and_only_the_evaluation_split_is_asked():
    dev = [_aceval(f"aceval/dev/geography/{n}", "dev", n, answer="ABCDA"[n]) for n in range(5)]
    other = _aceval("aceval/dev/historical_facts/0", "dev", 7, task="historical_facts")  # same level
    test = _aceval("aceval/test/geography/0", "test", 9, answer=None)
    items = [*dev, other, test]
    rows = {(r["item_id"], r["setting"]): r for r in build_prompt_rows(items, [_variant(i) for i in items])}
    assert {item_id for item_id, _ in rows} == {test["item_id"]}   # dev: exemplars only, by default
    test_prompt = rows[(test["item_id"], "five_shot_ao")]["messages"][0]["content"]
    assert [test_prompt.index(f"示例{n}：问题{n - 1}") for n in range(1, 6)] == sorted(
        test_prompt.index(f"示例{n}：问题{n - 1}") for n in range(1, 6))
    cot = rows[(test["item_id"], "five_shot_cot")]["messages"][0]["content"]
    assert "让我们逐步分析。解析0\n所以答案是A。" in cot
    # dev asked on request: five shots, never the item itself, the fifth from its level's other subject
    rows = {(r["item_id"], r["setting"]): r for r in build_prompt_rows(
        items, [_variant(i) for i in items], {"aceval": ["dev", "test"]})}
    dev_prompt = rows[(dev[0]["item_id"], "five_shot_ao")]["messages"][0]["content"]
    assert "问题0\nA" in dev_prompt.split("题目：")[-1] and "：问题0\n" not in dev_prompt.split("题目：")[0]
    assert re.findall(r"示例\d：问题(\d)", dev_prompt) == ["1", "2", "3", "4", "7"]


def test_shots_are_dropped_when_the_prompt_would_overflow():
    long_dev = [_aceval(f"aceval/dev/geography/{n}", "dev", n) | {"question": "长" * 2500} for n in range(5)]
    test = _aceval("aceval/test/geography/0", "test", 9, answer=None)
    (message,), _ = render(test, _variant(test), "five_shot_ao", [_variant(d) | {"metadata": d["metadata"]}
                                                                 for d in long_dev])
    assert len(re.findall(r"示例\d：", message["content"])) == 2 and len(message["content"]) <= 6000


def test_aceval_extraction_cases():
    assert extract_aceval("C") == "C"
    assert extract_aceval("答案是B。因为A和C都不对") == "B"
    assert extract_aceval("选项A正确，选项B正确") == AMBIGUOUS
    assert extract_aceval("甲和乙都有道理") == "未匹配到"
    assert extract_aceval("") == "空"
    assert extract_label("这句诗的情感是隐含正面的", ["正面", "隐含正面", "负面"]) == "隐含正面"


def _item(fmt, answer, benchmark="wenmind", task="t", **extra):
    return {"benchmark": benchmark, "task": task, "format": fmt, "answer": answer,
            "choices": extra.pop("choices", []), "references": [], "metadata": extra.pop("metadata", {})} | extra


def test_rule_scores():
    mcq = _item("mcq_single", "B", choices=["甲", "乙", "丙", "丁"])
    assert score_response(mcq, "B")["score"] == 1.0 and score_response(mcq, "答案：C")["score"] == 0.0
    multi = _item("mcq_multi", "A、C")
    assert [score_response(multi, t)["score"] for t in ("A、C", "A", "A、B")] == [1.0, 0.5, 0.0]
    label = _item("classification", "负面", metadata={"labels": ["正面", "负面"]})
    assert score_response(label, "负面")["score"] == 1.0 and score_response(label, "正面")["score"] == 0.0
    blank = _item("fill_blank", "黄河入海流。")
    assert score_response(blank, "答案：黃河入海流")["score"] == 1.0
    qa = score_response(_item("open_qa", "答"), "答")
    assert qa["score"] is None and qa["reason"] == "needs the LLM judge"
    withheld = score_response(_item("mcq_single", None), "A")
    assert withheld["score"] is None and "withheld" in withheld["reason"]
    failed = score_response(mcq, None, error="timeout")
    assert failed["score"] is None and "timeout" in failed["reason"]


def test_translation_uses_sacrebleu_chrf_and_bleu():
    item = _item("translation", "学习了又按时温习，不也是很愉快吗？", benchmark="wyweb", task="wywmt")
    hyp = "学习了并且按时温习，不也很愉快吗？"
    row = score_response(item, hyp)
    details = row["details"]
    assert abs(details["chrf"] - sacrebleu.sentence_chrf(hyp, [item["answer"]]).score) < 1e-9
    assert abs(details["bleu"] - sacrebleu.sentence_bleu(hyp, [item["answer"]], tokenize="zh").score) < 1e-9
    assert 0 < row["score"] < 1 and score_response(item, item["answer"])["score"] == 1.0
