"""Every table and view of the warehouse, row for row, against a stored snapshot
(tests/integration/golden/warehouse_samples.json.gz), in two warehouses:

- samples: the bundled samples of every benchmark through the whole graph with the baseline
  engines (random, oracle), WenMind and Fùxì judged by the scripted judge on the loopback server
  (judgements, judge_reliability, the judge's scores in the paper tables), the sample corpus
  scanned (corpus_overlap, paper_tables_clean);
- history: a synthetic lake (perf/scale.py) published whole, then again after a new source
  version of one benchmark and a re-scored model (an incremental publish, two snapshots in the
  history, so score_changes has rows).

Rows are compared as sets (row order in a table carries no meaning), with each relation's
columns and types. Left out: what differs from one run to the next (timestamps, latencies, file
paths, sizes and times, the layout hash); the temporary folder, the project root, the judge
server's address and the history's recording names are written as placeholders, floats to 10
significant digits.

The snapshot is written by
    .venv/bin/python tests/integration/test_structure_unchanged.py --write
"""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import benchmarks, paths, schema
from pipeline.runner import run_pipeline
from pipeline.warehouse import publish

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:   # run as a script
    sys.path.insert(0, str(TESTS))
from scripted_judge import judge_models_yaml, scripted_judge  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "warehouse_samples.json.gz"
JUDGES = "  wenmind: {model: judge, prompts: wenheng, reliability: {sample_per_task: 1, repeats: 2}}\n" \
         "  fuxi: {model: judge, prompts: wenheng}\n"
# columns whose values change from one run to the next
VOLATILE = frozenset({"created_at", "recorded_at", "first_recorded", "last_recorded", "built_at", "latency_s",
                      "path", "size", "mtime_ns", "layout"})
# a history recording's name: its UTC time and the hash of its rows (responses: created_at, latency_s in them)
RECORDING = re.compile(r"\d{8}T\d{6}\d*Z-[0-9a-f]{12}")
SHOWN = 10   # differing rows shown per relation


def _scale():
    spec = importlib.util.spec_from_file_location("wenheng_scale_golden", paths.PROJECT_ROOT / "perf" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def samples_warehouse(tmp: Path, mp: pytest.MonkeyPatch) -> tuple[Path, list[tuple[str, str]]]:
    """The samples through the whole graph, in `tmp` (the `workdir` layout); and the placeholders
    of its snapshot."""
    for name in [n for n in os.environ if n.startswith("WENHENG_")]:
        mp.delenv(name)
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
        mp.setenv(name, str(tmp / sub))
    (tmp / "dagster_home").mkdir()
    shutil.copy(paths.PROJECT_ROOT / ".dagster_home" / "dagster.yaml", tmp / "dagster_home" / "dagster.yaml")
    mp.setenv("WENHENG_SOURCES", str(paths.DATA_DIR / "sources.yaml"))
    mp.setenv("WENHENG_CORPORA", str(paths.DATA_DIR / "corpora.yaml"))
    with scripted_judge(mp) as server:
        models = tmp / "models.yaml"
        models.write_text(judge_models_yaml(server, JUDGES), encoding="utf-8")
        mp.setenv("WENHENG_MODELS", str(models))
        summary = run_pipeline(list(benchmarks.names()), ["random", "oracle"], log=lambda _: None,
                               corpora=["sample-web"])
    assert summary.ok, summary.failures
    return tmp / "warehouse.duckdb", [(server.base_url, "<judge>"), *placeholders(tmp)]


def history_warehouse(tmp: Path) -> Path:
    """A synthetic lake published whole, then after wenmind's v2 (three questions and an answer
    changed) and m0 re-scored there."""
    scale = _scale()
    lake, db, n = tmp / "lake", tmp / "warehouse.duckdb", 40
    scale.write_lake(lake, ["wenmind", "aceval"], ["m0", "m1"], n, variants=1, settings=2)
    publish(db, lake, paths.SQL_DIR, tmp / "history")
    items = scale.items_table("wenmind", n, version="v2").to_pylist()
    for i in range(3):
        items[i]["question"] = f"new question {i}"
    items[4]["answer"] = "D"
    pq.write_table(pa.Table.from_pylist(items, schema=schema.ITEMS), lake / "items" / "wenmind.parquet")
    responses, scores = scale.partition_tables("wenmind", "m0", n, 1, 2, seed=0)
    rows = scores.to_pylist()
    for row in rows:
        if row["item_id"] in ("wenmind/test/4", "wenmind/test/5"):
            row["score"] = 1.0 - row["score"]
    pq.write_table(pa.Table.from_pylist(rows, schema=scores.schema), lake / "scores" / "wenmind" / "m0.parquet")
    assert publish(db, lake, paths.SQL_DIR, tmp / "history").mode == "incremental"
    return db


def _value(value, replace: list[tuple[str, str]]):
    if isinstance(value, str):
        for old, new in replace:
            value = value.replace(old, new)
        return RECORDING.sub("<recording>", value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else float(f"{value:.10g}")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time, dt.timedelta)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_value(v, replace) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v, replace) for k, v in value.items()}
    return value


def snapshot(db: Path, replace: list[tuple[str, str]]) -> dict[str, dict]:
    """relation -> its kind, columns (name, type) and rows (canonical JSON lines, sorted)."""
    out = {}
    with duckdb.connect(str(db), read_only=True) as con:
        relations = con.execute("SELECT table_name, table_type FROM information_schema.tables "
                                "WHERE table_schema = 'main' ORDER BY 1").fetchall()
        for name, kind in relations:
            columns = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                  [name]).fetchall()
            kept = ", ".join(f'"{c}"' for c, _ in columns if c not in VOLATILE)
            rows = con.execute(f'SELECT {kept} FROM "{name}"').fetchall()
            lines = sorted(json.dumps(_value(list(r), replace), ensure_ascii=False, sort_keys=True) for r in rows)
            out[name] = {"kind": kind, "columns": [list(c) for c in columns], "rows": lines}
    return out


def placeholders(tmp: Path) -> list[tuple[str, str]]:
    return [(str(tmp), "<tmp>"), (str(tmp.resolve()), "<tmp>"), (str(paths.PROJECT_ROOT), "<root>")]


def differences(expected: dict[str, dict], actual: dict[str, dict]) -> list[str]:
    """One block per relation that differs: missing or extra, other columns, rows only one side has."""
    out = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual or name not in expected:
            out.append(f"{name}: {'missing' if name not in actual else 'not in the snapshot'}")
            continue
        want, got = expected[name], actual[name]
        if (want["kind"], want["columns"]) != (got["kind"], got["columns"]):
            out.append(f"{name}: {want['kind']} {want['columns']}\n  now {got['kind']} {got['columns']}")
            continue
        gone = sorted(set(want["rows"]) - set(got["rows"]))
        new = sorted(set(got["rows"]) - set(want["rows"]))
        if gone or new or len(want["rows"]) != len(got["rows"]):
            lines = [f"{name}: {len(want['rows'])} rows -> {len(got['rows'])}; {len(gone)} gone, {len(new)} new"]
            lines += [f"  - {r}" for r in gone[:SHOWN]] + [f"  + {r}" for r in new[:SHOWN]]
            out.append("\n".join(lines))
    return out


def write_golden(target: Path = GOLDEN) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        (root / "samples").mkdir()
        (root / "history").mkdir()
        golden = {"samples": snapshot(*samples_warehouse(root / "samples", mp)),
                  "history": snapshot(history_warehouse(root / "history"), placeholders(root / "history"))}
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(golden, f, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@pytest.fixture(scope="module")
def golden() -> dict[str, dict]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return json.load(f)


def test_every_table_and_view_of_the_samples_warehouse_is_unchanged(golden, tmp_path, monkeypatch):
    problems = differences(golden["samples"], snapshot(*samples_warehouse(tmp_path, monkeypatch)))
    assert not problems, "\n".join(problems)


def test_every_table_and_view_of_an_incrementally_published_history_is_unchanged(golden, tmp_path, monkeypatch):
    monkeypatch.delenv("WENHENG_HISTORY", raising=False)
    db = history_warehouse(tmp_path)
    problems = differences(golden["history"], snapshot(db, placeholders(tmp_path)))
    assert not problems, "\n".join(problems)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        sys.exit(__doc__)
    write_golden(Path(sys.argv[2]) if len(sys.argv) > 2 else GOLDEN)
