"""Fùxì and CP-DUE prompts as their papers print them, CP-DUE AU's three-letter answers (scorer,
random baseline at chance, oracle at 100). The expected prompts are typed out here from the papers:
Fùxì Appendix D (Figures 5-25), CP-DUE Appendix A (Figure 6)."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from conftest import ROOT

from pipeline.config import ModelSpec, SourceSpec
from pipeline.engines import Request
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.cache import ResponseCache, run_with_cache
from pipeline.inference import give_golds, plan, response_rows
from pipeline.ingest import parse_source
from pipeline.prompts import build_prompt_rows, render
from pipeline.scoring.rules import score_response, score_rows

SAMPLES = ROOT / "data" / "samples"

# Fùxì, Appendix D: each task's Instruction, as printed (ASCII commas and colons included; BCC's
# "道藏佛藏" lacks its 、 in the paper). BA and BD have none.
FUXI_INSTRUCTIONS = {
    "ACRC": "以下是一道文言文阅读理解的单项选择题, 请直接给出正确答案的选项。",
    "IRC": "以下是关于成语的单项选择题,请直接给出正确答案的选项。",
    "TCMSRC": "以下是关于中医辨证的单项选择题,请直接给出正确答案的选项。",
    "ASQA": "给出以下歇后语的后半句谜底。",
    "LCQA": "请帮我找出下面文言文句子中的通假字。",
    "BA": None,
    "BD": None,
    "BCC": "请将提供的书归类到易藏、医藏、艺藏、诗藏、史藏、子藏、集藏、儒藏、道藏佛藏中的一类。",
    "PG": "给出一首符合下述关键词的五言诗、七言诗或者词。",
    "PLST": "请给出以下句子的出处。",
    "FQST": "请给出以下句子的出处。",
    "IST": "给出以下成语的出处。",
    "IPT": "根据以下翻译给出对应的古诗词原文。",
    "PT": "翻译以下诗词。",
    "ACT": "将这句话翻译为现代汉语:",
    "PA": "赏析以下诗词。",
    "IE": "给出以下成语的解释。",
    "TCMQA": "根据以下文本回答问题。",
    "PE": "给出以下中药方剂的成份以及功效。",
    "CG": "对对联, 请根据上联生成下联。",
    "CiG": "按照提供的词牌名和题目写一首词, 要求严格遵守词牌的格律。",
}

NO_ALLUSION = "没有使用典故或使用的典故不在以上三个选项里。"
CPDUE_TAIL = "不要包含任何解释、标点或多余的文字。"


def _items(benchmark: str) -> dict[str, dict]:
    return {i["item_id"]: i for i in parse_source(SourceSpec(benchmark, SAMPLES / benchmark, "sample")).items}


def _prompt(item: dict, setting: str) -> tuple[str, int | None]:
    variant = {k: item[k] for k in ("context", "question", "choices")}
    (message,), max_tokens = render(item, variant, setting)
    assert message["role"] == "user"
    return message["content"], max_tokens


# ---- Fùxì ---------------------------------------------------------------------------------------

def test_fuxi_prompts_are_appendix_d_instruction_newline_input():
    items = _items("fuxi")
    first = {}
    for item in sorted(items.values(), key=lambda i: i["item_id"]):
        first.setdefault(item["task"], item)
    assert set(first) == set(FUXI_INSTRUCTIONS)
    for task, item in first.items():
        text, _ = _prompt(item, "zero_shot")
        body = item["question"]
        if task == "TCMQA":                       # the paper's input: passage, then 问题:question
            body = f"{item['context']}\n问题:{item['question']}"
        if item["choices"]:                       # the paper's MCQ inputs carry the options
            body += "\n" + "\n".join(f"{letter}. {c}" for letter, c in zip("ABCD", item["choices"]))
        instruction = FUXI_INSTRUCTIONS[task]
        assert text == (body if instruction is None else f"{instruction}\n{body}"), task


def test_fuxi_prompts_spelled_out():
    items = _items("fuxi")
    assert _prompt(items["fuxi/test/CG/cg-002"], "zero_shot")[0] == "对对联, 请根据上联生成下联。\n海内存知己"
    assert _prompt(items["fuxi/test/BA/ba-001"], "zero_shot")[0] == "请问《文心雕龙》的作者是谁？"
    assert _prompt(items["fuxi/test/IRC/irc-002"], "zero_shot")[0] == (
        "以下是关于成语的单项选择题,请直接给出正确答案的选项。\n"
        "成语：杯弓蛇影\n出处：时北壁上有悬赤弩，照于杯，形如蛇。\n问题：这个成语的意思是\n"
        "A. 形容酒量很大\nB. 比喻武艺高强\nC. 比喻因疑神疑鬼而自相惊扰\nD. 比喻以假乱真")
    assert _prompt(items["fuxi/test/CiG/cig-001"], "zero_shot")[0] == (
        "按照提供的词牌名和题目写一首词, 要求严格遵守词牌的格律。\n词牌：忆江南 题目：江南忆旧")
    # no hint of the scored rule beyond the paper's own words
    for item in items.values():
        text, _ = _prompt(item, "zero_shot")
        assert "字数" not in text and "句数" not in text and "答案：" not in text, item["item_id"]


def test_fuxi_budgets_fit_the_reference_lengths():
    items = _items("fuxi")
    budget = {i["task"]: _prompt(i, "zero_shot")[1] for i in items.values()}
    assert budget["ACRC"] == 64 and budget["BA"] == 512 and budget["IPT"] == 512 and budget["PT"] == 512
    assert budget["PA"] == 2048 >= 1.5 * 1312              # Table 2: PA answers average 1,312 characters
    assert all(b is not None for b in budget.values())


# ---- CP-DUE -------------------------------------------------------------------------------------

def test_cpdue_prompts_are_figure_6():
    items = _items("cpdue")

    def prompt(item_id: str) -> str:
        text, max_tokens = _prompt(items[item_id], "single_choice")
        assert max_tokens == 16
        return text

    assert prompt("cpdue/test/CK/ck-001") == (
        "请根据以下单项选择题，仅返回A、B、C中的一个字母作为答案，" + CPDUE_TAIL + "\n"
        "题目: “春蚕到死丝方尽，蜡炬成灰泪始干”出自哪位诗人之手？\nA. 杜牧\nB. 李商隐\nC. 温庭筠")
    assert prompt("cpdue/test/ST/st-002") == (
        "请你根据以下指示选择所给词作的语言风格。仅返回A、B、C、D、E、F、G、H中的一个字母作为答案，" + CPDUE_TAIL + "\n"
        "风格解释:A. 真率明朗：语言直白自然，情感坦率\nB. 高旷清雄：襟怀开阔，超逸豪健\nC. 婉约清新：细腻含蓄，清丽柔美\n"
        "D. 奇艳俊秀：构思新奇，辞采秀丽\nE. 典丽精工：用字典雅，结构严密工整\nF. 豪迈奔放：气势雄壮，感情激昂\n"
        "G. 骚雅清劲：格调高雅，清空劲健\nH. 密丽险涩：意象繁密，辞藻奇丽而晦涩\n"
        "词作: 如梦令\n常记溪亭日暮，沉醉不知归路。兴尽晚回舟，误入藕花深处。争渡，争渡，惊起一滩鸥鹭。")
    # TH is not in the paper: ST's shape with ten themes (A-J)
    assert prompt("cpdue/test/TH/th-003") == (
        "请你根据以下指示选择所给诗作的题材。仅返回A、B、C、D、E、F、G、H、I、J中的一个字母作为答案，" + CPDUE_TAIL + "\n"
        "题材:A. 山水田园\nB. 边塞征战\nC. 送别留别\nD. 思乡怀人\nE. 咏史怀古\nF. 咏物言志\nG. 闺怨宫怨\nH. 羁旅行役\n"
        "I. 节令时序\nJ. 哲理禅趣\n诗作: 乌衣巷\n朱雀桥边野草花，乌衣巷口夕阳斜。旧时王谢堂前燕，飞入寻常百姓家。")
    assert prompt("cpdue/test/WS/ws-002") == (
        "请根据以下在*处空缺的七律，结合对仗、格律、连贯性等角度综合考虑，选择最合适填入空缺的选项。"
        "返回A、B、C、D中的一个字母作为答案，" + CPDUE_TAIL + "\n"
        "被挖空的诗句: 丞相祠堂何处寻，锦官城外柏森森。映阶碧草自春色，隔叶黄鹂*好音。三顾频烦天下计，两朝开济老臣心。"
        "出师未捷身先死，长使英雄泪满襟。\nA. 传\nB. 鸣\nC. 空\nD. 多")
    assert prompt("cpdue/test/AU/au-002") == (
        "请你阅读以下诗句。并判断其涉及的典故人物、典故出处、典故含义。依次返回A、B、C、D中的字母作为三道题的答案（如:CAB），"
        "中间" + CPDUE_TAIL + "\n"
        "诗句:凭谁问：廉颇老矣，尚能饭否？\n"
        "典故人物:A. 廉颇\nB. 蔺相如\nC. 李牧\nD. " + NO_ALLUSION + "\n"
        "典故出处:A. 《左传》\nB. 《史记·廉颇蔺相如列传》\nC. 《战国策·齐策》\nD. " + NO_ALLUSION + "\n"
        "典故含义:A. 感叹老将功成身退的从容\nB. 讽刺朝廷重用年迈之人\nC. 以年老仍思报国的名将自比，抒发壮志难酬的悲愤\n"
        "D. " + NO_ALLUSION)
    poems = ("A. 春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。\nB. 春来日渐长，庭树发新芳。闲坐听莺语，清风满草堂。\n"
             "C. 春天来了真正好，花儿红来草儿青。大家出门去游玩，心里高兴笑盈盈。")
    for part, word in (("best", "最好"), ("worst", "最坏")):      # the paper's 最好(坏), typo 从从中 as printed
        assert prompt(f"cpdue/test/OQ/oq-001-{part}") == (
            f"你是一个诗歌擂台的评委。以下三首都是相同题材的擂台作品，请你从从中选出整体创作{word}的一项古诗。"
            "返回A、B、C中的一个字母作为答案，" + CPDUE_TAIL + "\n" + poems)


# ---- AU: one prompt, three letters --------------------------------------------------------------

def _au_item(answer: str = "CAB") -> dict:
    questions = [{"part": p, "label": label} for p, label in
                 (("figure", "典故人物"), ("source", "典故出处"), ("meaning", "典故含义"))]
    return {"item_id": "cpdue/test/AU/x", "benchmark": "cpdue", "task": "AU", "format": "mcq_single",
            "choices": [], "answer": answer, "metadata": {"questions": questions, "options_per_question": 4}}


@pytest.mark.parametrize("text", [
    "CAB", "cab", "C A B", "C,A,B", "C、A、B", "答案：CAB", "ＣＡＢ", "1.C 2.A 3.B", "1. C\n2. A\n3. B",
    "(1)C (2)A (3)B", "典故人物:C 典故出处:A 典故含义:B", "典故人物：C（不是A）\n典故出处：A\n典故含义：B",
    "1.C，因为A不对 2.A 3.B", "第一题C 第二题A 第三题B", "CAB。理由：A项不合",
])
def test_au_scorer_reads_three_letters_in_order(text):
    row = score_response(_au_item(), text)
    assert row["scorer"].startswith("option_sequence@") and row["reason"] is None
    assert (row["score"], row["extracted"]) == (1.0, "CAB")
    assert row["details"] == {"q1": 1, "q2": 1, "q3": 1, "extracted": "CAB"}


def test_au_scorer_per_question_and_all_correct():
    item = _au_item("CAB")
    assert score_response(item, "CAD")["details"] == {"q1": 1, "q2": 1, "q3": 0, "extracted": "CAD"}
    assert score_response(item, "CAD")["score"] == 0.0
    assert score_response(item, "BAB")["details"] == {"q1": 0, "q2": 1, "q3": 1, "extracted": "BAB"}
    assert score_response(item, "ABC")["details"] == {"q1": 0, "q2": 0, "q3": 0, "extracted": "ABC"}
    # unreadable answers are wrong on every question
    for text in ("CA", "ABCD", "我不知道", "答案是CAB，不是CAD", "CAE"):
        row = score_response(item, text)
        assert row["score"] == 0.0 and row["details"] == {"q1": 0, "q2": 0, "q3": 0, "extracted": None}, text
    assert score_response(_au_item("DDD"), "DDD")["score"] == 1.0


def _au_file(path, groups: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for g in range(groups):
            for part in ("figure", "source", "meaning"):
                f.write(json.dumps({"id": f"{g}-{part}", "task": "AU", "group": f"g{g}", "part": part,
                                    "line": f"第{g}句诗", "options": [f"{part}{g}甲", f"{part}{g}乙", f"{part}{g}丙"],
                                    "answer": "ABCD"[rng.randrange(4)]}, ensure_ascii=False) + "\n")


def _baseline(tmp_path, strategy: str, groups: int) -> tuple[list[dict], list[dict], list]:
    (tmp_path / "au").mkdir()
    _au_file(tmp_path / "au" / "test.jsonl", groups)
    items = parse_source(SourceSpec("cpdue", tmp_path / "au", "v")).items
    assert len(items) == groups
    variants = [{k: it[k] for k in ("item_id", "benchmark", "context", "question", "choices", "answer", "references")}
                | {"variant": "original"} for it in items]
    engine = BaselineEngine(strategy, seed=0)
    by_id = {it["item_id"]: it for it in items}
    planned = plan(ModelSpec(strategy, "baseline", {"strategy": strategy, "seed": 0}), engine.identity(), "cpdue",
                   build_prompt_rows(items, variants), by_id)
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        found, _ = run_with_cache(give_golds(engine, planned, by_id), [r for _, r in planned], cache)
    responses = response_rows(strategy, planned, found)
    return responses, score_rows(responses, items), [req for _, req in planned]


def test_random_baseline_answers_au_with_three_independent_letters_at_chance(tmp_path):
    groups = 1200
    responses, scores, requests = _baseline(tmp_path, "random", groups)
    assert all(r.picks == 3 and r.choices == tuple("ABCD") and r.constrain_to == () for r in requests)
    assert all(len(r["text"]) == 3 and set(r["text"]) <= set("ABCD") for r in responses)
    assert set(Counter(ch for r in responses for ch in r["text"])) == set("ABCD")
    for k in ("q1", "q2", "q3"):                           # 1/4 per question; sd 0.0125
        accuracy = sum(s["details"][k] for s in scores) / groups
        assert abs(accuracy - 0.25) <= 0.05, (k, accuracy)
    all_right = sum(s["score"] for s in scores) / groups   # 1/64 = 0.0156 all three; sd 0.0036
    assert abs(all_right - 1 / 64) <= 0.015, all_right


def test_oracle_scores_100_on_au(tmp_path):
    _, scores, _ = _baseline(tmp_path, "oracle", 50)
    assert all(s["score"] == 1.0 and s["details"] == {"q1": 1, "q2": 1, "q3": 1, "extracted": s["extracted"]}
               for s in scores)


def test_single_answer_draws_are_unchanged():
    """picks == 1 (every item but AU) draws exactly rng.choice(choices), as before picks existed."""
    engine = BaselineEngine("random", seed=0)
    engine.use_golds({})
    for n in range(50):
        req = Request(cache_key=f"key{n}", messages=(), max_tokens=8, choices=tuple("ABCDEFGHIJ"[: 2 + n % 9]))
        (completion,) = engine.generate([req])
        assert completion.text == random.Random(f"0:key{n}").choice(req.choices)
