"""Log-likelihood through an OpenAI-compatible completions endpoint, over real HTTP (the loopback
server scores one character a token, `char_logprob`): the numbers, several questions in turn,
the response cache (a re-run sends nothing) and an endpoint that returns no log-probabilities."""

from __future__ import annotations

import pytest

from pipeline.engines import Request
from pipeline.engines.cache import ResponseCache, run_with_cache
from pipeline.engines.echoed import continuation_logprobs
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.testing import openai_server
from pipeline.testing.openai_server import OpenAIServer, char_logprob

PROMPT = "题目：秦统一六国在哪一年？\nA. 公元前221年\nB. 公元前206年\n答案："


def _expected(context: str, continuation: str) -> float:
    return sum(char_logprob(context + continuation[:k], continuation[k]) for k in range(len(continuation)))


def _request(key: str, continuations: tuple[str, ...], picks: int = 1) -> Request:
    return Request(cache_key=key, messages=({"role": "user", "content": PROMPT},), max_tokens=None,
                   continuations=continuations, choices=("A", "B"), picks=picks)


def test_each_continuation_is_the_sum_of_its_tokens_after_the_prompt(tmp_path):
    with OpenAIServer() as server:
        engine = OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, chat=False,
                              max_retries=0)
        requests = [_request("letters", ("A", "B")), _request("texts", ("公元前221年", "公元前206年")),
                    _request("two", ("A", "B"), picks=2)]
        with ResponseCache(tmp_path / "cache.sqlite") as cache:
            found, stats = run_with_cache(engine, requests, cache)
            assert stats.sent == 3 and stats.errors == 0
            calls = sum(server.successes.values())
            again, stats = run_with_cache(engine, requests, cache)   # a re-run: every number from the cache
            assert stats.sent == 0 and stats.cache_hits == 3 and sum(server.successes.values()) == calls
    assert calls == 4   # one call per question: the two-question item asks twice
    letters, texts, two = (found[k].logprobs for k in ("letters", "texts", "two"))
    assert letters == pytest.approx([_expected(PROMPT, c) for c in "AB"], abs=1e-12)
    assert texts == pytest.approx([_expected(PROMPT, c) for c in ("公元前221年", "公元前206年")], abs=1e-12)
    first = "A" if letters[0] >= letters[1] else "B"   # question 2 follows the letter ranked first for question 1
    assert two == pytest.approx([*letters, *(_expected(PROMPT + first, c) for c in "AB")], abs=1e-12)
    assert {k: v.logprobs for k, v in again.items()} == {k: v.logprobs for k, v in found.items()}
    assert all(c.text is None and c.finish_reason == "scored" for c in found.values())


def test_a_token_that_spans_the_boundary_counts_with_the_continuation():
    # the server's tokens: "答案", "：A" (a merge across the boundary), "B"
    answer = {"choices": [{"index": 0, "text": "答案：AB", "logprobs": {
        "tokens": ["答案", "：A", "B"], "text_offset": [0, 2, 4], "token_logprobs": [None, -1.0, -2.0]}}]}
    assert continuation_logprobs(answer, 3, 1) == [-3.0]
    assert continuation_logprobs(answer, 4, 1) == [-2.0]


def test_an_endpoint_without_prompt_log_probabilities_gives_an_error_row(monkeypatch):
    monkeypatch.setattr(openai_server, "echoed", lambda prompt: None)   # logprobs: null, as a server without echo
    with OpenAIServer() as server:
        engine = OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, chat=False,
                              max_retries=0)
        [got] = engine.generate([_request("k", ("A", "B"))])
    assert got.logprobs is None and got.error.startswith("APIResponseValidationError: no prompt log-probabilities")
    assert "echo with logprobs" in got.error
