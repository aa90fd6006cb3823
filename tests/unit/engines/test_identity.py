"""One cache-identity rule (pipeline/engines/identity.py): an engine's identity is its constructor's
parameters minus the ones it declares TRANSPORT. The identities are those cached answers were
keyed under before the rule (no cached answer is lost), and a parameter added later is part of
the identity unless declared transport."""

from __future__ import annotations

import pytest

from pipeline.engines import ENGINE_CLASSES, engine_class
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.engines.vllm_engine import VLLMEngine

# what the engines' hand-written identities gave, which the keys of cached answers hold
BEFORE = [
    (OpenAIEngine("m"), {"engine": "openai", "model": "m", "chat": True, "seed": None, "extra_body": {}}),
    (OpenAIEngine("m", base_url="http://x/v1", chat=False, seed=3, extra_body={"top_k": 5}, revision="r1",
                  concurrency=3, timeout_s=5, max_retries=1, api_key_env=None),
     {"engine": "openai", "model": "m", "chat": False, "seed": 3, "extra_body": {"top_k": 5}, "revision": "r1"}),
    (VLLMEngine("/p"), {"engine": "vllm", "model": "/p", "chat_template": True, "dtype": "bfloat16",
                        "max_model_len": 2048, "seed": 0}),
    (VLLMEngine("/p", chat_template=False, dtype="float32", max_model_len=512, seed=2, tensor_parallel_size=1,
                pipeline_parallel_size=2, enforce_eager=True, data_parallel_size=1),
     {"engine": "vllm", "model": "/p", "chat_template": False, "dtype": "float32", "max_model_len": 512, "seed": 2,
      "pipeline_parallel_size": 2, "enforce_eager": True}),
    (BaselineEngine("oracle"), {"engine": "baseline", "strategy": "oracle", "seed": 0, "reads_gold": True}),
    (BaselineEngine("random", seed=4), {"engine": "baseline", "strategy": "random", "seed": 4, "reads_gold": False,
                                        "open_answers": 2}),
]


@pytest.mark.parametrize("engine, expected", BEFORE, ids=lambda x: type(x).__name__ if not isinstance(x, dict) else "")
def test_the_rule_gives_the_identities_cached_answers_were_keyed_under(engine, expected):
    assert engine.identity() == expected


def test_a_new_parameter_is_in_the_identity_unless_it_is_declared_transport():
    class WithTopK(OpenAIEngine):
        def __init__(self, model: str, top_k: int = 40, pool_size: int = 4, **kwargs):
            super().__init__(model, **kwargs)
            self.top_k, self.pool_size = top_k, pool_size

    assert WithTopK("m").identity() == BEFORE[0][1] | {"top_k": 40, "pool_size": 4}
    assert WithTopK("m", top_k=1).identity() != WithTopK("m").identity()   # changes the answers: a new key

    class Declared(WithTopK):
        TRANSPORT = (*OpenAIEngine.TRANSPORT, "pool_size")

    assert Declared("m", pool_size=64).identity() == BEFORE[0][1] | {"top_k": 40}
    assert Declared("m", base_url="http://elsewhere/v1", concurrency=64).identity() == Declared("m").identity()


def test_every_engine_declares_its_kind_and_transport():
    for name in ENGINE_CLASSES:
        cls = engine_class(name)
        assert cls.KIND == name and isinstance(cls.TRANSPORT, tuple)
