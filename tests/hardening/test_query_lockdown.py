"""`wenheng query` reads the warehouse and nothing else: no file written or read beside it, no
database attached, no extension installed, no setting turned back; each refusal and each bad
statement is one line on stderr and a non-zero exit."""

from __future__ import annotations

import duckdb
import pytest

from pipeline import cli


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE items AS SELECT range AS id, 'q' || range AS question FROM range(3)")
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(path))
    (tmp_path / "local.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return tmp_path


def test_a_plain_query_still_works(warehouse, capsys):
    assert cli.main(["query", "SELECT count(*) AS n FROM items"]) == 0
    assert "3" in capsys.readouterr().out


@pytest.mark.parametrize("statement", [
    "COPY items TO '{dir}/out.csv'",
    "COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)",
    "ATTACH '{dir}/other.duckdb' AS other",
    "SELECT * FROM read_csv('{dir}/local.csv')",
    "SELECT * FROM '{dir}/local.csv'",
    "SELECT * FROM read_text('/etc/hostname')",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "CREATE TABLE x AS SELECT 1",
    "SELEC oops",
    "SELECT * FROM no_such_table",
])
def test_refused_or_bad_sql_is_one_line_and_non_zero(warehouse, capsys, statement):
    before = sorted(p.name for p in warehouse.iterdir())
    assert cli.main(["query", statement.format(dir=warehouse)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wenheng: query failed: "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert sorted(p.name for p in warehouse.iterdir()) == before   # nothing written beside the warehouse


def test_a_missing_warehouse_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(tmp_path / "none.duckdb"))
    assert cli.main(["query", "SELECT 1"]) == 2
    assert capsys.readouterr().err.strip().startswith("wenheng: no warehouse at")
