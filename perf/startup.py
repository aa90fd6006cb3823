"""What wenheng's own modules add to start-up: `import pipeline.definitions` (what `dagster dev`
and every `wenheng run` load) against `import dagster` alone, each in a fresh process.

The two are timed turn about, pass after pass, so that a change in the machine's load falls on
both; the figures are the medians over the passes and their difference, which should be at most
0.3 s (the heavy libraries, pandas, pyarrow, duckdb, sacrebleu, jinja2 and the like, are imported
where they are used, not at start-up). `wenheng --help` and `wenheng run --help` are timed too.
With `--before DIR` (a checkout of other code, e.g. `git archive HEAD | tar -x -C /tmp/before`)
the same imports are timed with that checkout first on PYTHONPATH, in the same passes.

    .venv/bin/python perf/startup.py [--passes 7] [--before /tmp/before]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3


def timed(code: str, checkout: Path) -> float:
    """Seconds a fresh interpreter takes to run `code` with `checkout` first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout) + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with (its pipeline/ is used)")
    args = parser.parse_args(argv)
    cli = "import sys; from pipeline.cli import main; sys.argv = ['wenheng', *{}]\ntry: main()\nexcept SystemExit: pass"
    cases = {"dagster": ("import dagster", ROOT),
             "definitions": ("import dagster, pipeline.definitions", ROOT),
             "wenheng --help": (cli.format(["--help"]), ROOT),
             "wenheng run --help": (cli.format(["run", "--help"]), ROOT)}
    if args.before:
        cases["definitions (before)"] = ("import dagster, pipeline.definitions", args.before.resolve())
        cases["wenheng run --help (before)"] = (cli.format(["run", "--help"]), args.before.resolve())
    seconds: dict[str, list[float]] = {name: [] for name in cases}
    for code, checkout in cases.values():   # a warm-up: the files into the page cache, .pyc written
        timed(code, checkout)
    for n in range(args.passes):
        for name, (code, checkout) in cases.items():
            seconds[name].append(timed(code, checkout))
        print(f"pass {n + 1}: " + "  ".join(f"{name} {values[-1]:.3f} s" for name, values in seconds.items()))
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"medians over {args.passes} passes (load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores):")
    for name, value in medians.items():
        print(f"  {name:28s} {value:.3f} s")
    extra = medians["definitions"] - medians["dagster"]
    if args.before:
        print(f"  before: pipeline.definitions adds {medians['definitions (before)'] - medians['dagster']:.3f} s")
    met = "met" if extra <= TARGET_S else "NOT met"
    print(f"pipeline.definitions adds {extra:.3f} s to import dagster (target <= {TARGET_S} s: {met})")
    return 0 if extra <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
