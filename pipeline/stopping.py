"""A process-wide stop request: `wenheng run` sets it on SIGINT or SIGTERM, engines and the
response cache check it before sending each request, and the runner stops launching partitions.

Dagster replaces the SIGINT/SIGTERM handlers while it executes a run (and raises inside an asset
on an interrupt), so two things keep the request from being lost: `watch_signals` hears every
signal through the interpreter's wakeup fd whatever handler is installed, and `stop_on_signals`
(around an engine's generation) turns a signal into a stop request instead of an exception, so
the answers in flight can still arrive and be stored within the grace period (`grace_s`)."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.settings import settings

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_event = threading.Event()
_state: dict[str, float | int | None] = {"signum": None, "at": None, "forced": None, "handled": 0}


class Stopped(RuntimeError):
    """Raised where work stops because a stop was requested."""


def request_stop(signum: int | None = None) -> None:
    if _event.is_set():
        return
    _state.update(signum=signum if signum is not None else signal.SIGINT, at=time.monotonic())
    _event.set()


def stop_requested() -> bool:
    return _event.is_set()


def wait(timeout_s: float) -> bool:
    return _event.wait(timeout_s)


def stop_signal() -> int | None:
    return _state["signum"] if _event.is_set() else None  # type: ignore[return-value]


def reset() -> None:
    _event.clear()
    _state.update(signum=None, at=None, forced=None, handled=0)


def grace_s() -> float:
    """How long answers in flight at a stop are waited for (WENHENG_STOP_GRACE_S, default 10 s)."""
    return settings().stop_grace_s


def grace_over() -> bool:
    """True once the calls in flight have had their grace period (or a second signal came)."""
    if not _event.is_set():
        return False
    return _state["forced"] is not None or time.monotonic() >= _state["at"] + grace_s()  # type: ignore[operator]


def exit_code() -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(stop_signal() or signal.SIGINT)


def _handler(signum: int, _frame) -> None:
    # Counted here only (the wakeup-fd listener hears the same signal again): a second one means
    # stop waiting for the calls in flight.
    _state["handled"] += 1  # type: ignore[operator]
    if _state["handled"] >= 2 and _state["forced"] is None:  # type: ignore[operator]
        _state["forced"] = time.monotonic()
    request_stop(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within: SIGINT and SIGTERM request a stop rather than raise. Only in a process that asked
    for it (`watch_signals`, as `wenheng run` does) and in the main thread (signal handlers can
    only be set there); elsewhere (a notebook, a test) a no-op, and Ctrl-C interrupts as usual."""
    if not _keep or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def watch_signals() -> None:
    """Hear SIGINT and SIGTERM for the rest of the process, whichever handler is installed when
    they come (Dagster's included): the interpreter writes each caught signal's number to the
    wakeup fd, and a daemon thread turns it into a stop request. Also installs `request_stop` as
    the handler. Main thread only."""
    for s in SIGNALS:
        signal.signal(s, _handler)
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

    def listen() -> None:
        while data := reader.recv(64):
            for signum in data:
                if signum in SIGNALS:
                    request_stop(signum)

    threading.Thread(target=listen, name="wenheng-signals", daemon=True).start()
    _keep.extend([reader, writer])


_keep: list[socket.socket] = []   # the wakeup sockets live as long as the process
