"""The terminal during a run: quiet by default. The warnings and log lines of the libraries
wenheng runs (vLLM, torch, Ray, Dagster, ...) go to the run's log file, errors reach the terminal
too, and Ctrl-C prints no traceback from any thread."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Where the log lines of the libraries wenheng runs are written: their own loggers (and
# Python's warnings) go to the run's log file; errors reach the terminal too.
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s (pid %(process)d): %(message)s"
_TERMINAL_STREAMS = ("<stderr>", "<stdout>")


class _LogFile(logging.FileHandler):
    """The run's log file, opened at the first record; a record that cannot be written (a full
    disk) is dropped rather than printed to the terminal with a traceback."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        pass


def _writes_to_terminal(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return (isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
            and (stream in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)
                 or getattr(stream, "name", None) in _TERMINAL_STREAMS))


@contextmanager
def route_logs(log_file: Path) -> Iterator[Path]:
    """Within: Python warnings and the log records of every other library (vllm, torch, ray,
    dagster, urllib3, httpx, asyncio, ...) at WARNING and below go to `log_file`, not to the
    terminal; ERROR and above go to both. vLLM configures its own logger in each of its processes:
    it is given a logging config (VLLM_LOGGING_CONFIG_PATH) that does the same. Libraries' tqdm
    progress bars are off. wenheng's own lines are printed, not logged, and stay on the terminal.
    What vLLM's engine and workers write before their logging is configured, or from C, goes to
    the log file too: the engine is started within `children_stderr_to_run_log`. Restored on the
    way out."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError:   # records that cannot be written are dropped: the terminal stays quiet all the same
        pass
    formatter = logging.Formatter(_LOG_FORMAT)
    to_file = _LogFile(log_file, encoding="utf-8", delay=True)
    to_file.setFormatter(formatter)
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.ERROR)
    to_terminal.setFormatter(formatter)
    root = logging.getLogger()
    undo: list[Any] = []
    # loggers configured before now with a terminal handler of their own (vllm when imported early)
    for logger in [root, *(lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger))]:
        for handler in [h for h in logger.handlers if _writes_to_terminal(h)]:
            undo.append((handler.setLevel, handler.level))
            handler.setLevel(max(handler.level, logging.ERROR))
        if logger is not root and not logger.propagate and any(_writes_to_terminal(h) for h in logger.handlers):
            logger.addHandler(to_file)
            undo.append((logger.removeHandler, to_file))
    root.addHandler(to_file)
    root.addHandler(to_terminal)
    undo += [(root.removeHandler, to_file), (root.removeHandler, to_terminal)]
    logging.captureWarnings(True)
    undo.append((logging.captureWarnings, False))
    saved_env = {k: os.environ.get(k) for k in ("VLLM_CONFIGURE_LOGGING", "VLLM_LOGGING_CONFIG_PATH",
                                                "VLLM_LOGGING_LEVEL", "TQDM_DISABLE")}
    vllm_config = _vllm_logging_config(log_file)
    os.environ.setdefault("TQDM_DISABLE", "1")   # libraries' progress bars (vLLM loading weights): wenheng has its own
    try:
        yield log_file
    finally:
        for restore, value in reversed(undo):
            restore(value)
        to_file.close()
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if vllm_config is not None:
            vllm_config.unlink(missing_ok=True)


def _vllm_logging_config(log_file: Path) -> Path | None:
    """vLLM's logging config for this run (a file beside the log, removed at the end), unless the
    user gave one: its loggers write to the run's log file, and errors to the terminal."""
    if os.environ.get("VLLM_LOGGING_CONFIG_PATH"):
        return None
    config = {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"wenheng": {"format": _LOG_FORMAT}},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": str(log_file), "encoding": "utf-8", "delay": True,
                     "formatter": "wenheng"},
            "terminal": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "level": "ERROR",
                         "formatter": "wenheng"}},
        "loggers": {"vllm": {"handlers": ["file", "terminal"], "propagate": False,
                             "level": os.environ.get("VLLM_LOGGING_LEVEL", "INFO").upper()}},
    }
    path = log_file.with_name(log_file.stem + ".vllm-logging.json")
    try:
        path.write_text(json.dumps(config), encoding="utf-8")
    except OSError:   # no log file either: vLLM's warnings at least stay off the terminal
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        return None
    os.environ.update(VLLM_CONFIGURE_LOGGING="1", VLLM_LOGGING_CONFIG_PATH=str(path))
    return path


def run_log_file() -> Path | None:
    """The log file of the run this process works for (`route_logs` here, or in the process that
    started this step: its vLLM logging config is in the environment), or None."""
    config = os.environ.get("VLLM_LOGGING_CONFIG_PATH")
    if not config or not config.endswith(".vllm-logging.json"):
        return None
    try:
        filename = json.loads(Path(config).read_text(encoding="utf-8"))["handlers"]["file"]["filename"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Path(filename)


@contextmanager
def children_stderr_to_run_log() -> Iterator[None]:
    """Within: the child processes started here (vLLM's engine core and workers) get the run's log
    file as their stderr, so that what they write before their logging is configured, or from C
    (Triton's and torch's warnings, NUMA notices, loading bars), stays off the terminal. This
    process's own stderr is back as it was on the way out. Without a run log: nothing changes."""
    log = run_log_file()
    fd = None
    if log is not None:
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError:
            fd = None
    if fd is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _is_interrupt(exc_type: type[BaseException] | None) -> bool:
    """Ctrl-C as it surfaces: KeyboardInterrupt, or Dagster's DagsterExecutionInterruptedError."""
    return exc_type is not None and (issubclass(exc_type, KeyboardInterrupt)
                                     or exc_type.__name__ == "DagsterExecutionInterruptedError")


def quiet_interrupts() -> None:
    """Ctrl-C prints no traceback from this process: not from the main thread's last moments
    (sys.excepthook), nor from a thread Dagster or a library started (threading.excepthook). The
    stop itself is handled where it happens (pipeline.stopping); every other error is printed as
    before."""
    previous_sys, previous_thread = sys.excepthook, threading.excepthook
    if getattr(previous_sys, "_wenheng", False):
        return

    def on_error(exc_type, exc, tb) -> None:
        if not _is_interrupt(exc_type):
            previous_sys(exc_type, exc, tb)

    def on_thread_error(args) -> None:
        if not _is_interrupt(args.exc_type):
            previous_thread(args)

    on_error._wenheng = True  # type: ignore[attr-defined]
    sys.excepthook, threading.excepthook = on_error, on_thread_error
