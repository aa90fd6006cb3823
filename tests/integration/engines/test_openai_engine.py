"""The OpenAI-compatible engine against the loopback server (faults, retries, bounds, both APIs), and
its retry policy against the official client's own code."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

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


def _settled(server: OpenAIServer, successes: int, timeout_s: float = 2.0) -> int:
    """The server's success count once it reaches `successes`: it counts each success just after
    writing the answer, so a client can hold the answer before the count moves."""
    deadline = time.monotonic() + timeout_s
    while sum(server.successes.values()) < successes and time.monotonic() < deadline:
        time.sleep(0.01)
    return sum(server.successes.values())


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_faults_are_retried_each_item_succeeds_once_and_nothing_is_lost(tmp_path, chat):
    prompts = [f"问题{i}" for i in range(30)]
    faults = [Fault("429", prompt=prompts[1], retry_after=0.2), Fault("500", prompt=prompts[2], times=2),
              Fault("timeout", prompt=prompts[3], hang_s=3.0), Fault("reset", prompt=prompts[4]),
              Fault("500", requests=frozenset({12, 25}), times=None),   # whichever prompts arrive 12th and 25th
              Fault("500", prompt=prompts[5], times=None)]              # never succeeds
    requests = [_request(p) for p in prompts]
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with OpenAIServer(latency_s=0.02, faults=faults) as server:
        engine = _engine(server, timeout_s=1.0, max_retries=2, concurrency=8, chat=chat)
        found, stats = run_with_cache(engine, requests, cache)

        assert set(found) == {r.cache_key for r in requests}            # every request has a completion
        failed = [p for p, r in zip(prompts, requests) if found[r.cache_key].error]
        assert failed == [prompts[5]] and stats.errors == 1
        assert found[requests[5].cache_key].error == "InternalServerError: Error code: 500 - injected server error"
        assert server.attempts[prompts[5]] == 3                          # 1 try + max_retries
        _settled(server, 29)
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
        assert stats.sent == 1 and stats.errors == 0 and _settled(server, 30) == 30
        assert server.successes[prompts[5]] == 1


def test_retry_after_is_honoured():
    with OpenAIServer(faults=[Fault("429", prompt="慢", retry_after=2)]) as server:
        [completion] = _engine(server).generate([_request("慢")])
        _settled(server, 1)
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


def test_identity_has_what_changes_outputs_and_not_the_transport():
    base = OpenAIEngine(model="qwen", base_url="http://127.0.0.1:8000/v1/", api_key_env="SOME_KEY").identity()
    assert base["model"] == "qwen" and base["chat"] is True
    assert "SOME_KEY" not in repr(base) and "concurrency" not in base and "base_url" not in base
    same = OpenAIEngine(model="qwen", base_url="http://10.0.0.7:9000/v1", api_key_env="OTHER", concurrency=64,
                        timeout_s=5, max_retries=0).identity()
    assert same == base   # another host and port, key, concurrency, timeout, retries: the same answers
    for change in ({"chat": False}, {"model": "qwen2"}, {"revision": "2024-08-06"}, {"seed": 1},
                   {"extra_body": {"top_k": 1}}):
        assert OpenAIEngine(**({"model": "qwen", "base_url": "http://127.0.0.1:8000/v1"} | change)).identity() != base
    assert OpenAIEngine(model="qwen", revision="a").identity() != OpenAIEngine(model="qwen", revision="b").identity()


def test_an_endpoint_moved_to_another_port_is_served_from_the_cache(tmp_path):
    """The cache keys of the planned prompts do not name the endpoint: the same model served on
    another port sends nothing; a new `revision` (other weights under the same name) asks again."""
    spec_params = {"model": "fake-model", "api_key_env": None}
    prompts = [f"移{i}" for i in range(12)]

    def requests(engine):
        return [Request(cache_key=cache_key("served", engine.identity(), [{"role": "user", "content": p}],
                                            {"max_tokens": 16}),
                        messages=({"role": "user", "content": p},), max_tokens=16) for p in prompts]

    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        with OpenAIServer() as first:
            engine = OpenAIEngine(base_url=first.base_url, **spec_params)
            _, stats = run_with_cache(engine, requests(engine), cache)
            assert stats.sent == 12 and stats.errors == 0 and _settled(first, 12) == 12
        with OpenAIServer() as moved:
            assert moved.port != first.port
            engine = OpenAIEngine(base_url=moved.base_url, concurrency=2, timeout_s=9, **spec_params)
            found, stats = run_with_cache(engine, requests(engine), cache)
            assert stats.cache_hits == 12 and stats.sent == 0 and sum(moved.attempts.values()) == 0
            assert [found[r.cache_key].text for r in requests(engine)] == [answer(p, 16)[0] for p in prompts]
            pinned = OpenAIEngine(base_url=moved.base_url, revision="ckpt-2", **spec_params)
            _, stats = run_with_cache(pinned, requests(pinned), cache)
            assert stats.sent == 12 and _settled(moved, 12) == 12


def test_progress_counts_every_answer_and_error_of_the_openai_path(tmp_path, monkeypatch):
    """The OpenAI path's progress: done/total, tokens/s and errors, one final line in a log."""
    import io

    from pipeline import progress

    prompts = [f"进{i}" for i in range(20)]
    logged: list[str] = []
    stream = io.StringIO()
    monkeypatch.setattr(progress, "default_stream", lambda: stream)   # what run_with_cache's Progress writes to
    with OpenAIServer(latency_s=0.01, faults=[Fault("500", prompt=prompts[3], times=None)]) as server, \
            ResponseCache(tmp_path / "cache.sqlite") as cache:
        engine = _engine(server, max_retries=0, concurrency=4)
        _, stats = run_with_cache(engine, [_request(p) for p in prompts], cache, log=logged.append,
                                  label="aceval x served")
    assert stats.errors == 1
    out = stream.getvalue()
    assert "\r" not in out   # not a terminal: no redrawn line
    [final] = out.splitlines()
    assert final.startswith("aceval x served: 20/20 answered in ") and final.endswith(", 1 error")
    assert " tok/s, " in final and " calls/s" in final
    assert logged[-1] == final


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


# -- the official client's retry policy, reproduced ------------------------------------------------

def _official_client(max_retries: int = 2):
    openai = pytest.importorskip("openai")
    return openai.AsyncOpenAI(api_key="sk-unused", base_url="http://127.0.0.1:9/v1", max_retries=max_retries)


_RETRY_HEADERS = [{}, {"retry-after": "2"}, {"retry-after": "0.25"}, {"retry-after": "0"}, {"retry-after": "-3"},
                  {"retry-after": "120"}, {"retry-after": "121"}, {"retry-after": "1e400"}, {"retry-after": "inf"},
                  {"retry-after": "nan"}, {"retry-after": "soon"}, {"retry-after-ms": "1500"},
                  {"retry-after-ms": "150000"}, {"retry-after-ms": "x", "retry-after": "3"},
                  {"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"},        # 30 s after the frozen clock below
                  {"retry-after": "Wed, 21 Oct 2015 07:20:00 GMT"},        # in the past
                  {"x-should-retry": "true"}, {"x-should-retry": "false"},
                  {"x-should-retry": "true", "retry-after": "500"}]
_NOW = 1445412480.0   # Wed, 21 Oct 2015 07:28:00 GMT


def test_retry_constants_are_the_official_clients():
    constants = pytest.importorskip("openai._constants")
    assert (openai_engine.INITIAL_RETRY_DELAY, openai_engine.MAX_RETRY_DELAY, openai_engine.MAX_RETRY_AFTER_DELAY) == (
        constants.INITIAL_RETRY_DELAY, constants.MAX_RETRY_DELAY, constants.MAX_RETRY_AFTER_DELAY) == (0.5, 8.0, 120)


@pytest.mark.parametrize("headers", _RETRY_HEADERS, ids=repr)
def test_which_statuses_are_retried_is_the_official_clients_choice(headers, monkeypatch):
    httpx2 = pytest.importorskip("httpx2")
    client = _official_client()
    monkeypatch.setattr(time, "time", lambda: _NOW)
    for status in (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529):
        ours = openai_engine.should_retry(status, _CaseInsensitive(headers))
        assert ours == client._should_retry(httpx2.Response(status, headers=headers)), (status, headers)
    assert openai_engine.should_retry(429, {}) and openai_engine.should_retry(503, {})
    assert not openai_engine.should_retry(400, {}) and not openai_engine.should_retry(404, {})


@pytest.mark.parametrize("headers", [None, *_RETRY_HEADERS], ids=repr)
def test_retry_waits_are_the_official_clients(headers, monkeypatch):
    httpx2 = pytest.importorskip("httpx2")
    base_client = pytest.importorskip("openai._base_client")
    from openai._models import FinalRequestOptions

    monkeypatch.setattr(time, "time", lambda: _NOW)
    for max_retries in (2, 5, 12):
        client = _official_client(max_retries)
        options = FinalRequestOptions.construct(method="post", url="/chat/completions")
        for retries_taken in range(max_retries):
            for draw in (0.0, 0.37, 0.999):
                monkeypatch.setattr(base_client, "random", lambda draw=draw: draw)
                monkeypatch.setattr(openai_engine.random, "random", lambda draw=draw: draw)
                theirs = client._calculate_retry_timeout(max_retries - retries_taken, options,
                                                         None if headers is None else httpx2.Headers(headers))
                ours = openai_engine.retry_delay(retries_taken, None if headers is None else _CaseInsensitive(headers))
                assert ours == pytest.approx(theirs), (headers, max_retries, retries_taken, draw)
    monkeypatch.setattr(openai_engine.random, "random", lambda: 0.0)
    assert [openai_engine.retry_delay(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize("status, body", [
    (400, b'{"error": {"message": "bad prompt", "type": "invalid_request_error"}}'), (401, b'{"error": {"message": "no key"}}'),
    (403, b"{}"), (404, b'{"message": "no such model"}'), (409, b'{"error": {"message": ""}}'), (422, b"[1, 2]"),
    (429, b'{"error": {"message": "slow down"}}'), (500, b""), (503, b'{"error": "overloaded"}'), (418, b'{"error": {"message": "teapot"}}')])
def test_error_rows_name_the_status_and_message_like_the_official_clients_exceptions(status, body):
    httpx2 = pytest.importorskip("httpx2")
    error = _official_client()._make_status_error_from_response(
        httpx2.Response(status, content=body, request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")))
    assert openai_engine.status_error(status, body) == f"{type(error).__name__}: {error}"


def test_a_body_that_is_not_json_is_quoted_in_the_error_row():
    assert openai_engine.status_error(502, b"<html>Bad Gateway</html>" + b"x" * 500) == (
        "InternalServerError: Error code: 502 - <html>Bad Gateway</html>" + "x" * 176)


class _CaseInsensitive(dict):
    """Response headers as aiohttp gives them: looked up whatever the case."""

    def __init__(self, headers):
        super().__init__({name.lower(): value for name, value in headers.items()})

    def get(self, name, default=None):
        return super().get(name.lower(), default)


# -- retries against the loopback server ----------------------------------------------------------

def test_the_same_attempts_and_outcomes_as_the_official_client():
    """The same faults through the official client's own retry loop and through the engine: every
    prompt gets as many attempts, and ends the same way."""
    openai = pytest.importorskip("openai")
    prompts = [f"题{i}" for i in range(8)]
    faults = [Fault("429", prompt=prompts[0], retry_after=0.1), Fault("500", prompt=prompts[1], times=2),
              Fault("reset", prompt=prompts[2]), Fault("400", prompt=prompts[3], times=None),
              Fault("500", prompt=prompts[4], times=None), Fault("429", prompt=prompts[5], retry_after=121),
              Fault("429", prompt=prompts[6], retry_after_ms=150, times=2)]

    async def official(server: OpenAIServer) -> list[str]:
        async with openai.AsyncOpenAI(api_key="no-key", base_url=server.base_url, max_retries=2, timeout=5.0,
                                      http_client=openai.DefaultAioHttpClient()) as client:
            async def one(prompt: str) -> str:
                try:
                    await client.post("/chat/completions", cast_to=object, body={
                        "model": server.model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 8})
                except openai.APIError as exc:
                    return type(exc).__name__
                return "ok"
            return list(await asyncio.gather(*(one(p) for p in prompts)))

    with OpenAIServer(faults=faults) as server:
        expected = asyncio.run(official(server))
        _settled(server, expected.count("ok"))   # before the reset, or a late count lands after it
        attempts = dict(server.attempts)
        server.reset_counters()
        calls = Counter()
        completions = _engine(server, max_retries=2, concurrency=8).generate(
            [_request(p, max_tokens=8) for p in prompts], on_result=lambda index, _: calls.update([index]))
        _settled(server, sum(c.error is None for c in completions))
        assert dict(server.attempts) == attempts == {prompts[0]: 2, prompts[1]: 3, prompts[2]: 2, prompts[3]: 1,
                                                     prompts[4]: 3, prompts[5]: 1, prompts[6]: 3, prompts[7]: 1}
        assert calls == Counter(range(len(prompts)))                       # one answer per request, no more
        assert all(server.successes[p] == (outcome == "ok") for p, outcome in zip(prompts, expected))
    assert [c.error.split(":")[0] if c.error else "ok" for c in completions] == expected == [
        "ok", "ok", "ok", "BadRequestError", "InternalServerError", "RateLimitError", "ok", "ok"]


def test_a_bad_request_is_not_retried_and_its_row_has_the_status_and_message():
    with OpenAIServer(faults=[Fault("400", prompt="坏", times=None)]) as server:
        bad, good = _engine(server, max_retries=5).generate([_request("坏"), _request("好")])
        # the server counts a success just after writing it: the client may read it first
        deadline = time.monotonic() + 2.0
        while server.successes["好"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.attempts["坏"] == 1 and server.successes["好"] == 1
    assert bad.text is None and bad.error == "BadRequestError: Error code: 400 - injected bad request"
    assert good.error is None and good.text == "echo:好"


def test_max_retries_bounds_the_attempts_and_the_waits_follow_the_backoff():
    with OpenAIServer(faults=[Fault("500", prompt="总错", times=None), Fault("500", prompt="一次", times=None)]) as server:
        [failed] = _engine(server, max_retries=3).generate([_request("总错")])
        [once] = _engine(server, max_retries=0).generate([_request("一次")])
        times = server.attempt_times["总错"]
        assert len(times) == 4 and server.attempts["一次"] == 1            # 1 try + max_retries
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    for gap, backoff in zip(gaps, (0.5, 1.0, 2.0)):                          # 0.5 * 2**n, less 0-25% jitter
        assert 0.75 * backoff <= gap <= backoff + 0.3, gaps
    assert failed.error == once.error == "InternalServerError: Error code: 500 - injected server error"
    assert failed.latency_s >= sum(gaps)


def test_retry_after_ms_is_honoured_before_retry_after():
    with OpenAIServer(faults=[Fault("429", prompt="等", retry_after=5, retry_after_ms=1200)]) as server:
        [completion] = _engine(server).generate([_request("等")])
        first, second = server.attempt_times["等"]
    assert completion.error is None and 1.2 <= second - first < 2.0


def test_timeouts_and_dropped_connections_are_retried_then_become_rows():
    faults = [Fault("timeout", prompt="挂", times=None, hang_s=1.5), Fault("reset", prompt="断", times=None)]
    with OpenAIServer(faults=faults) as server:
        hung, dropped, fine = _engine(server, timeout_s=0.3, max_retries=1).generate(
            [_request("挂"), _request("断"), _request("好")])
        _settled(server, 1)
        assert server.attempts["挂"] == server.attempts["断"] == 2 and server.successes["好"] == 1
        assert not server.successes["挂"] and not server.successes["断"]
    assert hung.error.startswith("APITimeoutError: Request timed out. (") and 0.8 < hung.latency_s < 2.0
    assert dropped.error.startswith("APIConnectionError: Connection error. (") and fine.text == "echo:好"


def test_no_budget_is_left_out_of_a_chat_and_sent_as_null_to_completions():
    """max_tokens None: chat completions default to the context, so the field is left out;
    completions default to 16 tokens when it is left out, so it is sent as null."""
    request = _request("无限", max_tokens=None)
    with OpenAIServer() as server:
        [chat] = _engine(server, chat=True).generate([request])
        chat_body = dict(server.last_body["无限"])
        [completion] = _engine(server, chat=False).generate([request])
        completion_body = server.last_body["无限"]
    assert "max_completion_tokens" not in chat_body and "max_tokens" not in chat_body
    assert "max_tokens" in completion_body and completion_body["max_tokens"] is None
    assert chat.text == completion.text == "echo:无限"
    assert OpenAIEngine(model="m", chat=False).body(_request("x", max_tokens=7))["max_tokens"] == 7


def test_the_key_is_sent_but_never_in_an_error_row(monkeypatch):
    monkeypatch.setenv("WENHENG_TEST_KEY", "sk-secret-456")
    faults = [Fault("400", prompt="a"), Fault("reset", prompt="b", times=None), Fault("500", prompt="c", times=None)]
    with OpenAIServer(faults=faults) as server:
        completions = _engine(server, api_key_env="WENHENG_TEST_KEY", max_retries=0).generate(
            [_request(p) for p in "abc"])
        assert server.authorization == {"Bearer sk-secret-456"}
    unreachable = OpenAIEngine(model="m", base_url="http://127.0.0.1:9/v1", api_key_env="WENHENG_TEST_KEY",
                               max_retries=0).generate([_request("d")])
    errors = [c.error for c in completions + unreachable]
    assert all(errors) and not any("sk-secret" in e for e in errors)


def test_max_retries_must_be_a_count():
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIEngine(model="m", max_retries=-1)
