"""What enters the offline vLLM engine's cache identity (no model is loaded here)."""

from __future__ import annotations

import pytest
from conftest import write_yaml

from pipeline.config import ConfigError, load_models
from pipeline.engines.vllm_engine import VLLMEngine


def test_parallelism_that_can_change_numerics_is_in_the_identity_and_data_parallelism_is_not():
    base = VLLMEngine("m").identity()
    assert VLLMEngine("m", tensor_parallel_size=1, pipeline_parallel_size=1).identity() == base   # 1 = unset
    assert VLLMEngine("m", tensor_parallel_size=2).identity() != base
    assert VLLMEngine("m", pipeline_parallel_size=2).identity() != base
    assert VLLMEngine("m", tensor_parallel_size=2).identity() != VLLMEngine("m", pipeline_parallel_size=2).identity()
    assert VLLMEngine("m", revision="abc123").identity() == base | {"revision": "abc123"}
    replicas = VLLMEngine("m", data_parallel_size=2, distributed_executor_backend="external_launcher")
    assert replicas.identity() == base | {"distributed_executor_backend": "external_launcher"}
    assert "data_parallel_size" in replicas.llm_kwargs   # still passed to vllm.LLM



def test_compact_json_is_the_default_for_the_engine_and_keeps_the_keys_cached_before_it():
    base = VLLMEngine("m")
    assert base.llm_kwargs["structured_outputs_config"] == {"backend": "xgrammar", "disable_any_whitespace": True}   # to vllm.LLM
    assert "structured_outputs_config" not in base.identity()
    own = VLLMEngine("m", structured_outputs_config={"backend": "guidance"})
    assert own.llm_kwargs["structured_outputs_config"] == {"backend": "guidance"}
    assert own.identity() == base.identity() | {"structured_outputs_config": {"backend": "guidance"}}


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_parallel_sizes_are_positive_integers(bad):
    with pytest.raises(ValueError, match="tensor_parallel_size must be a positive integer"):
        VLLMEngine("m", tensor_parallel_size=bad)


def test_offline_data_parallelism_is_a_config_error_naming_the_way_out(tmp_path):
    path = write_yaml(tmp_path / "models.yaml", "models:\n  big:\n    engine: vllm\n    model: org/x\n"
                                                "    data_parallel_size: 2\n")
    with pytest.raises(ConfigError) as raised:
        load_models(path)
    [line] = str(raised.value).splitlines()
    assert "models.big" in line and "vllm serve --data-parallel-size" in line
