"""Run the bad-config corpus (test_config_errors.CASES) against a checkout and count what `wenheng
run` does with each case: a clean refusal (exit code other than 0, no stage started, no
traceback; `lines ok` when it is one line per problem, as the test expects), a traceback, or
silently accepted (a stage started, or exit 0). Each case is a subprocess in a temp folder of its
own; a case that starts a stage is stopped there.

    .venv/bin/python tests/hardening/config_corpus.py [CHECKOUT]   # default: this checkout

To measure the code as it was, check out the older commit beside this one (git worktree add
/tmp/before HEAD) and pass its folder: the corpus is read from here, the code from there."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]   # test_config_errors, and the conftest it imports

from test_config_errors import CASES, UNSET_KEY, case_environment, case_files  # noqa: E402

STAGES = ("] prepare:", "] evaluate:", "] publish:")
LIMIT_S = 180


def run_case(checkout: Path, case: tuple) -> tuple[str, str, bool, str]:
    """(case, verdict, one line per problem, the first line it printed)."""
    name, broken, text, keys = case
    sources, models, args = case_files(broken, text)
    with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as tmp:
        work = Path(tmp)
        for file, content in (("sources.yaml", sources), ("models.yaml", models)):
            (work / file).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        (work / "dagster_home").mkdir()
        shutil.copy(HERE.parent.parent / ".dagster_home" / "dagster.yaml", work / "dagster_home" / "dagster.yaml")
        env = {k: v for k, v in os.environ.items() if k not in (UNSET_KEY, "OPENAI_API_KEY", "WENHENG_LIMIT")}
        env.update(PYTHONPATH=str(checkout), DAGSTER_HOME=str(work / "dagster_home"),
                   WENHENG_LAKE=str(work / "lake"), WENHENG_WAREHOUSE=str(work / "warehouse.duckdb"),
                   WENHENG_CACHE=str(work / "cache"), WENHENG_CORRECTIONS=str(work / "corrections"),
                   WENHENG_CORPORA=str(work / "corpora.yaml"), WENHENG_REPORTS=str(work / "reports"),
                   PYTHONUNBUFFERED="1")
        env.update(case_environment(broken, text, work))
        command = [sys.executable, "-m", "pipeline.cli", "run", "--no-report", "--sources", str(work / "sources.yaml"),
                   "--models", str(work / "models.yaml"), *args]
        with open(work / "out", "w+b") as out, open(work / "err", "w+b") as err:
            proc = subprocess.Popen(command, cwd=checkout, env=env, stdout=out, stderr=err, start_new_session=True)
            started, deadline = False, time.monotonic() + LIMIT_S
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
                if any(stage.encode() in (work / "out").read_bytes() for stage in STAGES):
                    started = True
                    break
            if proc.poll() is None:   # a stage started (or it hangs): this child's own group is stopped
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        stdout = (work / "out").read_text(errors="replace")
        stderr = (work / "err").read_text(errors="replace")
    if "Traceback (most recent call last)" in stdout + stderr:
        verdict = "traceback"
    elif started or proc.returncode == 0 or any(stage in stdout for stage in STAGES):
        verdict = "accepted"
    elif proc.returncode not in (None, 0) and stderr.strip():
        verdict = "clean"
    else:
        verdict = "other"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return name, verdict, verdict == "clean" and len(lines) == len(keys), (lines or ["-"])[0][:160]


def main(argv: list[str]) -> int:
    checkout = Path(argv[0]).resolve() if argv else HERE.parent.parent
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda case: run_case(checkout, case), CASES))
    for name, verdict, one_line, first in results:
        print(f"{verdict:9} {'lines ok' if one_line else '        '}  {name:36} {first}")
    counts = Counter(verdict for _, verdict, _, _ in results)
    print(f"\n{checkout}: {len(results)} cases: {counts['clean']} clean refusals "
          f"({sum(ok for _, _, ok, _ in results)} with one line per problem), {counts['traceback']} tracebacks, "
          f"{counts['accepted']} silently accepted, {counts['other']} other")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
