"""A loaded model's processes end with the process that loaded them, however it ends.

vLLM runs its engine core and workers as child processes. A run that ends normally stops them
(vllm_engine.shutdown_engines), but a run process that is SIGKILLed (by the OOM killer, `kill -9`,
a run worker's timeout) cannot: its engine core is re-parented to init and keeps its gigabytes
for ever. So each process that loads an engine also starts one small watcher, out of the
terminal's process group (a Ctrl-C reaches the run, not the watcher): it reads the engine's
process ids from a pipe, and when the loading process has ended, for whatever reason, it kills
those of them that are still alive. After a normal end they are gone already
and it kills nothing. psutil (a vLLM dependency) checks each process's start time, so a process
id the system has since given to another process is never killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable

# Runs in the watcher: reads a line per process, {"pid": ..., "created": ...}, and polls the process
# that started it (not the pipe's end: a child forked by that process would hold the pipe open);
# once it has ended, kills those still alive with the same start time, their own children first.
WATCHER = """
import json, sys, threading, time
import psutil
pid, created = int(sys.argv[1]), float(sys.argv[2])
def alive():
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
watched = []
def read():
    for line in sys.stdin:
        watched.append(json.loads(line))
reader = threading.Thread(target=read, daemon=True)
reader.start()
while alive():
    time.sleep(0.5)
reader.join(timeout=2)   # the lines written just before the end
for entry in list(watched):
    try:
        proc = psutil.Process(entry["pid"])
        if proc.create_time() == entry["created"]:
            for child in proc.children(recursive=True):
                child.kill()
            proc.kill()
    except psutil.Error:
        pass
"""

_watcher: subprocess.Popen | None = None   # one per process, started with its first engine


def descendants() -> set[tuple[int, float]]:
    """(pid, start time) of every process below this one."""
    import psutil

    found = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            found.add((proc.pid, proc.create_time()))
        except psutil.Error:   # ended meanwhile
            pass
    return found


def watch(processes: Iterable[tuple[int, float]]) -> None:
    """Have `processes` (pid, start time) killed when this process ends, if they are still alive."""
    global _watcher
    processes = [p for p in processes if _watcher is None or p[0] != _watcher.pid]
    if not processes:
        return
    if _watcher is None or _watcher.poll() is not None:
        import psutil

        me = [str(os.getpid()), repr(psutil.Process().create_time())]
        _watcher = subprocess.Popen([sys.executable, "-c", WATCHER, *me], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True, close_fds=True, text=True)
    for pid, created in processes:
        _watcher.stdin.write(json.dumps({"pid": pid, "created": created}) + "\n")
    _watcher.stdin.flush()
