"""WENHENG_EXECUTOR and its companions: each name gives its executor, and a wrong value is one
configuration error naming the variable."""

from __future__ import annotations

import pytest

from pipeline.config import ConfigError
from pipeline.executors import executor_from_env, gpu_node_selector, k8s_executor_config


def test_each_name_gives_its_executor():
    assert executor_from_env(env={}).name == "in_process"
    assert executor_from_env(env={"WENHENG_EXECUTOR": "in_process"}).name == "in_process"
    multi = executor_from_env(env={"WENHENG_EXECUTOR": "multiprocess", "WENHENG_MAX_CONCURRENT": "3"})
    assert multi.name == "multiprocess"
    assert multi.config_schema.resolve_config({"config": {}}).value["config"]["max_concurrent"] == 3
    assert executor_from_env(env={"WENHENG_EXECUTOR": "k8s"}).name == "k8s"


@pytest.mark.parametrize(("env", "named"), [
    ({"WENHENG_EXECUTOR": "celery"}, "WENHENG_EXECUTOR"),
    ({"WENHENG_EXECUTOR": "multiprocess", "WENHENG_MAX_CONCURRENT": "0"}, "WENHENG_MAX_CONCURRENT"),
    ({"WENHENG_EXECUTOR": "k8s", "WENHENG_K8S_GPUS": "one"}, "WENHENG_K8S_GPUS"),
    ({"WENHENG_EXECUTOR": "k8s", "WENHENG_K8S_GPU_NODE_SELECTOR": "gpu"}, "WENHENG_K8S_GPU_NODE_SELECTOR"),
])
def test_a_wrong_value_is_one_line_naming_the_variable(env, named):
    with pytest.raises(ConfigError) as error:
        executor_from_env(env=env)
    message = str(error.value)
    assert named in message and "\n" not in message


def test_node_selector_pairs_and_none():
    assert gpu_node_selector({"WENHENG_K8S_GPU_NODE_SELECTOR": "a=1, b=2"}) == {"a": "1", "b": "2"}
    assert gpu_node_selector({"WENHENG_K8S_GPU_NODE_SELECTOR": ""}) == {}
    assert k8s_executor_config([], {}) == {"per_step_k8s_config": {}}
