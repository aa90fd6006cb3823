"""The executor that runs the steps of a launched run, chosen by WENHENG_EXECUTOR when the
definitions load:

    in_process    (default) every step of a run in the run's own process, so an evaluate
                  partition loads its model once for responses, judgements and the reliability report
    multiprocess  one process per step (WENHENG_MAX_CONCURRENT at once, default: one per CPU)
    k8s           one Kubernetes Job per step (dagster-k8s); the steps of the `inference` pool
                  ask for WENHENG_K8S_GPUS GPUs (default 1) on a GPU node

Parallelism across partitions is the run queue's job, not the executor's: each benchmark x model
partition is a run of its own, and the `inference` pool's limit (one slot per GPU) says how many
run at once (deploy/local-parallel/dagster.yaml, deploy/k8s/values.yaml). `wenheng run` executes
in its own process whatever is chosen here."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg

from pipeline.config import ConfigError

EXECUTORS = ("in_process", "multiprocess", "k8s")
INFERENCE_POOL = "inference"
# The label NVIDIA's GPU feature discovery puts on GPU nodes, and the taint GPU node pools usually carry.
DEFAULT_GPU_NODE_SELECTOR = "nvidia.com/gpu.present=true"


def executor_name(env: Mapping[str, str] = os.environ) -> str:
    name = env.get("WENHENG_EXECUTOR", "in_process").strip() or "in_process"
    if name not in EXECUTORS:
        raise ConfigError(f"WENHENG_EXECUTOR must be one of {', '.join(EXECUTORS)}, got {name!r}")
    return name


def _positive_int(env: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{key} must be a positive whole number, got {raw!r}")
    return int(raw)


def gpu_node_selector(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """WENHENG_K8S_GPU_NODE_SELECTOR, `key=value[,key=value]`; empty string for none."""
    raw = env.get("WENHENG_K8S_GPU_NODE_SELECTOR", DEFAULT_GPU_NODE_SELECTOR)
    selector = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"WENHENG_K8S_GPU_NODE_SELECTOR must be key=value[,key=value], got {raw!r}")
        selector[key.strip()] = value.strip()
    return selector


def gpu_k8s_config(env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """dagster-k8s user-defined config (the `dagster-k8s/config` tag's shape) for a pod that runs
    inference: GPU limits, the GPU node selector and a toleration for the GPU taint."""
    gpus = _positive_int(env, "WENHENG_K8S_GPUS", 1)
    return {
        "container_config": {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}},   # a k8s quantity
        "pod_spec_config": {
            "node_selector": gpu_node_selector(env),
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def inference_ops(assets: Iterable[dg.AssetsDefinition]) -> list[str]:
    """Names of the ops that run in the `inference` pool (responses, judgements, judge_reliability)."""
    return sorted({a.op.name for a in assets if a.op.pool == INFERENCE_POOL})


def k8s_executor_config(assets: Iterable[dg.AssetsDefinition], env: Mapping[str, str] = os.environ) -> dict:
    """k8s_job_executor config: GPUs for the inference-pool steps only (scores and the rest run on CPU nodes)."""
    gpu = gpu_k8s_config(env)   # read (and checked) even when no asset is given
    config: dict[str, Any] = {"per_step_k8s_config": {op: gpu for op in inference_ops(assets)}}
    if env.get("WENHENG_K8S_NAMESPACE"):
        config["job_namespace"] = env["WENHENG_K8S_NAMESPACE"]
    if (most := _positive_int(env, "WENHENG_MAX_CONCURRENT", None)) is not None:
        config["max_concurrent"] = most
    return config


def executor_from_env(assets: Iterable[dg.AssetsDefinition] = (),
                      env: Mapping[str, str] = os.environ) -> dg.ExecutorDefinition:
    """The executor named by WENHENG_EXECUTOR; `assets` are the ones whose inference-pool steps get
    GPUs under k8s."""
    name = executor_name(env)
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        most = _positive_int(env, "WENHENG_MAX_CONCURRENT", None)
        return dg.multiprocess_executor.configured({"max_concurrent": most} if most else {},
                                                   name="multiprocess")
    try:
        from dagster_k8s import k8s_job_executor
    except ImportError as exc:
        raise ConfigError(f"WENHENG_EXECUTOR=k8s needs dagster-k8s (pip install 'wenheng[k8s]'): {exc}") from None
    return k8s_job_executor.configured(k8s_executor_config(assets, env), name="k8s")
