"""The response cache in front of an engine: what is sent, what is stored, where it lives."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from pipeline.config import ModelSpec
from pipeline.engines import Completion, Request
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.cache import ResponseCache, cache_file, cache_key, key_maker, open_cache, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.inference import give_golds, plan


def _requests(n, model="m"):
    engine_id = {"engine": "test"}
    return [Request(cache_key=cache_key(model, engine_id, [{"role": "user", "content": f"问{i % 3}"}],
                                        {"temperature": 0.0, "max_tokens": 8}),
                    messages=({"role": "user", "content": f"问{i % 3}"},), max_tokens=8,
                    choices=("A", "B")) for i in range(n)]


def test_second_pass_sends_nothing_and_identical_prompts_go_once(tmp_path):
    engine = BaselineEngine("oracle")
    requests = _requests(9)          # only 3 distinct prompts
    engine.use_golds({r.cache_key: "A" for r in requests})
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        found, stats = run_with_cache(engine, requests, cache)
    assert engine.prompts_received == 3 and stats.sent == 3 and stats.cache_hits == 0
    assert stats.collapsed == 6 and stats.sent + stats.cache_hits + stats.collapsed == stats.requested
    assert all(found[r.cache_key].text == "A" for r in requests)
    with ResponseCache(tmp_path / "c.sqlite") as reopened:   # persisted, not just in memory
        again, stats = run_with_cache(engine, requests, reopened)
    assert engine.prompts_received == 3 and stats.sent == 0 and stats.cache_hits == 9 and stats.collapsed == 0
    # an answer served from the cache keeps the time it was first given
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        stamps = dict(db.execute("SELECT cache_key, created_at FROM responses").fetchall())
    assert all(again[r.cache_key].created_at == stamps[r.cache_key] for r in requests)


def test_response_rows_keep_a_cached_answers_first_time():
    from datetime import UTC, datetime

    from pipeline.inference import response_rows

    req = _requests(1)[0]
    row = {"item_id": "i", "benchmark": "b", "variant": "original", "setting": "s", "prompt_hash": "h"}
    cached = Completion("A", created_at="2025-01-31T12:34:56.789Z")
    fresh = Completion("A")
    now = datetime.now(UTC)
    [old] = response_rows("m", [(row, req)], {req.cache_key: cached})
    [new] = response_rows("m", [(row, req)], {req.cache_key: fresh})
    assert old["created_at"] == datetime(2025, 1, 31, 12, 34, 56, 789000, tzinfo=UTC)
    assert new["created_at"] >= now
    assert cached == fresh   # the stamp is no part of the answer


def test_key_depends_on_model_prompt_sampling_and_scope():
    msgs = [{"role": "user", "content": "问"}]
    base = cache_key("m", {"e": 1}, msgs, {"temperature": 0.0})
    assert base == cache_key("m", {"e": 1}, msgs, {"temperature": 0.0}) == cache_key(
        "m", {"e": 1}, msgs, {"temperature": 0.0}, scope={})     # an empty scope is no scope
    assert len({base, cache_key("n", {"e": 1}, msgs, {"temperature": 0.0}),
                cache_key("m", {"e": 2}, msgs, {"temperature": 0.0}),
                cache_key("m", {"e": 1}, [{"role": "user", "content": "答"}], {"temperature": 0.0}),
                cache_key("m", {"e": 1}, msgs, {"temperature": 0.7}),
                cache_key("m", {"e": 1}, msgs, {"temperature": 0.0}, scope={"gold": "A"}),
                cache_key("m", {"e": 1}, msgs, {"temperature": 0.0}, scope={"gold": "B"})}) == 7


@pytest.mark.parametrize("identity", [{"engine": "openai", "model": "q", "extra": {"b": [1, 2], "a": None}},
                                      {"engine": "vllm", "dtype": "bfloat16", "seed": 0, "法": "中"}])
def test_key_maker_gives_cache_key(identity):
    """plan's keys (shared parts encoded once) are cache_key's, so existing cache rows stay hits."""
    key = key_maker("served-模型", identity)
    for messages in ([{"role": "user", "content": "问\"\n"}], ({"role": "system", "content": ""},
                                                               {"role": "user", "content": "1.5"}), []):
        for sampling in ({"temperature": 0.0, "max_tokens": None}, {"temperature": 0.7, "max_tokens": 8,
                                                                    "choice": ["A", "B"]}, {}):
            for scope in (None, {}, {"gold": "A"}, {"gold": None}):
                assert key(messages, sampling, scope) == cache_key("served-模型", identity, messages, sampling, scope)


def test_transport_settings_stay_out_of_the_key():
    """Concurrency, timeouts, retries and the key's variable change how answers arrive, not what
    they are: changing them must not invalidate the cache."""
    msgs = [{"role": "user", "content": "问"}]
    keys = {cache_key("m", OpenAIEngine(model="q", base_url="http://127.0.0.1:8000/v1", **transport).identity(),
                      msgs, {"temperature": 0.0, "max_tokens": 8})
            for transport in ({}, {"concurrency": 64, "timeout_s": 5, "max_retries": 0, "api_key_env": "OTHER"})}
    assert len(keys) == 1


def test_default_location_is_the_cache_dir_and_open_cache_closes(tmp_path, monkeypatch):
    monkeypatch.setenv("WENHENG_CACHE", str(tmp_path / "default"))
    assert cache_file() == tmp_path / "default" / "responses.sqlite"
    assert cache_file(tmp_path / "elsewhere") == tmp_path / "elsewhere" / "responses.sqlite"
    with open_cache() as cache:
        cache.put("k", Completion(text="答", tokens_out=1))
        assert cache.path == cache_file()
    with pytest.raises(sqlite3.ProgrammingError):   # closed on the way out of the block
        len(cache)
    with open_cache(tmp_path / "default") as again:
        assert again.get_many(["k", "missing"]) == {"k": Completion(text="答", tokens_out=1)}


def test_the_store_is_wal_and_each_answer_is_committed_as_it_lands(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        cache.put("k", Completion(text="答"))
        other = sqlite3.connect(tmp_path / "c.sqlite")   # another process's view, before any close
        assert other.execute("SELECT text FROM responses WHERE cache_key = 'k'").fetchall() == [("答",)]
        other.close()


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


def _duplicates():
    """Two items with the same prompt and different golds, as in WenMind and WYWEB."""
    items = {f"x/{i}": {"item_id": f"x/{i}", "benchmark": "aceval", "format": "mcq_single", "answer": gold,
                        "choices": ["甲", "乙", "丙", "丁"], "metadata": {}} for i, gold in enumerate("AB")}
    prompts = [{"item_id": f"x/{i}", "benchmark": "aceval", "variant": "original", "setting": "zero_shot_ao",
                "max_tokens": 8, "prompt_hash": "h", "messages": [{"role": "user", "content": "同一题"}]}
               for i in range(2)]
    return items, prompts


def test_oracle_is_not_fooled_by_identical_prompts_with_different_golds(tmp_path):
    """Real benchmarks hold identical questions with different golds; the oracle must still
    answer each with its own gold, while a real model's identical prompts share one call."""
    items, prompts = _duplicates()
    oracle = BaselineEngine("oracle")
    planned = plan(ModelSpec("oracle", "baseline"), oracle.identity(), "aceval", prompts, items)
    found, stats = run_with_cache(give_golds(oracle, planned, items), [r for _, r in planned],
                                  ResponseCache(tmp_path / "c.sqlite"))
    assert [found[r.cache_key].text for _, r in planned] == ["A", "B"] and stats.sent == 2
    model = BaselineEngine("random")
    planned = plan(ModelSpec("random", "baseline"), model.identity(), "aceval", prompts, items)
    _, stats = run_with_cache(give_golds(model, planned, items), [r for _, r in planned],
                              ResponseCache(tmp_path / "d.sqlite"))
    assert stats.sent == 1


def test_requests_carry_no_gold_and_real_engines_are_never_handed_one():
    items, prompts = _duplicates()
    assert "answer" not in {f.name for f in dataclasses.fields(Request)}
    engine = OpenAIEngine(model="q", base_url="http://127.0.0.1:8000/v1", api_key_env=None)
    before = dict(vars(engine))
    planned = plan(ModelSpec("served", "openai"), engine.identity(), "aceval", prompts, items)
    assert give_golds(engine, planned, items) is engine and vars(engine) == before
    assert len({r.cache_key for _, r in planned}) == 1     # no gold in a real model's key


def test_the_oracle_refuses_to_answer_without_golds():
    with pytest.raises(RuntimeError, match="use_golds"):
        BaselineEngine("oracle").generate(_requests(1))


def test_prompts_for_keeps_exactly_the_rows_plan_answers():
    """The responses asset turns only these rows into dicts; plan on them equals plan on all rows."""
    from pipeline import schema
    from pipeline.inference import prompts_for

    items, base = _duplicates()
    rows = [dict(row, variant=variant, setting=setting, benchmark=benchmark, item_id=row["item_id"])
            for row in base for variant in ("original", "simplified", "traditional")
            for setting in ("zero_shot_ao", "five_shot_ao", "zero_shot_cot")
            for benchmark in ("aceval", "wenmind")]
    frame = schema.to_frame(rows, schema.PROMPTS)
    for spec in (ModelSpec("served", "openai"), ModelSpec("served", "openai", variants=("original", "traditional"),
                                                        settings={"aceval": ("five_shot_ao", "zero_shot_cot")})):
        engine = OpenAIEngine(model="q", base_url="http://127.0.0.1:8000/v1", api_key_env=None)
        picked = prompts_for(frame, spec, "aceval")
        assert 0 < len(picked) < len(frame)
        everything = plan(spec, engine.identity(), "aceval", schema.records(frame), items)
        assert plan(spec, engine.identity(), "aceval", schema.records(picked), items) == everything
