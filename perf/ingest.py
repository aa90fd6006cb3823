"""Ingestion throughput: every public upstream file (WenMind + AC-EVAL + WYWEB) through the real
adapters and standardize (hashes, script detection), as the raw_* and items assets do.

    .venv/bin/python perf/ingest.py [--upstream ../shared/upstream] [--repeat 3]

Prints, per benchmark and in total: raw rows, items, quarantined, parse and standardize time, and
items/s; the best of `--repeat` runs is reported (the first run also pays for imports and the
file cache). This is ingestion only: the whole `prepare` job (dedup, script variants, policies,
prompts) on the same files is perf/prepare.py."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {  # benchmark -> path under the upstream folder
    "wenmind": "wenmind/WenMind_ver1.json",
    "aceval": "aceval",
    "wyweb": "wyweb",
}


def run_once(upstream: Path) -> dict[str, dict[str, float]]:
    from pipeline.config import SourceSpec
    from pipeline.ingest import parse_source
    from pipeline.standardize import standardize

    figures = {}
    for benchmark, relative in SOURCES.items():
        path = upstream / relative
        if not path.exists():
            print(f"skipping {benchmark}: {path} not found")
            continue
        started = time.perf_counter()
        result = parse_source(SourceSpec(benchmark, path, "upstream"))
        parsed = time.perf_counter()
        items, duplicates = standardize(result.items)
        done = time.perf_counter()
        figures[benchmark] = {
            "raw": sum(result.raw_counts.values()), "items": len(items),
            "quarantined": len(result.quarantine) + len(duplicates),
            "parse_s": parsed - started, "standardize_s": done - parsed, "wall_s": done - started,
            "tasks": len({i["task"] for i in items}), "splits": dict(Counter(i["split"] for i in items)),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", type=Path, default=ROOT.parent / "shared" / "upstream")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    started = time.perf_counter()
    runs = [run_once(args.upstream) for _ in range(max(args.repeat, 1))]
    first_wall = sum(f["wall_s"] for f in runs[0].values())
    best = min(runs, key=lambda figures: sum(f["wall_s"] for f in figures.values()))
    print(f"{'benchmark':<9} {'raw':>7} {'items':>7} {'quar.':>6} {'tasks':>5} {'parse s':>8} "
          f"{'std s':>7} {'items/s':>9}  splits")
    for name, f in best.items():
        print(f"{name:<9} {f['raw']:>7} {f['items']:>7} {f['quarantined']:>6} {f['tasks']:>5} "
              f"{f['parse_s']:>8.2f} {f['standardize_s']:>7.2f} {f['items'] / f['wall_s']:>9,.0f}  {f['splits']}")
    total_items = sum(f["items"] for f in best.values())
    total_wall = sum(f["wall_s"] for f in best.values())
    print(f"{'total':<9} {sum(f['raw'] for f in best.values()):>7} {total_items:>7} "
          f"{sum(f['quarantined'] for f in best.values()):>6} {'':>5} "
          f"{sum(f['parse_s'] for f in best.values()):>8.2f} {sum(f['standardize_s'] for f in best.values()):>7.2f} "
          f"{total_items / total_wall:>9,.0f}")
    print(f"wall time: best run {total_wall:.2f} s, first run {first_wall:.2f} s, "
          f"{len(runs)} runs {time.perf_counter() - started:.2f} s")
    print("ingestion only; the whole prepare job (dedup, variants, prompts): perf/prepare.py")


if __name__ == "__main__":
    main()
