"""A bad endpoint day: 30% of requests fail (500, 429, dropped connections) and every prompt is
still answered exactly once, stored in the cache, and never billed twice."""

from __future__ import annotations

import random

from pipeline.engines import Request
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.testing.openai_server import Fault, OpenAIServer

N = 120


def test_thirty_percent_failures_lose_nothing_and_bill_nothing_twice(tmp_path):
    rng = random.Random(30)
    numbers = list(range(1, 2 * N))
    rng.shuffle(numbers)
    bad = numbers[: int(0.3 * len(numbers))]                      # 30% of the request numbers fail
    thirds = [frozenset(bad[k::3]) for k in range(3)]
    faults = [Fault("500", requests=thirds[0], times=None), Fault("429", requests=thirds[1], times=None,
                                                                  retry_after=0.05),
              Fault("reset", requests=thirds[2], times=None)]
    prompts = [f"第{i}题" for i in range(N)]
    with OpenAIServer(faults=faults, latency_s=0.01) as server:
        engine = OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, concurrency=16,
                              max_retries=8, timeout_s=10)
        requests = [Request(cache_key=cache_key("m", engine.identity(), [{"role": "user", "content": p}], {}),
                            messages=({"role": "user", "content": p},), max_tokens=64) for p in prompts]
        with ResponseCache(tmp_path / "cache.sqlite") as cache:
            found, stats = run_with_cache(engine, requests, cache)
            stored = len(cache)
        failed_attempts = sum(server.attempts.values()) - N
        assert failed_attempts >= 0.2 * N                             # the storm really happened
        assert {p: server.successes[p] for p in prompts if server.successes[p] != 1} == {}  # each answered once
    assert stats.errors == 0 and stored == N
    assert all(found[r.cache_key].text == f"echo:{p}" for r, p in zip(requests, prompts))
