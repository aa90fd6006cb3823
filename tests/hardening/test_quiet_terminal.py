"""`wenheng run` keeps the terminal for its own lines: the warnings and log records of the
libraries it runs go to the run's log file (`--verbose` leaves them on the terminal), and Ctrl-C
prints no traceback from a thread or from the helper processes Dagster starts for each step."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import warnings

import pytest
from conftest import ROOT

from pipeline import cli


def test_library_logs_and_python_warnings_go_to_the_log_file_errors_to_both(tmp_path, capfd):
    log = tmp_path / "logs" / "run.log"
    early = logging.getLogger("wenheng_test.configured_early")   # as vLLM configures its own logger
    own_handler = logging.StreamHandler(sys.stderr)
    early.addHandler(own_handler)
    early.propagate = False
    try:
        with cli.route_logs(log):
            logging.getLogger("vllm.worker").warning("vllm-warning-probe")
            logging.getLogger("urllib3.connectionpool").warning("urllib3-warning-probe")
            early.warning("early-handler-probe")
            warnings.warn("python-warning-probe", UserWarning, stacklevel=1)
            warnings.warn("torch-future-probe", FutureWarning, stacklevel=1)
            logging.getLogger("torch").error("torch-error-probe")
        logging.getLogger("vllm.worker").warning("after-the-run-probe")
        early.warning("early-after-probe")
    finally:
        early.removeHandler(own_handler)
    terminal = capfd.readouterr()
    text = log.read_text(encoding="utf-8")
    for probe in ("vllm-warning-probe", "urllib3-warning-probe", "early-handler-probe", "python-warning-probe",
                  "torch-future-probe", "torch-error-probe"):
        assert probe in text, probe
    assert "WARNING vllm.worker" in text and "UserWarning" in text   # who said it, and what kind
    for probe in ("vllm-warning-probe", "urllib3-warning-probe", "early-handler-probe", "python-warning-probe",
                  "torch-future-probe"):
        assert probe not in terminal.out + terminal.err, probe
    assert "torch-error-probe" in terminal.err   # errors still reach the terminal
    # restored on the way out: the terminal as before, nothing more in the file
    assert "after-the-run-probe" not in text and "early-after-probe" in terminal.err
    assert os.environ.get("VLLM_LOGGING_CONFIG_PATH") is None and not list(log.parent.glob("*.json"))


@pytest.mark.skipif(not __import__("importlib.util").util.find_spec("vllm"), reason="vLLM is not installed")
def test_vllm_in_a_process_of_its_own_logs_to_the_run_log_file(tmp_path):
    """vLLM configures logging in each of its processes (engine core, workers) from its
    environment: the config route_logs gives it sends its records to the run's log file."""
    log = tmp_path / "logs" / "run.log"
    probe = ("from vllm.config.logging import LoggingConfig\n"
             "from vllm.logger import configure_logging, init_logger\n"
             "configure_logging(LoggingConfig())\n"
             "init_logger('vllm.v1.worker.cpu_worker').warning('libtcmalloc-probe is not found in LD_PRELOAD')\n"
             "init_logger('vllm.v1.engine.core').info('engine-info-probe')\n"
             "init_logger('vllm.v1.engine.core').error('engine-error-probe')\n")
    with cli.route_logs(log):
        done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=dict(os.environ), capture_output=True,
                              text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    text = log.read_text(encoding="utf-8")
    assert "libtcmalloc-probe" in text and "engine-info-probe" in text and "engine-error-probe" in text
    assert "libtcmalloc-probe" not in done.stdout + done.stderr and "engine-info-probe" not in done.stdout
    assert "engine-error-probe" in done.stderr


def test_what_the_engines_processes_write_to_stderr_goes_to_the_run_log(tmp_path, capfd):
    """Triton's and torch's warnings, NUMA notices and loading bars come from vLLM's child
    processes before their logging is configured, or from C: the engine is started with the run's
    log file as its children's stderr, and this process's stderr is the terminal again after."""
    from pipeline.terminal import children_stderr_to_run_log

    log = tmp_path / "logs" / "run.log"
    child = [sys.executable, "-c", "import os; os.write(2, b'child-stderr-probe from C\\n')"]
    with cli.route_logs(log):
        with children_stderr_to_run_log():
            subprocess.run(child, check=True, timeout=60)
        subprocess.run([*child[:2], "import os; os.write(2, b'after-probe\\n')"], check=True, timeout=60)
    err = capfd.readouterr().err
    assert "child-stderr-probe from C" in log.read_text(encoding="utf-8")
    assert "child-stderr-probe" not in err and "after-probe" in err
    with children_stderr_to_run_log():   # no run log (not within route_logs): nothing changes
        subprocess.run(child, check=True, timeout=60)
    assert "child-stderr-probe" in capfd.readouterr().err


def test_run_verbose_is_a_flag_of_run():
    parser = cli.build_parser()
    assert parser.parse_args(["run"]).verbose is False
    assert parser.parse_args(["run", "-v"]).verbose is True
    assert parser.parse_args(["run", "--verbose", "--limit", "3"]).verbose is True


def test_an_interrupted_thread_prints_no_traceback_other_errors_still_do():
    script = ("import threading\n"
              "from pipeline.cli import quiet_interrupts\n"
              "quiet_interrupts()\n"
              "def interrupted(): raise KeyboardInterrupt\n"
              "def broken(): raise ValueError('a-real-error-probe')\n"
              "for target in (interrupted, broken):\n"
              "    thread = threading.Thread(target=target); thread.start(); thread.join()\n"
              "raise KeyboardInterrupt\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "KeyboardInterrupt" not in done.stderr
    assert done.stderr.count("Traceback") == 1 and "ValueError: a-real-error-probe" in done.stderr


def test_the_step_helpers_dagster_starts_do_not_hear_ctrl_c():
    """Dagster's compute-log helpers (`tail -F` and a Python watcher) are started with SIGINT
    blocked, so Ctrl-C sent to the process group leaves them (and their tracebacks) out."""
    from dagster._core.execution import compute_logs

    from pipeline.executors import shield_step_helpers

    shield_step_helpers()
    shield_step_helpers()   # once is enough; twice changes nothing
    child = compute_logs.subprocess.Popen(
        [sys.executable, "-c", "import signal; print(int(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, "
                               "[])))"], stdout=subprocess.PIPE, text=True)
    assert child.communicate(timeout=30)[0].strip() == "1"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])   # this process still hears it
    assert compute_logs.subprocess.TimeoutExpired is subprocess.TimeoutExpired   # the rest is the module's
