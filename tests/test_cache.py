"""The response cache in front of an engine: what is sent, what is stored."""

from __future__ import annotations

from pipeline.engines import Completion, Request, cache_key, run_with_cache
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.cache import ResponseCache


def _requests(n, model="m"):
    engine_id = {"engine": "test"}
    return [Request(cache_key=cache_key(model, engine_id, [{"role": "user", "content": f"问{i % 3}"}],
                                        {"temperature": 0.0, "max_tokens": 8}),
                    messages=({"role": "user", "content": f"问{i % 3}"},), max_tokens=8, answer="A",
                    choices=("A", "B")) for i in range(n)]


def test_second_pass_sends_nothing_and_identical_prompts_go_once(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    engine = BaselineEngine("oracle")
    requests = _requests(9)          # only 3 distinct prompts
    found, stats = run_with_cache(engine, requests, cache)
    assert engine.prompts_received == 3 and stats.sent == 3 and stats.cache_hits == 0
    assert all(found[r.cache_key].text == "A" for r in requests)
    reopened = ResponseCache(tmp_path / "c.sqlite")   # persisted, not just in memory
    _, stats = run_with_cache(engine, requests, reopened)
    assert engine.prompts_received == 3 and stats.sent == 0 and stats.cache_hits == 9


def test_key_depends_on_model_prompt_and_sampling():
    msgs = [{"role": "user", "content": "问"}]
    base = cache_key("m", {"e": 1}, msgs, {"temperature": 0.0})
    assert base == cache_key("m", {"e": 1}, msgs, {"temperature": 0.0})
    assert len({base, cache_key("n", {"e": 1}, msgs, {"temperature": 0.0}),
                cache_key("m", {"e": 2}, msgs, {"temperature": 0.0}),
                cache_key("m", {"e": 1}, [{"role": "user", "content": "答"}], {"temperature": 0.0}),
                cache_key("m", {"e": 1}, msgs, {"temperature": 0.7})}) == 5


class _Flaky:
    def __init__(self):
        self.calls = 0

    def identity(self):
        return {"engine": "flaky"}

    def load(self):
        pass

    def generate(self, requests, on_result=None):
        self.calls += 1
        results = [Completion(text=None, error="boom") if self.calls == 1 else Completion(text="ok")
                   for _ in requests]
        for index, comp in enumerate(results):
            on_result(index, comp)
        return results


def test_errors_are_returned_but_not_cached(tmp_path):
    cache, engine = ResponseCache(tmp_path / "c.sqlite"), _Flaky()
    requests = _requests(2)
    found, stats = run_with_cache(engine, requests, cache)
    assert stats.errors == 2 and found[requests[0].cache_key].error == "boom" and len(cache) == 0
    found, stats = run_with_cache(engine, requests, cache)
    assert stats.sent == 2 and found[requests[0].cache_key].text == "ok" and len(cache) == 2


def test_oracle_is_not_fooled_by_identical_prompts_with_different_golds(tmp_path):
    """Real benchmarks hold identical questions with different golds; the oracle must still
    answer each with its own gold, while a real model's identical prompts share one call."""
    import json

    from pipeline.config import ModelSpec
    from pipeline.inference import plan

    items = {f"x/{i}": {"item_id": f"x/{i}", "benchmark": "aceval", "format": "mcq_single", "answer": gold,
                        "choices": ["甲", "乙", "丙", "丁"], "metadata": "{}"} for i, gold in enumerate("AB")}
    prompts = [{"item_id": f"x/{i}", "benchmark": "aceval", "variant": "original", "setting": "zero_shot_ao",
                "max_tokens": 8, "prompt_hash": "h", "messages": json.dumps([{"role": "user", "content": "同一题"}])}
               for i in range(2)]
    oracle = BaselineEngine("oracle")
    planned = plan(ModelSpec("oracle", "baseline"), oracle.identity(), "aceval", prompts, items)
    found, stats = run_with_cache(oracle, [r for _, r in planned], ResponseCache(tmp_path / "c.sqlite"))
    assert [found[r.cache_key].text for _, r in planned] == ["A", "B"] and stats.sent == 2
    model = BaselineEngine("random")
    planned = plan(ModelSpec("random", "baseline"), model.identity(), "aceval", prompts, items)
    _, stats = run_with_cache(model, [r for _, r in planned], ResponseCache(tmp_path / "d.sqlite"))
    assert stats.sent == 1
