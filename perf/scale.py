"""Publishing the warehouse at scale: 10 million response rows in the lake, one partition file per
benchmark x model (with its scores, and the items and prompts they answer), then

- a full publish (no warehouse yet),
- a publish after one benchmark x model partition changed (its responses and scores rewritten),
  which should cost that partition, not the warehouse (target: 5 s or less),
- a publish with nothing changed,
- the latency of the `leaderboard` view and of a `paper_tables` query, read-only as `wenheng query`,
- file sizes and the peak RSS,

with the incremental figures as ratios of the full build in the same process.

    .venv/bin/python perf/scale.py                      # 10M rows: 5 benchmarks x 100 models
    .venv/bin/python perf/scale.py --models 10          # 1M rows, a quick look
    .venv/bin/python perf/scale.py --keep /tmp/scale    # keep lake and warehouse there

The data are synthetic and generated here with vectorised pyarrow (nothing is downloaded): per
benchmark `--items` items (20 tasks, 4 options, single-choice) asked in `--variants` script
variants x `--settings` prompt settings, so each partition file holds items x variants x settings
rows; each model answers with its own seeded accuracy. The history (data/history) is recorded at
the full publish and at the changed partition's publish like in a real run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline import paths, schema  # noqa: E402
from pipeline.benchmarks import names as benchmark_names  # noqa: E402

TASKS = 20
LETTERS = np.array(list("ABCD"))


def _strings(prefix: str, values: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pa.array(values.astype(str)), "")


def _column(value, n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type_) if value is None else pa.array(np.full(n, value)).cast(type_)


def _table(columns: dict[str, pa.Array], table_schema: pa.Schema, n: int) -> pa.Table:
    """Columns given, the rest of the schema null."""
    arrays = [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in table_schema]
    return pa.Table.from_arrays(arrays, schema=table_schema)


def items_table(bench: str, n: int, version: str = "v1") -> pa.Table:
    idx = np.arange(n)
    task = idx % TASKS
    choices = pa.ListArray.from_arrays(pa.array(np.arange(0, 4 * n + 1, 4, dtype=np.int32)),
                                       _strings("option ", np.tile(np.arange(4), n)))
    return _table({
        "item_id": _strings(f"{bench}/test/", idx), "benchmark": _column(bench, n, pa.string()),
        "source_version": _column(version, n, pa.string()), "split": _column("test", n, pa.string()),
        "task": _strings("task ", task), "task_group": _strings("group ", task % 5),
        "domain": _strings("domain ", task % 3), "capability": _strings("capability ", task % 2),
        "format": _column("mcq_single", n, pa.string()), "question": _strings("question ", idx),
        "choices": choices, "answer": pa.array(LETTERS[idx % 4]), "metadata": _column("{}", n, pa.string()),
        "content_hash": _strings("c", idx), "answer_hash": _strings("a", idx % 4),
    }, schema.ITEMS, n)


def prompt_keys(bench: str, n: int, variants: int, settings: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item index, variant, setting) of every prompt, item-major."""
    idx = np.repeat(np.arange(n), variants * settings)
    var = np.tile(np.repeat(np.arange(variants), settings), n)
    sett = np.tile(np.arange(settings), n * variants)
    return idx, var, sett


def prompts_table(bench: str, n: int, variants: int, settings: int) -> pa.Table:
    idx, var, sett = prompt_keys(bench, n, variants, settings)
    rows = len(idx)
    return _table({
        "item_id": _strings(f"{bench}/test/", idx), "benchmark": _column(bench, rows, pa.string()),
        "variant": _strings("variant", var), "setting": _strings("setting", sett),
        "messages": _column('[{"role": "user", "content": "q"}]', rows, pa.string()),
        "max_tokens": _column(16, rows, pa.int64()), "prompt_hash": _strings("p", idx * 100 + var * 10 + sett),
    }, schema.PROMPTS, rows)


def partition_tables(bench: str, model: str, n: int, variants: int, settings: int, seed: int
                     ) -> tuple[pa.Table, pa.Table]:
    """A model's responses and rule scores on one benchmark: right with its own probability."""
    rng = np.random.default_rng(seed)
    idx, var, sett = prompt_keys(bench, n, variants, settings)
    rows = len(idx)
    right = rng.random(rows) < rng.uniform(0.25, 0.95)
    letter = np.where(right, LETTERS[idx % 4], LETTERS[(idx + 1) % 4])
    common = {"item_id": _strings(f"{bench}/test/", idx), "benchmark": _column(bench, rows, pa.string()),
              "variant": _strings("variant", var), "setting": _strings("setting", sett),
              "model": _column(model, rows, pa.string())}
    responses = _table(common | {
        "prompt_hash": _strings("p", idx * 100 + var * 10 + sett), "cache_key": _strings(f"{model}-{seed}-", idx),
        "max_tokens": _column(16, rows, pa.int64()), "text": pc.binary_join_element_wise("The answer is ",
                                                                                          pa.array(letter), ""),
        "finish_reason": _column("stop", rows, pa.string()), "tokens_in": pa.array(rng.integers(20, 400, rows)),
        "tokens_out": _column(5, rows, pa.int64()), "latency_s": pa.array(rng.random(rows)),
        "created_at": _column(dt.datetime(2026, 6, 1, tzinfo=dt.UTC), rows, pa.timestamp("us", tz="UTC")),
    }, schema.RESPONSES, rows)
    scores = _table(common | {
        "kind": _column("rule", rows, pa.string()), "scorer": _column("option_letter@1", rows, pa.string()),
        "score": pa.array(right.astype(np.float64)), "extracted": pa.array(letter),
    }, schema.SCORES, rows)
    return responses, scores


def write_lake(lake: Path, benchmarks: list[str], models: list[str], items: int, variants: int, settings: int,
               seed: int = 0) -> None:
    """Items and prompts per benchmark (`<asset>/<benchmark>.parquet`), responses and scores per
    benchmark x model (`<asset>/<benchmark>/<model>.parquet`)."""
    for bench in benchmarks:
        for asset, table in (("items", items_table(bench, items)),
                             ("prompts", prompts_table(bench, items, variants, settings))):
            (lake / asset).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, lake / asset / f"{bench}.parquet")
        for m, model in enumerate(models):
            responses, scores = partition_tables(bench, model, items, variants, settings, seed * 100_003 + m)
            for asset, table in (("responses", responses), ("scores", scores)):
                (lake / asset / bench).mkdir(parents=True, exist_ok=True)
                pq.write_table(table, lake / asset / bench / f"{model}.parquet")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _timed(what: str, fn):
    started = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - started
    print(f"  {what:<48} {elapsed:9.2f} s", flush=True)
    return elapsed, out


def _query_latency(db: Path, sql: str, repeats: int = 5) -> float:
    import duckdb

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        with duckdb.connect(str(db), read_only=True, config={"enable_external_access": False}) as con:
            con.execute(sql).fetchall()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--items", type=int, default=5000, help="items per benchmark")
    parser.add_argument("--variants", type=int, default=2)
    parser.add_argument("--settings", type=int, default=2)
    parser.add_argument("--keep", help="a folder to keep lake, history and warehouse in")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: publish the lake generated there by an earlier run with the same sizes "
                             "(history and warehouse start afresh)")
    args = parser.parse_args(argv)

    from pipeline.warehouse import publish

    benches = list(benchmark_names())
    models = [f"model-{m:03d}" for m in range(args.models)]
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="wenheng-scale-"))
    lake, history_dir, db = root / "lake", root / "history", root / "warehouse.duckdb"
    sizes = root / "sizes.txt"
    wanted = f"{args.models} {args.items} {args.variants} {args.settings}"
    reuse = args.reuse and sizes.is_file() and sizes.read_text() == wanted
    if args.keep:
        for leftover in ([history_dir, db] if reuse else [root]):
            if leftover.is_dir():
                shutil.rmtree(leftover)
            elif leftover.exists():
                leftover.unlink()
    root.mkdir(parents=True, exist_ok=True)
    rows = len(benches) * len(models) * args.items * args.variants * args.settings
    print(f"{len(benches)} benchmarks x {len(models)} models x {args.items:,} items x {args.variants} variants x "
          f"{args.settings} settings = {rows:,} response rows (and as many scores) in {root}", flush=True)
    try:
        if reuse:
            print(f"  reusing the lake in {lake}")
        else:
            _timed("generate the lake", lambda: write_lake(lake, benches, models, args.items, args.variants,
                                                           args.settings))
            sizes.write_text(wanted)
        full_s, full = _timed("full publish (no warehouse)", lambda: publish(db, lake, paths.SQL_DIR, history_dir))
        assert full.mode == "full" and full.counts["responses"] == rows, (full.mode, full.counts["responses"])
        same_s, same = _timed("publish, nothing changed", lambda: publish(db, lake, paths.SQL_DIR, history_dir))
        assert same.mode == "incremental" and not same.recorded
        # one partition answered again: its responses and scores rewritten with other answers (a seed
        # of its own, so a reused lake changes too)
        responses, scores = partition_tables(benches[0], models[0], args.items, args.variants, args.settings,
                                             time.time_ns() % 1_000_000_007)
        pq.write_table(responses, lake / "responses" / benches[0] / f"{models[0]}.parquet")
        pq.write_table(scores, lake / "scores" / benches[0] / f"{models[0]}.parquet")
        one_s, one = _timed(f"publish, 1 partition changed ({benches[0]} x {models[0]})",
                            lambda: publish(db, lake, paths.SQL_DIR, history_dir))
        assert one.mode == "incremental" and one.counts["responses"] == rows and len(one.recorded) == 2
        leaderboard_s = _query_latency(db, "SELECT * FROM leaderboard")
        paper_s = _query_latency(db, f"SELECT model, row_label, score, ci_low, ci_high FROM paper_tables "
                                     f"WHERE benchmark = '{benches[0]}' AND table_name = 'by_fine_task' "
                                     "ORDER BY model, row_order")
        print(f"  {'leaderboard view query (best of 5, read-only)':<48} {leaderboard_s * 1000:9.1f} ms")
        print(f"  {'paper_tables query (best of 5, read-only)':<48} {paper_s * 1000:9.1f} ms")
        print(f"\n  1 changed partition / full: {one_s / full_s:.3f}   nothing changed / full: {same_s / full_s:.3f}")
        for name, result in (("full", full), ("nothing changed", same), ("1 partition changed", one)):
            print(f"  phases, {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in result.seconds.items()))
        print(f"  reloaded on the changed publish: {one.reloaded}")
        print(f"  history files written: full {len(full.recorded)}, unchanged 0, changed {len(one.recorded)}")
        print(f"\n  lake {_size(lake) / 2**20:,.0f} MiB ({sum(1 for _ in lake.rglob('*.parquet'))} files), "
              f"history {_size(history_dir) / 2**20:,.0f} MiB, warehouse {_size(db) / 2**20:,.0f} MiB")
        print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:,.0f} MiB")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
