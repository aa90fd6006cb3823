"""A loaded engine's processes end with the process that loaded them, even one killed by SIGKILL
(pipeline/engines/reaper.py). Here the "engine" is a sleeping child process: the watcher does not
care what it watches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from conftest import ROOT

# Starts a child that would outlive it (a new session: no signal to its group reaches it) and has
# the watcher watch it: sent by pid ("sent"), or found by its engine-like name while it runs
# ("named", as vLLM's processes are found while the model loads); prints both pids, then exits
# ("exit") or waits to be killed.
LOADER = """
import subprocess, sys, time
from pipeline.engines import reaper
how, end = sys.argv[1:3]
reaper.start()
before = reaper.descendants()
command = ["bash", "-c", "exec -a VLLM::FakeEngine sleep 300"] if how == "named" else ["sleep", "300"]
child = subprocess.Popen(command, start_new_session=True)
if how == "sent":
    reaper.watch(reaper.descendants() - before)
else:
    time.sleep(1.5)   # the watcher looks every half second
print(child.pid, reaper._watcher.pid, flush=True)
if end == "wait":
    time.sleep(300)
"""


def _start(how: str, end: str) -> tuple[subprocess.Popen, int, int]:
    loader = subprocess.Popen([sys.executable, "-c", LOADER, how, end], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child, watcher = (int(pid) for pid in loader.stdout.readline().split())
    return loader, child, watcher


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how, end", [("sent", "SIGKILL"), ("sent", "exit"), ("named", "SIGKILL")])
def test_a_watched_process_ends_with_the_process_that_loaded_it(how, end):
    loader, child, watcher = _start(how, "wait" if end == "SIGKILL" else "exit")
    try:
        assert psutil.Process(child).is_running()
        if end == "SIGKILL":
            loader.send_signal(signal.SIGKILL)
        loader.wait(timeout=30)
        assert _gone(child), "the watched process outlived its loader"
        assert _gone(watcher), "the watcher outlived its work"
    finally:
        for pid in (child, watcher):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_process_id_given_to_another_process_is_not_killed():
    """Only a process with the recorded start time is killed: a reused pid is someone else's."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        created = psutil.Process(bystander.pid).create_time()
        script = ("from pipeline.engines import reaper; import sys; "
                  f"reaper.watch([({bystander.pid}, {created - 5.0})]); print(reaper._watcher.pid, flush=True)")
        loader = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert _gone(int(loader.stdout)), "the watcher outlived its work"
        assert bystander.poll() is None
    finally:
        bystander.kill()
