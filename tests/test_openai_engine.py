"""The OpenAI-compatible engine against the loopback server: faults, retries, bounds, both APIs."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from conftest import write_yaml

from pipeline.config import load_models
from pipeline.engines import Request, openai_engine
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.engines.registry import build_engine
from pipeline.engines.vllm_engine import plain_prompt
from pipeline.testing.openai_server import Fault, OpenAIServer, answer


def _request(prompt: str, max_tokens: int = 32, constrain_to: tuple[str, ...] = (),
             system: str | None = None) -> Request:
    messages = (({"role": "system", "content": system},) if system else ()) + ({"role": "user", "content": prompt},)
    return Request(cache_key=cache_key("m", {"engine": "test"}, messages, {"max_tokens": max_tokens}),
                   messages=messages, max_tokens=max_tokens, constrain_to=constrain_to)


def _engine(server: OpenAIServer, **overrides) -> OpenAIEngine:
    params = {"model": server.model, "base_url": server.base_url, "api_key_env": None, "timeout_s": 5.0,
              "max_retries": 3}
    return OpenAIEngine(**(params | overrides))


@pytest.fixture(params=["aiohttp", "httpx"])
def transport(request, monkeypatch):
    """Both of the client's transports: aiohttp when installed, else its default httpx."""
    if request.param == "httpx":
        monkeypatch.setattr(openai_engine, "_http_client", lambda: None)
    return request.param


def test_faults_are_retried_each_item_succeeds_once_and_nothing_is_lost(tmp_path, transport):
    prompts = [f"问题{i}" for i in range(30)]
    faults = [Fault("429", prompt=prompts[1], retry_after=0.2), Fault("500", prompt=prompts[2], times=2),
              Fault("timeout", prompt=prompts[3], hang_s=3.0), Fault("reset", prompt=prompts[4]),
              Fault("500", requests=frozenset({12, 25}), times=None),   # whichever prompts arrive 12th and 25th
              Fault("500", prompt=prompts[5], times=None)]              # never succeeds
    requests = [_request(p) for p in prompts]
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with OpenAIServer(latency_s=0.02, faults=faults) as server:
        engine = _engine(server, timeout_s=1.0, max_retries=2, concurrency=8)
        found, stats = run_with_cache(engine, requests, cache)

        assert set(found) == {r.cache_key for r in requests}            # every request has a completion
        failed = [p for p, r in zip(prompts, requests) if found[r.cache_key].error]
        assert failed == [prompts[5]] and stats.errors == 1
        assert found[requests[5].cache_key].error.startswith("InternalServerError:")
        assert server.attempts[prompts[5]] == 3                          # 1 try + max_retries
        assert {p: server.successes[p] for p in prompts} == {p: int(p != prompts[5]) for p in prompts}
        numbered = {server.arrivals[11], server.arrivals[24]}   # got an extra 500, whatever else they had
        assert all(server.attempts[p] >= 2 for p in numbered)
        expected = {prompts[1]: 2, prompts[2]: 3, prompts[3]: 2, prompts[4]: 2, prompts[5]: 3}
        assert {p: server.attempts[p] for p in prompts if p not in numbered} == {
            p: expected.get(p, 1) for p in prompts if p not in numbered}
        for prompt, request in zip(prompts, requests):
            if prompt != prompts[5]:
                assert found[request.cache_key].text == answer(prompt, 32)[0]
        assert len(cache) == 29                                          # the error row is not cached

        server.faults.clear()
        found, stats = run_with_cache(engine, requests, cache)           # the next run retries only the failure
        assert stats.sent == 1 and stats.errors == 0 and server.successes[prompts[5]] == 1
        assert sum(server.successes.values()) == 30


def test_retry_after_is_honoured():
    with OpenAIServer(faults=[Fault("429", prompt="慢", retry_after=2)]) as server:
        [completion] = _engine(server).generate([_request("慢")])
        first, second = server.attempt_times["慢"]
    assert completion.error is None and server.successes["慢"] == 1
    assert second - first >= 2.0          # the header's wait, not the client's 0.5 s first backoff
    assert completion.latency_s >= 2.0    # latency covers the whole call, waits included


def test_concurrency_bound_is_respected_and_reached():
    with OpenAIServer(latency_s=0.05) as server:
        completions = _engine(server, concurrency=6).generate([_request(f"p{i}") for i in range(48)])
    assert all(c.error is None for c in completions)
    assert server.max_in_flight == 6


def test_retries_stay_inside_the_concurrency_bound():
    faults = [Fault("500", times=1)]   # the first attempt of every prompt fails
    with OpenAIServer(latency_s=0.02, faults=faults) as server:
        completions = _engine(server, concurrency=4).generate([_request(f"p{i}") for i in range(16)])
    assert all(c.error is None for c in completions) and sum(server.attempts.values()) == 32
    assert server.max_in_flight <= 4


def test_chat_path_sends_messages_and_records_usage():
    request = _request("春眠不觉晓，下一句是？", max_tokens=6, system="你是古文老师。")
    with OpenAIServer() as server:
        [completion] = _engine(server, chat=True).generate([request])
        key = plain_prompt(request.messages)
        body = server.last_body[key]
    assert body["messages"] == list(request.messages) and body["max_completion_tokens"] == 6
    assert body["model"] == server.model and body["temperature"] == 0.0
    text, _ = answer(key, 6)
    assert completion.text == text and completion.finish_reason == "length"
    assert completion.tokens_in == len(key) and completion.tokens_out == len(text) == 6
    assert completion.latency_s > 0


def test_completions_path_joins_the_turns_like_the_offline_engine():
    request = _request("床前明月光", max_tokens=64, system="续写：")
    with OpenAIServer() as server:
        [completion] = _engine(server, chat=False).generate([request])
        body = server.last_body[plain_prompt(request.messages)]
    assert body["prompt"] == "续写：\n\n床前明月光" and body["max_tokens"] == 64 and "messages" not in body
    assert completion.text == "echo:续写：\n\n床前明月光" and completion.finish_reason == "stop"
    assert completion.tokens_in == len(body["prompt"]) and completion.tokens_out == len(completion.text)


def test_constrained_choice_sends_the_option_letters_only_when_asked():
    mcq, open_item = _request("选哪个？", constrain_to=("A", "B", "C", "D")), _request("翻译：学而时习之")
    with OpenAIServer() as server:
        plain = _engine(server).generate([_request("选哪个？")])
        assert "structured_outputs" not in server.last_body["选哪个？"]
        constrained = _engine(server, extra_body={"top_k": 1}).generate([mcq, open_item])
        assert server.last_body["选哪个？"]["structured_outputs"] == {"choice": ["A", "B", "C", "D"]}
        assert server.last_body["选哪个？"]["top_k"] == 1                     # extra_body passes through
        assert "structured_outputs" not in server.last_body["翻译：学而时习之"]   # no choices, no constraint
    assert plain[0].text.startswith("echo:") and constrained[0].text in ("A", "B", "C", "D")


def test_key_comes_from_the_named_environment_variable_only(monkeypatch):
    monkeypatch.setenv("WENHENG_TEST_KEY", "sk-test-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    with OpenAIServer() as server:
        engine = _engine(server, api_key_env="WENHENG_TEST_KEY")
        engine.load()
        assert engine.generate([_request("a")])[0].error is None
        assert server.authorization == {"Bearer sk-test-123"}
        assert "sk-test-123" not in repr(vars(engine)) + repr(engine.identity())

        server.authorization.clear()
        _engine(server, api_key_env=None).generate([_request("b")])      # a local server that needs no key
        assert server.authorization and "sk-must-not-leak" not in repr(server.authorization)

    monkeypatch.delenv("WENHENG_TEST_KEY")
    with pytest.raises(RuntimeError, match="WENHENG_TEST_KEY"):
        OpenAIEngine(model="m", api_key_env="WENHENG_TEST_KEY").load()


def test_identity_has_what_changes_outputs_and_not_the_key_or_concurrency():
    base = OpenAIEngine(model="qwen", base_url="http://127.0.0.1:8000/v1/", api_key_env="SOME_KEY").identity()
    assert base["base_url"] == "http://127.0.0.1:8000/v1" and base["model"] == "qwen" and base["chat"] is True
    assert "SOME_KEY" not in repr(base) and "concurrency" not in base
    same = OpenAIEngine(model="qwen", base_url="http://127.0.0.1:8000/v1", api_key_env="OTHER", concurrency=64,
                        timeout_s=5, max_retries=0).identity()
    assert same == base
    for change in ({"chat": False}, {"model": "qwen2"}, {"base_url": "http://127.0.0.1:9000/v1"},
                   {"extra_body": {"top_k": 1}}):
        assert OpenAIEngine(**({"model": "qwen", "base_url": "http://127.0.0.1:8000/v1"} | change)).identity() != base


def test_results_are_reported_as_they_arrive_in_the_callers_thread():
    faults = [Fault("429", prompt="slow", retry_after=2)]
    arrivals: list[tuple[int, float, int]] = []
    with OpenAIServer(faults=faults) as server:
        started = time.monotonic()
        _engine(server, concurrency=4).generate(
            [_request("slow"), _request("fast1"), _request("fast2")],
            on_result=lambda index, _: arrivals.append((index, time.monotonic() - started, threading.get_ident())))
    assert sorted(index for index, _, _ in arrivals) == [0, 1, 2] and arrivals[-1][0] == 0
    assert arrivals[1][1] < 1.0 and arrivals[2][1] >= 2.0                # the fast ones did not wait
    assert {thread for _, _, thread in arrivals} == {threading.get_ident()}   # SQLite needs the same thread


def test_generate_works_when_an_event_loop_is_already_running():
    threads = set()

    async def inside_a_loop():   # e.g. a notebook
        with OpenAIServer() as server:
            return _engine(server).generate([_request("x"), _request("y")],
                                            on_result=lambda *_: threads.add(threading.get_ident()))

    assert [c.text for c in asyncio.run(inside_a_loop())] == ["echo:x", "echo:y"]
    assert threads == {threading.get_ident()}
    assert not [t for t in threading.enumerate() if t.name == "openai-engine"]


def test_a_failing_callback_stops_the_run_and_is_raised():
    def broken(index, completion):
        raise OSError("disk full")

    with OpenAIServer(latency_s=0.01) as server:
        with pytest.raises(OSError, match="disk full"):
            _engine(server, concurrency=2).generate([_request(f"p{i}") for i in range(20)], on_result=broken)
        assert sum(server.successes.values()) < 20     # the remaining calls were cancelled, not sent
    assert not [t for t in threading.enumerate() if t.name == "openai-engine"]


def test_unreachable_server_gives_error_rows():
    engine = OpenAIEngine(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None, max_retries=0)
    completions = engine.generate([_request("a"), _request("b")])
    assert [c.text for c in completions] == [None, None]
    # The client's own type varies with its transport; the root cause is always named.
    assert all(c.error.startswith(("APIConnectionError", "APITimeoutError")) and "Connect" in c.error
               for c in completions)


def test_models_yaml_entry_builds_the_engine(tmp_path):
    models = load_models(write_yaml(tmp_path / "models.yaml", """models:
  served-qwen:
    engine: openai
    base_url: http://127.0.0.1:8000/v1
    model: Qwen2.5-7B-Instruct
    api_key_env: null
    chat: true
    concurrency: 32
    timeout_s: 120
    max_retries: 5
    sampling: {temperature: 0.0, max_tokens: 64}
"""))
    engine = build_engine(models["served-qwen"])
    assert isinstance(engine, OpenAIEngine)
    assert engine.concurrency == 32 and engine.api_key_env is None
    assert engine.identity()["model"] == "Qwen2.5-7B-Instruct"
