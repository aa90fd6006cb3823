"""The Kubernetes deployment loads: with WENHENG_EXECUTOR=k8s every job carries dagster-k8s's
k8s_job_executor with GPUs for the inference-pool steps only (checked in a subprocess, since the
executor is chosen when the definitions are imported), the Helm values and the instance file
parse and name the right module, image placeholders and run launcher, and that launcher imports
and accepts its configuration."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

pytest.importorskip("dagster_k8s", reason="the k8s extra (dagster-k8s) is not installed")

VALUES = ROOT / "deploy" / "k8s" / "values.yaml"
INSTANCE = ROOT / "deploy" / "k8s" / "dagster.yaml"

# Loads wenheng's definitions as the code server would; until pipeline/definitions.py names an
# executor itself, the one executor_from_env() returns is added the way it would add it.
PROBE = """
import json
import dagster as dg
from dagster_k8s import k8s_job_executor
from dagster_k8s.job import UserDefinedDagsterK8sConfig, DagsterK8sJobConfig, construct_dagster_k8s_job
from assets.evaluate import responses, scores
from assets.judge import judge_reliability, judgements
from pipeline import definitions
from pipeline.executors import executor_from_env

defs = definitions.defs
if defs.executor is None:
    defs = dg.Definitions.merge(defs, dg.Definitions(
        executor=executor_from_env([responses, judgements, scores, judge_reliability])))
out = {}
for name in ("prepare", "evaluate", "publish"):
    executor = defs.resolve_job_def(name).executor_def
    config = {}
    if hasattr(executor.config_schema, "resolve_config"):   # a configured executor
        resolved = executor.config_schema.resolve_config({"config": {}})   # checked against the executor's schema
        assert resolved.success, resolved.errors
        config = resolved.value["config"] or {}
    pods = {}
    for op, cfg in config.get("per_step_k8s_config", {}).items():
        job = construct_dagster_k8s_job(
            DagsterK8sJobConfig(job_image="<REGISTRY>/wenheng:<TAG>", dagster_home="/opt/dagster/dagster_home"),
            args=["dagster", "api", "execute_step"], job_name=f"dagster-step-{op}",
            user_defined_k8s_config=UserDefinedDagsterK8sConfig.from_dict(cfg), pod_name=op, component="step_worker")
        spec = job.spec.template.spec
        pods[op] = {"limits": spec.containers[0].resources.limits, "node_selector": spec.node_selector,
                    "tolerations": [t.key for t in spec.tolerations or []]}
    out[name] = {"executor": executor.name, "pods": pods, "namespace": config.get("job_namespace"),
                 "k8s_job_executor": getattr(executor.config_schema, "parent_def", None) is k8s_job_executor}
print("PROBE" + json.dumps(out))
"""


def _probe(**env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("PROBE", 1)[1])


def test_k8s_executor_gives_gpus_to_the_inference_steps_only():
    jobs = _probe(WENHENG_EXECUTOR="k8s", WENHENG_K8S_GPUS="2", WENHENG_K8S_NAMESPACE="wenheng-runs",
                  WENHENG_K8S_GPU_NODE_SELECTOR="cloud.google.com/gke-accelerator=nvidia-l4")
    assert {job["executor"] for job in jobs.values()} == {"k8s"}
    assert all(job["k8s_job_executor"] for job in jobs.values())
    pods = jobs["evaluate"]["pods"]
    # not scores: it needs no GPU
    assert set(pods) == {"responses", "judgements", "judge_reliability", "judge_validity"}
    for pod in pods.values():
        assert pod["limits"] == {"nvidia.com/gpu": "2"}
        assert pod["node_selector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
        assert pod["tolerations"] == ["nvidia.com/gpu"]
    assert jobs["evaluate"]["namespace"] == "wenheng-runs"


def test_the_default_executor_stays_in_process():
    jobs = _probe(WENHENG_EXECUTOR="")
    assert {job["executor"] for job in jobs.values()} == {"in_process"}
    assert not any(job["pods"] for job in jobs.values())


def test_helm_values_run_wenheng_with_the_k8s_run_launcher():
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    args = deployment["dagsterApiGrpcArgs"]
    module = args[args.index("--module-name") + 1]
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
    assert module == workspace["load_from"][0]["python_module"]["module_name"] == "pipeline.definitions"
    assert importlib.util.find_spec(module) is not None
    assert deployment["image"]["repository"] == "<REGISTRY>/wenheng" and deployment["image"]["tag"] == "<TAG>"
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["WENHENG_EXECUTOR"] == "k8s"
    assert deployment["includeConfigInLaunchedRuns"]["enabled"] is True   # runs and steps get env and volumes
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert values["concurrency"]["pools"] == {"defaultLimit": 1, "granularity": "run"}
    # every volume a pod mounts is declared
    assert {m["name"] for m in deployment["volumeMounts"]} <= {v["name"] for v in deployment["volumes"]}


def test_instance_file_names_a_run_launcher_that_imports_and_accepts_its_config(tmp_path):
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config
    from dagster_k8s import K8sRunLauncher

    shutil.copy(INSTANCE, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))   # the whole file against Dagster's instance schema
    launcher = config["run_launcher"]
    assert getattr(importlib.import_module(launcher["module"]), launcher["class"]) is K8sRunLauncher
    checked = process_config(K8sRunLauncher.config_type(), launcher["config"])
    assert checked.success, checked.errors
    # and it builds, given a cluster to talk to (here a kubeconfig for one that is never called)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "users": [{"name": "test", "user": {"token": "unused"}}]}), encoding="utf-8")
    built = K8sRunLauncher.from_config_value(
        None, {**checked.value, "load_incluster_config": False, "kubeconfig_file": str(kubeconfig)})
    assert built.job_namespace == "wenheng" and built.instance_config_map == "wenheng-dagster-instance"
    assert config["concurrency"]["pools"]["granularity"] == "run"


def test_local_parallel_instance_queues_runs_by_pool(tmp_path):
    import dagster as dg
    from dagster._core.instance.config import PoolGranularity
    from dagster._core.instance.ref import InstanceRef
    from dagster._core.run_coordinator import QueuedRunCoordinator

    shutil.copy(ROOT / "deploy" / "local-parallel" / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        pools = instance.get_concurrency_config().pool_config
        assert pools.pool_granularity == PoolGranularity.RUN and pools.default_pool_limit == 1
        instance.event_log_storage.set_concurrency_slots("inference", 4)   # what `dagster instance concurrency set` does
        assert instance.event_log_storage.get_concurrency_info("inference").slot_count == 4


def test_gpu_run_tag_is_a_valid_dagster_k8s_config():
    from dagster_k8s.job import get_user_defined_k8s_config

    from pipeline.executors import gpu_k8s_config

    tag = get_user_defined_k8s_config({"dagster-k8s/config": json.dumps(gpu_k8s_config({}))})
    assert tag.container_config["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert tag.pod_spec_config["node_selector"] == {"nvidia.com/gpu.present": "true"}
