"""The whole `prepare` job on every public file, stage by stage: wall time, items/s and peak RSS.

    .venv/bin/python perf/prepare.py                     # WenMind + AC-EVAL + WYWEB + samples
    .venv/bin/python perf/prepare.py --pad 49000         # plus edited copies up to 49,000 items
    .venv/bin/python perf/prepare.py --profile 25        # and the 25 costliest functions
    .venv/bin/python perf/prepare.py --baseline REV      # the prompt builder of git revision REV
    .venv/bin/python perf/prepare.py --before            # the stages as they were (see prepare())
    .venv/bin/python perf/prepare.py --freeze-gc         # gc.freeze() between stages
    .venv/bin/python perf/prepare.py --only aceval       # one benchmark (or a few, comma-separated)
    .venv/bin/python perf/prepare.py --asked data/models.yaml   # which pairs the prompts asset builds
    .venv/bin/python perf/prepare.py --only aceval --dagster 3  # and `wenheng run`'s prepare phase

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

After the stages, the prompts asset's own work (prompt columns, the table, its data version, the
parquet file) is timed for every (variant, setting) pair of the protocol, as the asset built it
before, against only the pairs the models of --asked ask (default data/models.yaml), turn about in
this process: rows built and seconds for each, and the prepare phase's total with each.

--dagster N adds the prepare phase of `wenheng run` itself (run_pipeline, the Dagster runs of the
item stages with their parquet files), N times turn about in fresh processes and folders: the
prompts asset building every pair, as before, and the pairs asked. Its prompt rows are counted
from the lake.

--pad adds edited copies of real items (each benchmark's own tasks and splits, 30% of the
characters replaced, so they are not duplicates) until the corpus has that many items: the size
the public corpus reaches with the WYWEB tasks not published yet.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
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
sys.path.insert(0, str(ROOT / "perf"))

from baseline import before_introducing, module_at  # noqa: E402  (perf/baseline.py)

UPSTREAM = Path(os.environ.get("WENHENG_UPSTREAM", ROOT.parent / "shared" / "upstream"))
REAL = {"wenmind": ("wenmind", "WenMind_ver1.json"), "aceval": ("aceval",), "wyweb": ("wyweb",)}
SAMPLES = ("fuxi", "cpdue")


def sources(upstream: Path, only: list[str] | None = None) -> dict:
    from pipeline.config import SourceSpec, load_sources

    specs = {}
    for name, parts in REAL.items():
        if only and name not in only:
            continue
        path = upstream.joinpath(*parts)
        if not path.exists():
            raise SystemExit(f"{name}: {path} not found (set --upstream or WENHENG_UPSTREAM)")
        specs[name] = SourceSpec(name, path, "public")
    samples = load_sources(ROOT / "data" / "sources.yaml")
    specs.update({name: samples[name] for name in SAMPLES if not only or name in only})
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
    from pipeline.ingest import parse_source
    from pipeline.prompts import build_prompt_rows
    from pipeline.script import make_variant, make_variants
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


def prompt_asset_work(kept: list[dict], variants: list[dict], evaluate: dict, asked: set | None,
                      benchmark: str) -> int:
    """What the prompts asset does once its inputs are read, for `asked` pairs (None: every pair,
    as before): variants of the asked scripts, the prompt columns, the table and its data
    version, the parquet file. Returns the rows built."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import schema
    from pipeline.prompts import build_prompt_columns
    from pipeline.sources.digest import frame_digest

    if asked is not None:
        scripts = {v for v, _ in asked}
        variants = [v for v in variants if v["variant"] in scripts]
    columns = build_prompt_columns(kept, variants, evaluate, asked=None if asked is None else {benchmark: asked})
    table = pa.Table.from_pydict(columns, schema=schema.PROMPTS)
    frame = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    frame_digest(frame, ["item_id", "variant", "setting", "prompt_hash"])
    pq.write_table(pa.Table.from_pandas(frame, schema=schema.PROMPTS, preserve_index=False), io.BytesIO())
    return table.num_rows


def asked_comparison(out: dict, models_file: Path, stages: Stages, repeats: int) -> None:
    """The prompts asset's work for every pair against the pairs asked, turn about, per benchmark."""
    from pipeline.config import load_models
    from pipeline.prompts import asked_pairs, protocol
    from pipeline.schema import VARIANTS

    specs = load_models(models_file).values()
    print(f"prompts asset, every pair (before) against the pairs {models_file} asks; best of {repeats}, turn about:")
    every_total = asked_total = 0.0
    for name, kept in out["kept"].items():
        asked = asked_pairs(specs, name)
        every = len(VARIANTS) * len(protocol(name).settings)
        args = (kept, out["variants"][name], out["evaluate"][name])
        times: dict[str, list[tuple[float, float]]] = {"every": [], "asked": []}
        rows = {}
        for _ in range(repeats):
            for label, pairs in (("every", None), ("asked", asked)):
                started, cpu = time.perf_counter(), time.process_time()
                rows[label] = prompt_asset_work(*args, pairs, name)
                times[label].append((time.perf_counter() - started, time.process_time() - cpu))
        best = {label: (min(w for w, _ in runs), min(c for _, c in runs)) for label, runs in times.items()}
        every_total += best["every"][0]
        asked_total += best["asked"][0]
        print(f"  {name:<8} {every:>2} pairs {rows['every']:>7,} rows {best['every'][0]:6.2f} s wall "
              f"{best['every'][1]:6.2f} s CPU  ->  {len(asked):>2} pairs {rows['asked']:>7,} rows "
              f"{best['asked'][0]:6.2f} s wall {best['asked'][1]:6.2f} s CPU  "
              f"({', '.join(sorted(f'{v} x {s}' for v, s in asked))})")
    stage_total = sum(r[1] for r in stages.rows) - stages.seconds("prompts")[0]
    print(f"  prepare (stages but the prompt builder, plus the asset's work): {stage_total + every_total:.2f} s "
          f"wall with every pair -> {stage_total + asked_total:.2f} s with the pairs asked")


def dagster_child(mode: str, folder: Path, specs_file: Path, models_file: Path, benchmarks: list[str]) -> None:
    """One `wenheng run` prepare phase in `folder` (a child process): prints its seconds and the
    prompt rows it wrote, as JSON. mode `every`: the prompts asset builds every pair, as before."""
    import json
    import shutil

    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
        os.environ[name] = str(folder / sub)
    os.environ.update(WENHENG_SOURCES=str(specs_file), WENHENG_MODELS=str(models_file))
    (folder / "dagster_home").mkdir(parents=True)
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", folder / "dagster_home" / "dagster.yaml")
    import pyarrow.parquet as pq

    import assets.items
    from pipeline.prompts import protocol
    from pipeline.runner import run_pipeline
    from pipeline.schema import VARIANTS

    if mode == "every":
        assets.items.asked_pairs = lambda _specs, benchmark: {(v, s) for v in VARIANTS
                                                               for s in protocol(benchmark).settings}
    summary = run_pipeline(benchmarks, [], selection="group:sources or group:items", log=lambda _: None)
    rows = sum(pq.read_metadata(f).num_rows for f in (folder / "lake" / "prompts").glob("*.parquet"))
    print(json.dumps({"ok": summary.ok, "seconds": summary.timings.get("prepare"), "rows": rows}))


def dagster_comparison(specs: dict, models_file: Path, rounds: int) -> None:
    import json
    import statistics

    import yaml

    print(f"`wenheng run` prepare phase ({', '.join(specs)}), every pair (before) against the pairs {models_file} "
          f"asks; {rounds} rounds turn about, fresh process and folders each:")
    seconds: dict[str, list[float]] = {"every": [], "asked": []}
    rows: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        specs_file = Path(tmp) / "sources.yaml"
        entries = {name: {"path": str(spec.path), "version": spec.version, "quality": spec.quality}
                   | ({"splits": list(spec.splits)} if spec.splits else {})
                   | ({"evaluate": list(spec.evaluate)} if spec.evaluate else {}) for name, spec in specs.items()}
        specs_file.write_text(yaml.safe_dump({"benchmarks": entries}, allow_unicode=True), encoding="utf-8")
        for round_ in range(rounds):
            for mode in seconds:
                folder = Path(tmp) / f"{mode}{round_}"
                done = subprocess.run([sys.executable, __file__, "--dagster-child", mode, str(folder), str(specs_file),
                                       str(models_file), ",".join(specs)], capture_output=True, text=True, cwd=ROOT)
                result = json.loads((done.stdout.strip().splitlines() or ["{}"])[-1] or "{}")
                if done.returncode or not result.get("ok"):
                    raise SystemExit(f"prepare ({mode}) failed: {done.stderr[-2000:]}")
                seconds[mode].append(result["seconds"])
                rows[mode] = result["rows"]
    for mode, label in (("every", "every pair (before)"), ("asked", "the pairs asked")):
        print(f"  {label:<20} {rows[mode]:>8,} prompt rows  {statistics.median(seconds[mode]):6.2f} s median "
              f"({min(seconds[mode]):.2f}-{max(seconds[mode]):.2f})")


def baseline_builder(revision: str | None):
    """build_prompt_rows of `revision` (default: the parent of the commit that made pools once),
    loaded from git into a module of its own; (None, reason) when git cannot give it."""
    path = "pipeline/prompts.py"
    try:
        revision = revision or before_introducing("def _user_turn_hash", path)
        if revision is None:
            return None, "no commit introduces the linear builder in this history"
        return module_at(revision, path, "baseline_prompts").build_prompt_rows, revision
    except (OSError, subprocess.CalledProcessError) as error:
        return None, f"git could not give the baseline ({error})"


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
    parser.add_argument("--only", help="these benchmarks only (comma-separated)")
    parser.add_argument("--asked", type=Path, default=ROOT / "data" / "models.yaml", metavar="MODELS",
                        help="the models file whose asked pairs the prompts asset builds")
    parser.add_argument("--repeats", type=int, default=3, help="turns of the every-pair / asked-pair comparison")
    parser.add_argument("--dagster", type=int, default=0, metavar="N",
                        help="also time `wenheng run`'s prepare phase, N rounds of each")
    parser.add_argument("--dagster-child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.dagster_child:
        mode, folder, specs_file, models_file, names = args.dagster_child
        return dagster_child(mode, Path(folder), Path(specs_file), Path(models_file), names.split(","))

    specs = sources(args.upstream, args.only.split(",") if args.only else None)
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
    if not args.before:
        asked_comparison(out, args.asked, stages, args.repeats)
    if args.dagster:
        dagster_comparison(specs, args.asked, args.dagster)
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
