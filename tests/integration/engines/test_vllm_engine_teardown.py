"""No vLLM engine outlives the Dagster run that loaded it: the models resource stops it when the
run (in-process executor) or the step (multiprocess executor) ends.

Two runs of an asset that asks the real engine (the bundled Gemma3-270M) for one token: one by
`execute_in_process` in this process, one in a spawned child process, the way Dagster's code
server starts a run the daemon or the UI launched, with the multiprocess executor. Such a child
never runs atexit hooks, and at its exit it waits on every child process of its own: an engine
left loaded kept it, and its engine processes, alive forever.

The engine is pinned to vLLM's multiprocessing executor (`distributed_executor_backend: mp`): on
a small CPU wenheng otherwise runs it inside the run's process, with no engine process to outlive
anything. Each run loads it once (about 30 s on two cores)."""

import contextlib
import json
import multiprocessing
import os
from pathlib import Path

import dagster as dg
import psutil
import pytest
from conftest import write_yaml
from test_vllm_engine import GEMMA_TURNS, TINY_YAML

from pipeline.engines import Request
from resources.engines import ModelsResource

pytestmark = pytest.mark.slow

MODELS_YAML = TINY_YAML.replace("    chat_template: false\n", f"    chat_template: {json.dumps(GEMMA_TURNS)}\n"
                                "    distributed_executor_backend: mp\n")
RUN_WORKER_TIMEOUT_S = 300   # a model load: about a minute on two cores, minutes more when they are shared


class PidsFile(dg.Config):
    path: str


@dg.asset
def one_token(config: PidsFile, models: ModelsResource) -> None:
    """Asks the model for one token, then writes down the engine processes this process has."""
    [done] = models.engine("gemma3-270m").generate(
        [Request(cache_key="k", messages=({"role": "user", "content": "1+1="},), max_tokens=1)])
    assert done.error is None, done.error
    Path(config.path).write_text(json.dumps(_engine_pids(os.getpid())), encoding="utf-8")


def _job() -> dg.JobDefinition:
    job = dg.define_asset_job("one_token_job", [one_token], executor_def=dg.multiprocess_executor)
    defs = dg.Definitions(assets=[one_token], jobs=[job],
                          resources={"models": ModelsResource(models_file=dg.EnvVar("WENHENG_MODELS"))})
    return defs.resolve_job_def(job.name)


def _engine_pids(pid: int) -> list[int]:
    """vLLM's engine-core and worker processes under `pid` (they name themselves VLLM::...)."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if " ".join(child.cmdline()).startswith("VLLM::"):
                found.append(child.pid)
        except psutil.Error:   # ended meanwhile
            pass
    return found


def _alive(pids: list[int]) -> list[int]:
    """Those still running (a zombie has ended: only its parent has not reaped it yet)."""
    left = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left


def _run_worker(run_config: dict) -> None:
    """What the code server's run process does with a launched run: execute it from its origin."""
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(dg.reconstructable(_job), instance, run_config=run_config)
    assert result.success


def _config(path: Path) -> dict:
    return {"ops": {"one_token": {"config": {"path": str(path)}}}}


def test_no_engine_process_outlives_its_run(workdir, monkeypatch):
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", MODELS_YAML)))
    in_process, launched = workdir / "in_process.json", workdir / "launched.json"
    engines: list[int] = []
    worker = multiprocessing.get_context("spawn").Process(target=_run_worker, args=(_config(launched),))
    try:
        with dg.DagsterInstance.get() as instance:
            assert _job().execute_in_process(run_config=_config(in_process), instance=instance).success
        engines += json.loads(in_process.read_text(encoding="utf-8"))
        assert engines and _alive(engines) == []

        worker.start()
        worker.join(RUN_WORKER_TIMEOUT_S)
        engines += json.loads(launched.read_text(encoding="utf-8")) if launched.exists() else []
        assert not worker.is_alive(), "the run's process did not exit"
        assert worker.exitcode == 0 and launched.read_text(encoding="utf-8") != "[]"
        assert _alive(engines) == []
    finally:   # a failure leaves nothing running: each engine holds gigabytes
        if worker.is_alive():
            engines += [p.pid for p in psutil.Process(worker.pid).children(recursive=True)] + [worker.pid]
        for pid in _alive(engines):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
