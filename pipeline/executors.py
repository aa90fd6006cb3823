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
import signal
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg

from pipeline.config import ConfigError
from pipeline.settings import Settings, settings

INFERENCE_POOL = "inference"


def executor_name(env: Mapping[str, str] = os.environ) -> str:
    return settings(env).executor


def gpu_node_selector(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """WENHENG_K8S_GPU_NODE_SELECTOR, `key=value[,key=value]`; empty string for none."""
    return settings(env).k8s_gpu_node_selector


def gpu_k8s_config(env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """dagster-k8s user-defined config (the `dagster-k8s/config` tag's shape) for a pod that runs
    inference: GPU limits, the GPU node selector and a toleration for the GPU taint."""
    gpus = settings(env).k8s_gpus
    return {
        "container_config": {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}},   # a k8s quantity
        "pod_spec_config": {
            "node_selector": gpu_node_selector(env),
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def inference_ops(assets: Iterable[dg.AssetsDefinition]) -> list[str]:
    """Names of the ops that run in the `inference` pool (responses, judgements, judge_reliability,
    judge_validity); an asset no run builds (configuration observed as data) has no op."""
    return sorted({a.op.name for a in assets if a.is_executable and a.op.pool == INFERENCE_POOL})


def k8s_executor_config(assets: Iterable[dg.AssetsDefinition], env: Mapping[str, str] = os.environ) -> dict:
    """k8s_job_executor config: GPUs for the inference-pool steps only (scores and the rest run on CPU nodes)."""
    gpu = gpu_k8s_config(env)   # read (and checked) even when no asset is given
    config: dict[str, Any] = {"per_step_k8s_config": {op: gpu for op in inference_ops(assets)}}
    if namespace := settings(env).k8s_namespace:
        config["job_namespace"] = namespace
    if (most := settings(env).max_concurrent) is not None:
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
        most = settings(env).max_concurrent
        return dg.multiprocess_executor.configured({"max_concurrent": most} if most else {},
                                                   name="multiprocess")
    try:
        from dagster_k8s import k8s_job_executor
    except ImportError as exc:
        raise ConfigError(f"{Settings.executor.name}=k8s needs dagster-k8s (pip install 'wenheng[k8s]'): "
                          f"{exc}") from None
    return k8s_job_executor.configured(k8s_executor_config(assets, env), name="k8s")


# -- Ctrl-C and the steps' helper processes --------------------------------------------------------

def shield_step_helpers() -> None:
    """Ctrl-C reaches every process of the terminal's process group. For each step, Dagster starts
    two helper processes per captured stream (`tail -F` on the compute log, and a Python watcher
    that kills it if this process dies); interrupted, each watcher prints a KeyboardInterrupt
    traceback. They are started with SIGINT blocked (a mask survives exec), so they never see it:
    Dagster stops them at the step's end, or the watcher when this process is gone. A SIGINT that
    comes while one is being started is delivered to this process right after (blocked signals
    wait, they are not lost)."""
    try:
        from dagster._core.execution import compute_logs
    except ImportError:   # Dagster moved it: the helpers print their tracebacks again, nothing worse
        return
    if not isinstance(compute_logs.subprocess, _SigintBlocked):
        compute_logs.subprocess = _SigintBlocked()


class _SigintBlocked:
    """The subprocess module, but a process it starts has SIGINT blocked."""

    def __getattr__(self, name: str):
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args, **kwargs) -> subprocess.Popen:  # noqa: N802 (the name it stands in for)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return subprocess.Popen(*args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
