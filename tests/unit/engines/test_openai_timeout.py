"""`timeout_s` of the OpenAI-compatible engine is a deadline on each attempt as a whole, from
connecting to the last byte of the body: a server that stalls and one that keeps a response alive
with a byte now and then both end as timeouts, retried like any timeout; a fast server never
notices it, however long the whole batch takes."""

from __future__ import annotations

import time

from pipeline.engines import Request
from pipeline.engines.cache import cache_key
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.testing.openai_server import Fault, OpenAIServer

BACKOFF = (0.375, 0.5)   # the first retry's wait: 0.5 s less a random 0-25% (openai_engine.retry_delay)


def _request(prompt: str) -> Request:
    messages = ({"role": "user", "content": prompt},)
    return Request(cache_key=cache_key("m", {"engine": "test"}, messages, {"max_tokens": 32}),
                   messages=messages, max_tokens=32)


def _engine(server: OpenAIServer, **overrides) -> OpenAIEngine:
    params = {"model": server.model, "base_url": server.base_url, "api_key_env": None}
    return OpenAIEngine(**(params | overrides))


def _timed(engine: OpenAIEngine, prompts: list[str]):
    started = time.monotonic()
    completions = engine.generate([_request(p) for p in prompts])
    return completions, time.monotonic() - started


def test_a_server_that_stalls_entirely_times_out_after_the_deadline_of_each_attempt():
    with OpenAIServer(faults=[Fault("timeout", prompt="停", times=None, hang_s=30)]) as server:
        [stalled], elapsed = _timed(_engine(server, timeout_s=0.4, max_retries=1), ["停"])
        first, second = server.attempt_times["停"]
    assert stalled.error.startswith("APITimeoutError: Request timed out.")
    assert 0.4 + BACKOFF[0] <= second - first < 0.4 + BACKOFF[1] + 0.5
    assert 2 * 0.4 + BACKOFF[0] <= elapsed < 2 * 0.4 + BACKOFF[1] + 1.0


def test_a_server_that_trickles_bytes_faster_than_any_read_timeout_still_times_out():
    """A byte every 50 ms keeps every read well inside 0.5 s: only a deadline on the whole
    response ends the call, here after 2 attempts of 0.5 s, not after the body's ~15 s."""
    faults = [Fault("trickle", prompt="慢", times=None, trickle_s=0.05, hang_s=30)]
    with OpenAIServer(faults=faults) as server:
        [trickled, fine], elapsed = _timed(_engine(server, timeout_s=0.5, max_retries=1, concurrency=2),
                                           ["慢", "快"])
        first, second = server.attempt_times["慢"]
        assert server.attempts["慢"] == 2 and server.successes["快"] == 1
    assert trickled.error.startswith("APITimeoutError: Request timed out.") and trickled.text is None
    assert fine.error is None and fine.text == "echo:快"
    assert 0.5 + BACKOFF[0] <= second - first < 0.5 + BACKOFF[1] + 0.5
    assert 2 * 0.5 + BACKOFF[0] <= elapsed < 2 * 0.5 + BACKOFF[1] + 1.0


def test_no_retries_means_one_deadline():
    faults = [Fault("trickle", prompt="慢", times=None, trickle_s=0.05, hang_s=30)]
    with OpenAIServer(faults=faults) as server:
        [trickled], elapsed = _timed(_engine(server, timeout_s=0.3, max_retries=0), ["慢"])
        assert server.attempts["慢"] == 1
    assert trickled.error.startswith("APITimeoutError") and 0.3 <= elapsed < 1.0
    assert 0.3 <= trickled.latency_s < 1.0


def test_a_fast_server_is_unaffected_and_the_deadline_is_per_attempt_not_per_batch():
    """12 calls of 0.2 s, 2 at a time: 1.2 s in all, past the 1 s deadline of each call."""
    prompts = [f"问{i}" for i in range(12)]
    with OpenAIServer(latency_s=0.2) as server:
        completions, elapsed = _timed(_engine(server, timeout_s=1.0, max_retries=0, concurrency=2), prompts)
        assert all(server.attempts[p] == 1 for p in prompts)
    assert [c.text for c in completions] == [f"echo:{p}" for p in prompts]
    assert not any(c.error for c in completions) and elapsed >= 1.2
