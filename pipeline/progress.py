"""Live progress of model calls: done / total, calls/s and tokens/s, errors, ETA.

One place for every engine: `pipeline.engines.cache.run_with_cache` feeds each answer the engine
reports (`Engine.generate`'s `on_result`) to a `Progress`, so vLLM, OpenAI-compatible endpoints,
the baselines and the LLM judge all show the same line.

On a terminal the line is redrawn in place at most `redraw_s` apart (4x a second); anywhere else
(a log file, a CI job, Dagster's captured step output) nothing is redrawn: one line every
`heartbeat_s` on a long run and one line when it ends, with no carriage returns. The same lines go
to `log` too (a Dagster asset passes `context.log.info`, so the run's event log has them).

Dagster captures a step's stderr through a pipe, so inside a step stderr is never a terminal:
`wenheng run` calls `claim_terminal()` first, which keeps a handle on the real terminal for the
progress line."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

_TERMINAL: TextIO | None = None
_CLEAR_TO_EOL = "\x1b[K"


def claim_terminal() -> None:
    """Keep a handle on stderr if it is a terminal, before Dagster redirects it for each step."""
    global _TERMINAL
    if _TERMINAL is None and sys.stderr.isatty():
        _TERMINAL = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8",
                              errors="replace")


def default_stream() -> TextIO:
    return _TERMINAL or sys.stderr


def format_count(n: float) -> str:
    return f"{n:,.0f}"


def format_rate(per_s: float) -> str:
    """3 significant figures at most below 100, whole numbers above: 0.25, 8.4, 35.2, 1,234."""
    if per_s >= 100:
        return f"{per_s:,.0f}"
    if per_s >= 1:
        return f"{per_s:.1f}"
    return f"{per_s:.2f}"


def format_duration(seconds: float) -> str:
    """12.3 s below a minute; m:ss, then h:mm:ss."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts finished requests; thread-safe. Use as a context manager, or call `close()`."""

    def __init__(self, total: int, label: str = "", *, stream: TextIO | None = None,
                 log: Callable[[str], None] | None = None, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, redraw_s: float = 0.25,
                 heartbeat_s: float = 30.0, ticker: bool = True):
        self.total, self.label = total, label
        self.stream = stream if stream is not None else default_stream()
        self.log = log
        self.tty = _isatty(self.stream) if tty is None else tty
        self.clock, self.redraw_s, self.heartbeat_s = clock, redraw_s, heartbeat_s
        self.done = self.errors = self.tokens_out = 0
        self.started = self.last_drawn = self.last_heartbeat = clock()
        self._drawn_once = False
        self._closed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if ticker:  # redraws (ETA, elapsed) and heartbeats while no answer arrives
            self._thread = threading.Thread(target=self._tick_forever, name="wenheng-progress", daemon=True)
            self._thread.start()

    def update(self, completion: Any = None) -> None:
        """One request finished (a `Completion`, or None when there is nothing to count but it)."""
        with self._lock:
            self.done += 1
            if completion is not None:
                self.errors += bool(getattr(completion, "error", None))
                self.tokens_out += getattr(completion, "tokens_out", None) or 0
            self._maybe_emit()

    def tick(self) -> None:
        """What the clock alone triggers: a redraw on a terminal, a heartbeat line elsewhere."""
        with self._lock:
            self._maybe_emit()

    def line(self, final: bool = False) -> str:
        elapsed = max(self.clock() - self.started, 0.0)
        head = f"{self.label}: " if self.label else ""
        rates = self._rates(elapsed)
        errors = f"{format_count(self.errors)} error{'' if self.errors == 1 else 's'}"
        if final:
            return (f"{head}{format_count(self.done)}/{format_count(self.total)} answered in "
                    f"{format_duration(elapsed)}, {rates}, {errors}")
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        if self.done and self.done < self.total:
            eta = format_duration((self.total - self.done) * elapsed / self.done)
        else:
            eta = "?" if self.done < self.total else "0.0 s"
        return (f"{head}{format_count(self.done)}/{format_count(self.total)}{share}, {rates}, {errors}, "
                f"ETA {eta}")

    def close(self) -> str:
        """The final line, written once (ending the redrawn line on a terminal) and logged."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self._closed:
                return self.line(final=True)
            self._closed = True
            final = self.line(final=True)
            if self.tty:
                self._write("\r" + self._fit(final) + _CLEAR_TO_EOL + "\n")
            else:
                self._write(final + "\n")
            if self.log is not None:
                self.log(final)
            return final

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals (called with the lock held) --

    def _rates(self, elapsed: float) -> str:
        if not elapsed or not self.done:
            return "- calls/s"
        calls = f"{format_rate(self.done / elapsed)} calls/s"
        return f"{format_rate(self.tokens_out / elapsed)} tok/s, {calls}" if self.tokens_out else calls

    def _maybe_emit(self) -> None:
        if self._closed:
            return
        now = self.clock()
        if self.tty:
            if not self._drawn_once or now - self.last_drawn >= self.redraw_s:
                self._drawn_once, self.last_drawn = True, now
                self._write("\r" + self._fit(self.line()) + _CLEAR_TO_EOL)
        elif now - self.last_heartbeat >= self.heartbeat_s:
            self.last_heartbeat = now
            text = self.line()
            self._write(text + "\n")
            if self.log is not None:
                self.log(text)

    def _fit(self, text: str) -> str:
        """Cut to the terminal's width: a wrapped line cannot be redrawn in place."""
        width = shutil.get_terminal_size((120, 24)).columns - 1
        return text if len(text) <= width else text[:max(width - 1, 0)] + "…"

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream must not fail the run
            pass

    def _tick_forever(self) -> None:
        period = min(self.redraw_s if self.tty else self.heartbeat_s, 1.0)
        while not self._stop.wait(period):
            self.tick()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
