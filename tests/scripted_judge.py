"""A scripted LLM judge on the loopback OpenAI-compatible server: its verdict is a function of
the judge prompt (wenheng's WenMind templates and Fùxì's Figure 4 prompt), so tests know every
score in advance.

  single-answer MCQ  ["1"] when the answer equals the gold, else ["0"]
  multi-answer MCQ   ["1"] equal, ["0.5"] a proper subset of the gold's letters, else ["0"]
  subjective         ["0.8", "..."]
  scoring points     equal: ["2", "5", "..."] (P_obtain > P_all: clamped to 1); else ["4", "1", "..."]
  Fùxì (Y/N)         "Y" when the prediction equals the gold, else "N"

Markers in an item's question script faults: GARBLED_ONCE answers prose on the first attempt
and a verdict once the retry reminder is there; GARBLED always answers prose; OUT_OF_RANGE
answers ["7"] (a score outside [0, 1]). Transport failures use the server's own `Fault`s."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.testing import openai_server
from pipeline.testing.openai_server import Fault, OpenAIServer

GARBLED_ONCE = "【格式一次出错】"
GARBLED = "【格式总出错】"
OUT_OF_RANGE = "【分数越界】"
PROSE = "我认为这个回答基本正确，可以给分。"


def _section(prompt: str, *heads: str) -> str:
    for head in heads:
        found = re.search(re.escape(head) + r"\n(.*?)(?:\n\n|$)", prompt, re.S)
        if found:
            return found.group(1).strip()
    return ""


def _letters(text: str) -> set[str]:
    return set(re.findall(r"[A-H]", text))


def verdict(prompt: str, choices: list[str] | None = None) -> str:
    if prompt.startswith("作为一名阅卷老师"):
        found = re.search(r"\[标准答案\]: (.*?) \*\*\* \[预测答案\]: (.*?) \*\*\* <end>", prompt, re.S)
        letter = "Y" if found and found.group(1).strip() == found.group(2).strip() else "N"
        if GARBLED in prompt or (GARBLED_ONCE in prompt and "第2次" not in prompt):
            return PROSE.replace("正确", "").replace("给分", "")   # no Y or N in it
        return letter if not choices or letter in choices else choices[0]
    if GARBLED in prompt or (GARBLED_ONCE in prompt and "第2次" not in prompt):
        return PROSE
    if OUT_OF_RANGE in prompt:
        return '["7"]'
    gold = _section(prompt, "【标准答案】", "【参考答案】", "【参考作品】")
    answer = _section(prompt, "【学生作答】", "【学生作品】")
    same = gold == answer
    if "单项选择题" in prompt:
        return json.dumps(["1" if same else "0"])
    if "多项选择题" in prompt:
        got, want = _letters(answer), _letters(gold)
        return json.dumps(["1" if got == want else "0.5" if got and got < want else "0"])
    if "创作题" in prompt:
        return '好的。["0.8", "对仗大体工整。"]'   # text around the array: read tolerantly
    if "采分点" in prompt:
        return json.dumps(["2", "5", "全部答出。"] if same else ["4", "1", "只答出一点。"], ensure_ascii=False)
    return PROSE


def _answer(prompt: str, max_tokens: int, choices: list[str] | None = None) -> tuple[str, str]:
    return verdict(prompt, choices), "stop"


def item(n, task, group, fmt, question, answer, bench="wenmind"):
    """An item row as the judge reads it."""
    return {"item_id": f"{bench}/test/{task}/{n}", "benchmark": bench, "task": task, "task_group": group,
            "format": fmt, "question": question, "answer": answer, "context": None, "choices": [],
            "metadata": {}}


# One item for each WenMind route (wenheng's own test content), for the judge's tests.
ITEMS = [
    item(0, "function words", "function words", "mcq_single", "“说”的意思是：A、说话 B、高兴", "B"),
    item(1, "poets and works", "poets and works", "mcq_multi", "下列属于唐代诗人的两项是：A、李白 B、苏轼 C、杜甫", "A、C"),
    item(2, "sentiment classification", "sentiment classification", "classification", "这首诗的情感是？", "喜悦"),
    item(3, "comprehension dictation", "basic Q&A", "fill_blank", "补全：学而时习之，____", "不亦说乎"),
    item(4, "couplet following", "couplet", "open_qa", "上联：春风绿柳千家暖，请对下联。", "瑞雪红梅万户春"),
    item(5, "poetry writing", "ancient poetry writing", "open_qa", "以“秋月”为题写一首五言绝句。", "（示例）"),
    item(6, "ancient prose writing", "ancient prose writing", "open_qa", "以文言写一篇短文，题为《惜时》。", "（示例）"),
    item(7, "synonyms", "idiom", "open_qa", "写出“一丝不苟”的一个近义成语。", "精益求精"),
    item(8, "poet introduction", "poet introduction", "open_qa", "简要介绍王维。", "唐代诗人，号摩诘居士"),
    item(9, "HengPi writing", "couplet", "open_qa", "为下面的对联拟横批：……", "万象更新"),
]


@contextmanager
def scripted_judge(monkeypatch, faults: list[Fault] = ()) -> Iterator[OpenAIServer]:
    """The loopback server answering as the scripted judge (the server's `answer` swapped for
    `verdict` for the duration of the test)."""
    monkeypatch.setattr(openai_server, "answer", _answer)
    with OpenAIServer(faults=list(faults)) as server:
        yield server


def judge_models_yaml(server: OpenAIServer, judges: str, evaluated: str = "") -> str:
    """models.yaml with the oracle and random baselines, the scripted judge and `judges:`."""
    return (f"models:\n"
            f"  oracle: {{engine: baseline, strategy: oracle}}\n"
            f"  random: {{engine: baseline, strategy: random, seed: 0}}\n{evaluated}"
            f"  judge: {{engine: openai, base_url: '{server.base_url}', model: {server.model}, api_key_env: null,"
            f" max_retries: 0, timeout_s: 5, concurrency: 4}}\n"
            f"judges:\n{judges}")
