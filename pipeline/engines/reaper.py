"""A loaded model's processes end with the process that loaded them, however it ends.

vLLM runs its engine core and workers as child processes. A run that ends normally stops them
(vllm_engine.shutdown_engines), but a run process that is SIGKILLed (by the OOM killer, `kill -9`,
a run worker's timeout) cannot: its engine core is re-parented to init and keeps its gigabytes
for ever. So a process that loads an engine first starts one small watcher, out of the terminal's
process group (a Ctrl-C reaches the run, not the watcher). Every half second the watcher notes
the loading process's descendants that name themselves as an engine's (vLLM's call themselves
`VLLM::EngineCore`, `VLLM::Worker`), as well as the processes it is sent through a pipe; once
the loading process has ended, for whatever reason, it kills those still alive. After a normal
end they are gone already and it kills nothing. psutil (a vLLM dependency) checks each process's
start time, so a process id the system has since given to another process is never killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable

ENGINE_NAMES = ("VLLM::",)   # how an engine's processes name themselves (their command line)

# Runs in the watcher, with argv: the loading process's pid and start time, then the name
# prefixes. Polls that process (not the pipe's end: a child it forked would hold the pipe open).
WATCHER = """
import json, sys, threading, time
import psutil
pid, created, names = int(sys.argv[1]), float(sys.argv[2]), tuple(sys.argv[3:])
watched = {}
def read():
    for line in sys.stdin:
        entry = json.loads(line)
        watched[entry["pid"]] = entry["created"]
def note_engines(parent):
    for proc in parent.children(recursive=True):
        try:
            if names and " ".join(proc.cmdline()).startswith(names):
                watched[proc.pid] = proc.create_time()
        except psutil.Error:
            pass
reader = threading.Thread(target=read, daemon=True)
reader.start()
while True:
    try:
        parent = psutil.Process(pid)
        if parent.create_time() != created or parent.status() == psutil.STATUS_ZOMBIE:
            break
        note_engines(parent)
    except psutil.Error:
        break
    time.sleep(0.5)
reader.join(timeout=2)   # the lines written just before the end
for child_pid, child_created in list(watched.items()):
    try:
        proc = psutil.Process(child_pid)
        if proc.create_time() == child_created:
            for child in proc.children(recursive=True):
                child.kill()
            proc.kill()
    except psutil.Error:
        pass
"""

_watcher: subprocess.Popen | None = None   # one per process, started before its first engine


def start() -> None:
    """Start this process's watcher, unless it runs: called before an engine's processes start,
    so that a process killed while the model loads leaves none behind either."""
    global _watcher
    if _watcher is not None and _watcher.poll() is None:
        return
    import psutil

    me = [str(os.getpid()), repr(psutil.Process().create_time())]
    _watcher = subprocess.Popen([sys.executable, "-c", WATCHER, *me, *ENGINE_NAMES], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True, text=True)


def descendants() -> set[tuple[int, float]]:
    """(pid, start time) of every process below this one, but the watcher."""
    import psutil

    found = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if _watcher is None or proc.pid != _watcher.pid:
                found.add((proc.pid, proc.create_time()))
        except psutil.Error:   # ended meanwhile
            pass
    return found


def watch(processes: Iterable[tuple[int, float]]) -> None:
    """Have `processes` (pid, start time) killed when this process ends, if they are still alive:
    an engine's processes that may not name themselves."""
    processes = list(processes)
    if not processes:
        return
    start()
    for pid, created in processes:
        _watcher.stdin.write(json.dumps({"pid": pid, "created": created}) + "\n")
    _watcher.stdin.flush()
