"""The progress line every engine path shows (pipeline/progress.py): redrawn in place on a
terminal at most 4x a second, plain lines elsewhere; and run_with_cache feeding it."""

from __future__ import annotations

import io
import os

import pytest

from pipeline import progress
from pipeline.engines import Completion, Request
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.progress import Progress, format_duration, format_rate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(total: int, tty: bool, **kwargs) -> tuple[Progress, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    return Progress(total, "wenmind x m", stream=stream, tty=tty, clock=clock, ticker=False, **kwargs), stream, clock


def test_a_terminal_gets_one_line_redrawn_at_most_four_times_a_second():
    bar, stream, clock = _progress(100, tty=True)
    for i in range(8):                  # 8 answers 1/16 s apart: drawn at the 1st and the 5th only
        clock.now += 0.0625
        bar.update(Completion(text="x", tokens_out=5, error="boom" if i == 2 else None))
    draws = stream.getvalue().split("\r")[1:]
    assert len(draws) == 2
    assert "\n" not in stream.getvalue()   # redrawn in place, never a new line before the end
    latest = draws[-1].removesuffix("\x1b[K")
    # 5 done after 0.3125 s: 16 calls/s, 80 tok/s, 95 left at 16/s
    assert latest == "wenmind x m: 5/100 (5%), 80.0 tok/s, 16.0 calls/s, 1 error, ETA 5.9 s"
    clock.now += 0.5
    final = bar.close()
    assert final == "wenmind x m: 8/100 answered in 1.0 s, 40.0 tok/s, 8.0 calls/s, 1 error"
    assert stream.getvalue().endswith("\r" + final + "\x1b[K\n")   # the line ends, once
    bar.close()
    assert stream.getvalue().count("\n") == 1


def test_elsewhere_no_carriage_returns_one_line_at_the_end_and_a_heartbeat_on_long_runs():
    logged: list[str] = []
    bar, stream, clock = _progress(1000, tty=False, log=logged.append)
    for _ in range(240):
        clock.now += 0.0625             # 15 s: no heartbeat yet
        bar.update(Completion(text="x"))
    assert stream.getvalue() == ""
    for _ in range(240):
        clock.now += 0.0625             # at 30 s: one heartbeat line
        bar.update(Completion(text="x"))
    clock.now += 31.0
    bar.tick()                          # nothing arrives for 31 s: the clock alone brings one more
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    assert lines == logged and len(lines) == 3
    assert lines[0] == "wenmind x m: 480/1,000 (48%), 16.0 calls/s, 0 errors, ETA 32.5 s"
    assert lines[1] == "wenmind x m: 480/1,000 (48%), 7.9 calls/s, 0 errors, ETA 1:06"
    assert lines[2] == "wenmind x m: 480/1,000 answered in 1:01, 7.9 calls/s, 0 errors"


def test_a_long_line_is_cut_to_the_terminal_so_it_can_be_redrawn(monkeypatch):
    monkeypatch.setattr(progress.shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((40, 20)))
    bar, stream, clock = _progress(10, tty=True)
    bar.update()
    drawn = stream.getvalue().split("\r")[-1].removesuffix("\x1b[K")
    assert len(drawn) == 39 and drawn.endswith("…")


@pytest.mark.parametrize(("seconds", "text"), [(0.04, "0.0 s"), (12.34, "12.3 s"), (61, "1:01"), (3725, "1:02:05")])
def test_durations(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(("rate", "text"), [(0.254, "0.25"), (8.44, "8.4"), (1234.5, "1,234")])
def test_rates(rate, text):
    assert format_rate(rate) == text


def test_run_with_cache_reports_each_answer_of_a_baseline(tmp_path, monkeypatch):
    """The baselines (like every engine) report answers through on_result; only what is sent counts."""
    stream = io.StringIO()
    monkeypatch.setattr(progress, "default_stream", lambda: stream)
    engine = BaselineEngine("random", seed=1)
    requests = [Request(cache_key=cache_key("random", engine.identity(), [{"role": "user", "content": f"问{i}"}], {}),
                        messages=({"role": "user", "content": f"问{i}"},), max_tokens=4, choices=("A", "B"))
                for i in range(7)]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        run_with_cache(engine, requests[:3], cache)
        logged: list[str] = []
        run_with_cache(engine, requests, cache, log=logged.append)
    first, second = stream.getvalue().splitlines()
    assert first.startswith("baseline random: 3/3 answered in ") and first.endswith(", 0 errors")
    assert second.startswith("baseline random: 4/4 answered in ")
    assert logged == ["7 prompts: 3 from cache, 4 to send", second]


def test_the_claimed_terminal_is_where_progress_goes(monkeypatch):
    """Inside a Dagster step stderr is a pipe; the handle claimed beforehand is used instead."""
    terminal = io.StringIO()
    monkeypatch.setattr(progress, "_TERMINAL", terminal)
    assert Progress(1, ticker=False).stream is terminal
