"""The guarded sequence every command that runs stages goes through (`wenheng run`, `wenheng
contamination scan`), written once:

- the settings checked (a bad WENHENG_* value is one line, exit 2) and DAGSTER_HOME made;
- Arrow's memory pool set to the system allocator (unless the user chose one);
- a run tag, and the run's log file, which gets the libraries' lines unless `verbose`;
- the terminal claimed for the progress lines, SIGINT/SIGTERM turned into a stop (answers in
  flight stored, nothing more launched), the steps' helper processes shielded from Ctrl-C;
- the data directories locked (another writer: one line, exit 75), and every vLLM engine shut
  down when the stages end, however they end;
- a stop said in one line, with the exit code of the signal (130 for Ctrl-C).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline import paths
from pipeline.cli.output import error, say
from pipeline.settings import settings
from pipeline.terminal import route_logs

LOCK_HELD = 75   # EX_TEMPFAIL: another run holds the data directories; try again later


def guarded(work: Callable[[str, Path], int], verbose: bool = False) -> int:
    """`work(run_tag, log_file)` after the settings are checked, with the run's log file taking
    the libraries' lines (to the terminal when `verbose`)."""
    settings().check()
    os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home()))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    # Arrow's default pool (mimalloc) keeps the pages the stages free for its own later use: some
    # 60 MB held through the rest of the run that Python's heap and DuckDB cannot reuse. The
    # system allocator returns them (read at Arrow's first allocation; the user's choice wins).
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from pipeline.runner import new_run_tag

    run_tag = new_run_tag()
    log_file = paths.run_log_file(run_tag)
    if verbose:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM's INFO lines drown the progress
        return work(run_tag, log_file)
    with route_logs(log_file):
        return work(run_tag, log_file)


def run_stages(stages: Callable[[], Any], stopped_says: str) -> tuple[Any, int | None]:
    """`stages()` (a run_pipeline call) with the terminal claimed, signals watched, the lock held
    and the engines shut down after it. Returns (its summary, None), or (None, the exit code)
    when the lock is held or a signal stopped it (said in one line ending in `stopped_says`)."""
    from pipeline import locking, progress, stopping
    from pipeline.executors import shield_step_helpers
    from pipeline.staleness import RunsInFlight

    progress.claim_terminal()  # before Dagster redirects stderr inside each step
    started = time.perf_counter()
    stopping.watch_signals()   # SIGINT/SIGTERM: stop sending, store what is in flight, launch nothing more
    shield_step_helpers()      # the steps' helper processes never see Ctrl-C: no tracebacks from them
    try:
        with locking.hold():   # one writer per lake, warehouse and cache
            try:
                summary = stages()
            finally:
                from pipeline.engines.vllm_engine import shutdown_engines

                shutdown_engines()
    except (locking.LockHeld, RunsInFlight) as exc:
        error(str(exc))
        return None, LOCK_HELD
    if getattr(summary, "stopped", None) is not None or stopping.stop_requested():
        name = signal.Signals(stopping.stop_signal() or signal.SIGINT).name
        say(f"stopped by {name} after {time.perf_counter() - started:.1f} s: {stopped_says}")
        return None, stopping.exit_code()
    return summary, None
