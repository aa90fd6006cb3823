"""One writer per data directory: `wenheng run` holds an exclusive lock on `.wenheng.lock` in each
directory it writes (the lake, the warehouse's folder, the response cache) for the whole run. A
second run on any of them refuses at once, naming the holder's pid and start time; a killed
holder's lock is released by the kernel (flock), so a stale lock never blocks."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

LOCK_NAME = ".wenheng.lock"


class LockHeld(RuntimeError):
    """Another process holds the lock."""


def data_dirs() -> list[Path]:
    """The directories a run writes: the lake, the warehouse's folder and the response cache."""
    from pipeline import paths

    return sorted({paths.lake_dir(), paths.warehouse_file().parent, paths.cache_dir()})


@contextmanager
def _lock_one(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "pid unknown"
            raise LockHeld(f"{directory} is in use by another wenheng run ({holder}); "
                           "wait for it to finish or stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}, "
                       f"{' '.join(sys.argv[:3])}\n").encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def hold(directories: Iterable[Path] | None = None) -> Iterator[None]:
    """Hold the lock of every directory (in sorted order) or raise LockHeld, holding none."""
    with ExitStack() as stack:
        for directory in sorted(set(directories if directories is not None else data_dirs())):
            stack.enter_context(_lock_one(directory))
        yield


def holder(directories: Iterable[Path] | None = None) -> str | None:
    """Who holds a directory's lock now (its 'pid ..., started ...' line), else None. Read, not
    locked: a probe that took the lock, even for an instant, could turn a `wenheng run` starting
    then away. A killed holder's line stays in the file, so its pid must still be alive."""
    for directory in sorted(set(directories if directories is not None else data_dirs())):
        try:
            line = (directory / LOCK_NAME).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        pid = line.split(",")[0].removeprefix("pid ").strip()
        if pid.isdigit() and int(pid) != os.getpid() and alive(int(pid)):
            return line
    return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
