"""Publishing the warehouse while someone reads it: a reader in another process opening it in a
loop during 20 publishes (incremental ones, each replacing a changed partition) sees only complete
databases, and two builders at once do not trip over each other's temporary file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from conftest import ROOT, write_yaml

from pipeline import paths
from pipeline.runner import run_pipeline
from pipeline.warehouse import build, publish

READER = r"""
import sys, time, duckdb
path, expected_items, expected_tables = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
opened = bad = 0
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    try:
        with duckdb.connect(path, read_only=True) as con:
            tables = con.execute("SELECT count(*) FROM information_schema.tables "
                                 "WHERE table_type = 'BASE TABLE'").fetchone()[0]
            items = con.execute("SELECT count(*) FROM items").fetchone()[0]
            papers = con.execute("SELECT count(*) FROM paper_tables").fetchone()[0]
        opened += 1
        if (tables, items) != (expected_tables, expected_items) or papers == 0:
            bad += 1
            print("INCOMPLETE", tables, items, papers, flush=True)
    except Exception as exc:
        bad += 1
        print("ERROR", type(exc).__name__, str(exc)[:200], flush=True)
    if sys.stdin in __import__("select").select([sys.stdin], [], [], 0)[0]:
        break
print("OPENED", opened, "BAD", bad, flush=True)
"""


def test_readers_see_only_complete_warehouses_during_20_publishes(workdir, monkeypatch):
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(
        workdir / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(workdir / "sources.yaml", (
        f"benchmarks:\n  aceval: {{path: {ROOT / 'data/samples/aceval'}, version: t, evaluate: [dev]}}\n"))))
    assert run_pipeline(["aceval"], ["oracle"], log=lambda _: None).ok
    db, lake = paths.warehouse_file(), paths.lake_dir()
    counts = build(db, lake, paths.SQL_DIR)
    tables = len(counts)
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db), str(counts["items"]), str(tables)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partition = lake / "responses" / "aceval" / "oracle.parquet"
    try:
        for i in range(20):
            stat = partition.stat()   # the partition rewritten: same rows, a new fingerprint
            os.utime(partition, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000 * (i + 1)))
            result = publish(db, lake, paths.SQL_DIR)
            assert result.mode == "incremental" and result.counts == counts
            assert result.reloaded["responses"] == [(("benchmark", "aceval"), ("model", "oracle"))]
        out, err = reader.communicate("stop\n", timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
    last = out.strip().splitlines()[-1].split()
    assert last[0] == "OPENED" and int(last[1]) >= 20, out + err
    assert int(last[3]) == 0, out[-2000:]
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name)) == [db.name]


def test_two_builders_at_once_each_swap_in_a_complete_warehouse(workdir, monkeypatch):
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(
        workdir / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(workdir / "sources.yaml", (
        f"benchmarks:\n  aceval: {{path: {ROOT / 'data/samples/aceval'}, version: t, evaluate: [dev]}}\n"))))
    assert run_pipeline(["aceval"], ["oracle"], log=lambda _: None).ok
    db, lake = paths.warehouse_file(), paths.lake_dir()
    expected = build(db, lake, paths.SQL_DIR)
    results, errors = [], []

    def one() -> None:
        try:
            results.append(build(db, lake, paths.SQL_DIR))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == [] and results == [expected, expected]
    assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name)) == [db.name]
