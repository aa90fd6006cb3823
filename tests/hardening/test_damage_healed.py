"""Damage is healed: a lake file overwritten with random bytes, and a truncated warehouse, are found
by the next run, which says so in one line and recomputes them (the warehouse from the lake and
the history, the damaged file kept aside), to the same results as before."""

from __future__ import annotations

import os

import duckdb
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, write_yaml

from pipeline import lake_health, paths
from pipeline.runner import run_pipeline

# bookkeeping that says when and how a publish ran, not what it holds
_WHEN = {"_build", "_published"}
_MADE = ["created_at"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """One sample run (AC-EVAL x the oracle), shared by the tests: each heals what it damages."""
    root = tmp_path_factory.mktemp("damage")
    (root / "dagster_home").mkdir()
    (root / "dagster_home" / "dagster.yaml").write_bytes((ROOT / ".dagster_home" / "dagster.yaml").read_bytes())
    with pytest.MonkeyPatch.context() as env:
        for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                          ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
            env.setenv(name, str(root / sub))
        env.setenv("WENHENG_MODELS", str(write_yaml(
            root / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
        env.setenv("WENHENG_SOURCES", str(write_yaml(root / "sources.yaml", (
            f"benchmarks:\n  aceval: {{path: {ROOT / 'data/samples/aceval'}, version: t, evaluate: [dev]}}\n"))))
        assert run_pipeline(["aceval"], ["oracle"], log=lambda _: None).ok
        lines, _ = _run()   # a sound project: nothing is taken for damaged
        assert not any("damaged" in line for line in lines), lines
        yield root


def _run() -> tuple[list[str], set[str]]:
    """A run's log lines and the assets it materialized."""
    lines: list[str] = []
    summary = run_pipeline(["aceval"], ["oracle"], log=lines.append)
    assert summary.ok, lines
    return lines, {m["asset"] for m in summary.materializations}


def _lake() -> dict[str, list]:
    """Each lake file's rows, but when they were made (a response recomputed from the cache is
    made anew)."""
    tables = {str(f.relative_to(paths.lake_dir())): pq.read_table(f) for f in sorted(paths.lake_dir().rglob("*.parquet"))}
    return {name: t.drop_columns([c for c in _MADE if c in t.column_names]).to_pylist() for name, t in tables.items()}


def _tables(made: bool = True) -> dict[str, list]:
    """Each warehouse table's rows; with `made` False, not when they were made, and no history
    (a recomputed response is made anew, and the history records it)."""
    with duckdb.connect(str(paths.warehouse_file()), read_only=True) as con:
        names = [n for (n,) in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()
                 if n not in _WHEN and (made or not n.endswith("_history"))]
        columns = {n: [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns "
                                                 "WHERE table_name = ? ORDER BY ordinal_position", [n]).fetchall()
                       if made or c not in _MADE] for n in names}
        selected = {n: ", ".join(f'"{c}"' for c in columns[n]) for n in names}
        return {n: sorted(map(repr, con.execute(f'SELECT {selected[n]} FROM "{n}"').fetchall())) for n in names}


def test_a_lake_file_overwritten_with_random_bytes_is_recomputed(project):
    lake, tables = _lake(), _tables(made=False)
    damaged = paths.lake_dir() / "responses" / "aceval" / "oracle.parquet"
    damaged.write_bytes(os.urandom(damaged.stat().st_size))
    lines, materialized = _run()
    said = [line for line in lines if "damaged" in line]
    assert len(said) == 1 and said[0].startswith("responses [aceval|oracle]: its lake file is damaged (its footer "
                                                 "does not read: ") and said[0].endswith("): recomputed"), lines
    assert {"responses", "scores", "warehouse"} <= materialized and "items" not in materialized
    assert lake_health.lake_damage(damaged) is None
    assert _lake() == lake and _tables(made=False) == tables


def test_a_bit_flipped_or_a_byte_cut_is_found(project, tmp_path):
    """Damage that leaves the file readable at first sight: a lake file whose footer still reads
    (its digest does not match), a warehouse one byte short (DuckDB writes whole blocks)."""
    data = bytearray(next((paths.lake_dir() / "items").glob("*.parquet")).read_bytes())
    data[len(data) // 3] ^= 1
    (tmp_path / "items.parquet").write_bytes(data)
    assert lake_health.lake_damage(tmp_path / "items.parquet") == "its bytes are not those written"
    cut = tmp_path / "warehouse.duckdb"
    cut.write_bytes(paths.warehouse_file().read_bytes()[:-1])
    assert lake_health.warehouse_damage(cut) is not None


def test_a_truncated_warehouse_is_set_aside_and_rebuilt(project):
    db = paths.warehouse_file()
    tables = _tables()
    size = db.stat().st_size
    os.truncate(db, size // 2)
    lines, materialized = _run()
    said = [line for line in lines if "damaged" in line]
    assert len(said) == 1 and said[0].startswith(f"warehouse: {db} is damaged (DuckDB cannot open it: "), lines
    assert said[0].endswith(f"): kept as {db.name}.damaged, rebuilt from the lake and the history")
    assert {"warehouse", "leaderboard"} <= materialized and "responses" not in materialized
    assert (db.parent / f"{db.name}.damaged").stat().st_size == size // 2
    assert lake_health.warehouse_damage(db) is None and _tables() == tables
    assert "publish: up to date" in " ".join(_run()[0])   # healed: the next run leaves it alone


def test_a_damaged_history_file_is_named_set_aside_and_never_blocks_a_publish(project):
    """History cannot be recomputed: the file is named in one line, kept as `<name>.damaged`, and
    the warehouse is built without its snapshot; the next run publishes as usual."""
    from pipeline import history

    folder = history.default_dir(paths.lake_dir())
    victim = sorted(folder.rglob("*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = os.urandom(64)   # 64 random bytes mid-file
    victim.write_bytes(bytes(data))
    lines: list[str] = []
    assert run_pipeline(["aceval"], ["oracle"], log=lines.append, force=True).ok, lines
    said = [line for line in lines if "damaged history" in line]
    assert len(said) == 1 and str(victim) in said[0] and "the warehouse is built without" in said[0], lines
    assert not victim.exists() and victim.with_name(victim.name + ".damaged").is_file()
    assert lake_health.warehouse_damage(paths.warehouse_file()) is None
    again, _ = _run()
    assert not any("damaged" in line for line in again), again
