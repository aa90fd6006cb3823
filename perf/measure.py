"""Peak memory of a process tree, for the perf scripts: the largest sum of VmRSS over a process and
all its descendants, sampled every 0.1 s from /proc (Linux).

    with PeakRSS() as rss:            # this process and its children
        ...
    with PeakRSS(root=proc.pid) as rss:   # a process started with Popen, and its children
        proc.wait()
    print(rss.mb, rss.peak_procs)

A sum of VmRSS counts the pages processes share once per process (the libraries of two Python
processes, a child between its fork and its exec): it is what `ps` and the peers compare, not
what the machine would run out of."""

from __future__ import annotations

import os
import threading


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (none that exited)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def rss_kb(pid: int) -> int:
    """A process's VmRSS in kB; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class PeakRSS:
    """The largest sum of VmRSS over `root` (default: this process) and its descendants, sampled
    every `every` seconds while the block runs."""

    def __init__(self, root: int | None = None, every: float = 0.1):
        self.root = os.getpid() if root is None else root
        self.every, self.peak_kb, self.peak_procs = every, 0, 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.every):
                return

    def sample(self) -> None:
        pids = process_tree(self.root)
        total = sum(map(rss_kb, pids))
        if total > self.peak_kb:
            self.peak_kb, self.peak_procs = total, len(pids)

    def __enter__(self) -> PeakRSS:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mb(self) -> float:
        return self.peak_kb / 1024
