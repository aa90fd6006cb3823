"""The whole `prepare` job on every public file, stage by stage: wall time, items/s and peak RSS.

    .venv/bin/python benchmarks/prepare.py                     # WenMind + AC-EVAL + WYWEB + samples
    .venv/bin/python benchmarks/prepare.py --pad 49000         # plus edited copies up to 49,000 items
    .venv/bin/python benchmarks/prepare.py --profile 25        # and the 25 costliest functions
    .venv/bin/python benchmarks/prepare.py --baseline REV      # the prompt builder of git revision REV
    .venv/bin/python benchmarks/prepare.py --before            # the stages as they were (see prepare())
    .venv/bin/python benchmarks/prepare.py --freeze-gc         # gc.freeze() between stages

Sources are configured as the real-file tests configure them: WenMind, AC-EVAL and WYWEB from the
benchmarks' own files (default ../shared/upstream, or WENHENG_UPSTREAM), Fùxì and CP-DUE from the
bundled samples (data/sources.yaml). Each stage calls the pure functions its asset calls, in the
asset graph's order and per benchmark partition where the asset is partitioned:

    parse      parse_source -> raw rows                          (raw_items[benchmark])
    items      build_items: standardize, corrections             (items, quarantine, audit)
    dedup      item_signatures, clusters_from_signatures         (dedup_clusters, per benchmark)
    contam.    contamination_from_signatures over all benchmarks (contamination)
    variants   make_variants: original / simplified / traditional (item_variants)
    policy     quality_items, evaluation_items, variant filter   (prompts, first half)
    prompts    build_prompt_rows                                 (prompts)

Parquet reads and writes between assets are not included. The baseline is the prompt builder of
an earlier revision (default: the last one before pools were built once), run in this process on
the same items and variants; its rows are compared with today's.

--pad adds edited copies of real items (each benchmark's own tasks and splits, 30% of the
characters replaced, so they are not duplicates) until the corpus has that many items: the size
the public corpus reaches with the WYWEB tasks not published yet.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import io
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream"))
REAL = {"wenmind": ("wenmind", "WenMind_ver1.json"), "aceval": ("aceval",), "wyweb": ("wyweb",)}
SAMPLES = ("fuxi", "cpdue")


def sources(upstream: Path) -> dict:
    from pipeline.config import SourceSpec, load_sources

    specs = {}
    for name, parts in REAL.items():
        path = upstream.joinpath(*parts)
        if not path.exists():
            raise SystemExit(f"{name}: {path} not found (set --upstream or WENHENG_UPSTREAM)")
        specs[name] = SourceSpec(name, path, "public")
    samples = load_sources(ROOT / "data" / "sources.yaml")
    specs.update({name: samples[name] for name in SAMPLES})
    return specs


class Stages:
    """Wall and CPU time, and the process's peak RSS after each stage. CPU time is the steadier
    figure on a shared machine: other processes stretch wall time, not our CPU seconds."""

    def __init__(self, freeze_gc: bool = False):
        self.rows: list[tuple[str, float, float, int, float]] = []
        self.freeze_gc = freeze_gc
        self.restart()

    def restart(self) -> None:
        self.last, self.last_cpu = time.perf_counter(), time.process_time()

    def __call__(self, name: str, items: int) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self.rows.append((name, now - self.last, cpu - self.last_cpu, items,
                          resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        if self.freeze_gc:  # what a stage received is never garbage: keep the collector off it
            gc.freeze()
        self.last, self.last_cpu = time.perf_counter(), time.process_time()

    def seconds(self, name: str) -> tuple[float, float]:
        return next((wall, cpu) for stage, wall, cpu, _, _ in self.rows if stage == name)

    def print(self) -> tuple[float, float]:
        total, total_cpu = sum(r[1] for r in self.rows), sum(r[2] for r in self.rows)
        print(f"{'stage':<10} {'wall s':>7} {'cpu s':>7} {'share':>6} {'items':>8} {'items/s':>10} {'peak RSS MB':>12}")
        for name, spent, cpu, items, peak in self.rows:
            print(f"{name:<10} {spent:>7.2f} {cpu:>7.2f} {spent / total:>6.0%} {items:>8,} {items / spent:>10,.0f} "
                  f"{peak:>12,.0f}")
        items = self.rows[-1][3]
        print(f"{'total':<10} {total:>7.2f} {total_cpu:>7.2f} {'':>6} {items:>8,} {items / total:>10,.0f} "
              f"{max(r[4] for r in self.rows):>12,.0f}")
        return total, total_cpu


def pad(raw: dict[str, list[dict]], target: int, seed: int = 0) -> None:
    """Edited copies of item rows, spread over the benchmarks in proportion, until `target` items."""
    rng = random.Random(seed)
    pools = {b: [r for r in rows if r["reason"] is None] for b, rows in raw.items()}
    have = sum(map(len, pools.values()))
    alphabet = sorted({ch for rows in pools.values() for r in rows[:500] for ch in (r.get("question") or "")})

    def edit(text):
        return text if not text else "".join(rng.choice(alphabet) if rng.random() < 0.3 else ch for ch in text)

    for b, rows in pools.items():
        for k in range(round((target - have) * len(rows) / have) if have < target else 0):
            row = rows[k % len(rows)]
            raw[b].append(dict(row, item_id=f"{row['item_id']}~{k}", source_locator=f"{row['source_locator']}~{k}",
                               context=edit(row.get("context")), question=edit(row.get("question")),
                               choices=[edit(c) for c in row.get("choices") or []]))


def prepare(specs: dict, pad_to: int = 0, stages: Stages | None = None, before=None) -> dict:
    """Every stage once; returns what the prompt stage was given and its rows. `before`: an
    earlier revision's prompt builder, to run the stages as they were before signatures, batched
    variants and the linear prompt builder: `cluster()` per benchmark and once more over all
    benchmarks for contamination, `make_variant` per item and variant, and that builder."""
    from pipeline import paths, schema
    from pipeline.dedup import DedupParams, cluster, evaluation_items
    from pipeline.dedup.policy import quality_items
    from pipeline.prompts import build_prompt_rows
    from pipeline.script import make_variant, make_variants
    from pipeline.sources.ingest import parse_source
    from pipeline.standardize import build_items

    tick = stages or Stages()
    raw = {name: parse_source(spec).rows() for name, spec in specs.items()}
    tick("parse", sum(map(len, raw.values())))
    if pad_to:
        pad(raw, pad_to)
        tick.restart()  # padding is not a stage

    items = {name: build_items(rows, paths.corrections_dir(), None)[0] for name, rows in raw.items()}
    n_items = sum(map(len, items.values()))
    tick("items", n_items)

    params = DedupParams()
    everything = [it for its in items.values() for it in its]
    if before:
        clusters = {name: cluster(its, params)[0] for name, its in items.items()}
        tick("dedup", n_items)
        contamination = cluster(everything, params)[1]
    else:
        from pipeline.dedup import clusters_from_signatures, contamination_from_signatures, item_signatures

        signatures = {name: item_signatures(its, params)[0] for name, its in items.items()}
        clusters = {name: clusters_from_signatures(its, signatures[name], params) for name, its in items.items()}
        tick("dedup", n_items)
        contamination = contamination_from_signatures(everything, [s for name in items for s in signatures[name]],
                                                       params)
    tick("contam.", n_items)

    if before:
        variants = {name: [make_variant(it, v) for it in its for v in schema.VARIANTS] for name, its in items.items()}
    else:
        variants = {name: make_variants(its, schema.VARIANTS) for name, its in items.items()}
    tick("variants", n_items)

    policy = "flag"
    kept, kept_variants, evaluate = {}, {}, {}
    for name, its in items.items():
        spec = specs[name]
        kept[name] = evaluation_items(quality_items(its, {name: spec.quality}), clusters[name], policy)
        ids = {it["item_id"] for it in kept[name]}
        kept_variants[name] = [v for v in variants[name] if v["item_id"] in ids]
        evaluate[name] = {name: spec.evaluate} if spec.evaluate else {}
    tick("policy", n_items)

    build = before or build_prompt_rows
    prompts = {name: build(kept[name], kept_variants[name], evaluate[name]) for name in items}
    tick("prompts", n_items)
    return {"kept": kept, "variants": kept_variants, "evaluate": evaluate, "prompts": prompts,
            "counts": {"items": n_items, "clusters rows": sum(map(len, clusters.values())),
                       "contamination": len(contamination), "variants": sum(map(len, variants.values())),
                       "prompts": sum(map(len, prompts.values())),
                       "per benchmark": dict(Counter(it["benchmark"] for it in everything))}}


def baseline_builder(revision: str | None):
    """build_prompt_rows of `revision` (default: the parent of the commit that made pools once),
    loaded from git into a module of its own; (None, reason) when git cannot give it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout

    try:
        if revision is None:
            introduced = git("log", "--format=%H", "-S", "def _user_turn_hash", "--", "pipeline/prompts.py").split()
            if not introduced:
                return None, "no commit introduces the linear builder in this history"
            revision = introduced[-1] + "^"
        source = git("show", f"{revision}:pipeline/prompts.py")
    except (OSError, subprocess.CalledProcessError) as error:
        return None, f"git could not give the baseline ({error})"
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "baseline_prompts.py"
        file.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("baseline_prompts", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module.build_prompt_rows, revision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, default=UPSTREAM)
    parser.add_argument("--pad", type=int, default=0, metavar="N", help="add edited copies up to N items")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    parser.add_argument("--baseline", metavar="REV", help="git revision of the old prompt builder")
    parser.add_argument("--before", action="store_true",
                        help="run the stages as before: cluster(), make_variant per item, the baseline prompt builder")
    parser.add_argument("--freeze-gc", action="store_true",
                        help="gc.freeze() after each stage, as an asset would after loading its inputs")
    parser.add_argument("--no-baseline", action="store_true", help="skip the old prompt builder")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))

    specs = sources(args.upstream)
    old, revision = (None, "not asked for") if args.no_baseline and not args.before else baseline_builder(args.baseline)
    if args.before and old is None:
        raise SystemExit(f"--before needs the baseline prompt builder: {revision}")
    stages = Stages(args.freeze_gc)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    out = prepare(specs, args.pad, stages, old if args.before else None)
    if profiler:
        profiler.disable()
    counts = out["counts"]
    print(f"prepare{f' as before ({revision})' if args.before else ''} on {counts['items']:,} items "
          f"{counts['per benchmark']} (load {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores):")
    total, total_cpu = stages.print()
    print(f"-> {counts['variants']:,} variants, {counts['prompts']:,} prompts, {counts['clusters rows']:,} items in "
          f"clusters, {counts['contamination']:,} contamination pairs; total {total:.1f} s wall, {total_cpu:.1f} s CPU")
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.profile)
        print("\n".join(line for line in text.getvalue().splitlines()[6:] if line.strip()))
    if args.before or args.no_baseline:
        return
    if old is None:
        print(f"baseline skipped: {revision}")
        return
    spent, spent_cpu, same = 0.0, 0.0, True
    for name, kept in out["kept"].items():
        start, start_cpu = time.perf_counter(), time.process_time()
        rows = old(kept, out["variants"][name], out["evaluate"][name])
        spent, spent_cpu = spent + time.perf_counter() - start, spent_cpu + time.process_time() - start_cpu
        same &= rows == out["prompts"][name]
    now, now_cpu = stages.seconds("prompts")
    print(f"prompt builder of {revision}, same input: {spent:.2f} s wall / {spent_cpu:.2f} s CPU, against "
          f"{now:.2f} s / {now_cpu:.2f} s now; rows identical: {same}")


if __name__ == "__main__":
    main()
