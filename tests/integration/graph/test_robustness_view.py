"""sql/30_robustness.sql on a small in-memory DuckDB built from Arrow tables."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from conftest import ROOT

from pipeline import schema

SQL = ROOT / "sql" / "30_robustness.sql"


def _items():
    rows = []
    for bench, task, n in [("aceval", "geography", 3), ("aceval", "translation", 2), ("wenmind", "riddle", 2)]:
        rows += [{"item_id": f"{bench}/{task}/{k}", "benchmark": bench, "task": task,
                  "task_group": "g", "format": "mcq_single"} for k in range(n)]
    return rows


def _score(item_id, variant, score, model="m1", setting="zero_shot"):
    return {"item_id": item_id, "benchmark": item_id.split("/")[0], "variant": variant, "setting": setting,
            "model": model, "scorer": "rule@1", "kind": "rule", "score": score}


def _warehouse(scores):
    con = duckdb.connect(":memory:")
    con.register("items_arrow", pa.Table.from_pylist(_items(), schema=schema.ITEMS))
    con.register("scores_arrow", pa.Table.from_pylist(scores, schema=schema.SCORES))
    con.execute("CREATE TABLE items AS SELECT * FROM items_arrow")
    con.execute("CREATE TABLE scores AS SELECT * FROM scores_arrow")
    con.execute(SQL.read_text(encoding="utf-8"))
    return con


def _rows(con):
    cur = con.execute("SELECT * FROM robustness")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def test_delta_is_traditional_minus_simplified_over_paired_items():
    scores = [
        _score("aceval/geography/0", "simplified", 1.0), _score("aceval/geography/0", "traditional", 0.0),
        _score("aceval/geography/1", "simplified", 1.0), _score("aceval/geography/1", "traditional", 1.0),
        _score("aceval/geography/2", "simplified", 0.0), _score("aceval/geography/2", "traditional", None),
        _score("aceval/geography/0", "original", 1.0),                         # not a script pair
        _score("aceval/translation/0", "simplified", 0.0), _score("aceval/translation/0", "traditional", 1.0),
        _score("aceval/translation/1", "traditional", 1.0),                    # no simplified score
        _score("aceval/translation/1", "simplified", 0.5, setting="five_shot"),  # other setting
        _score("wenmind/riddle/0", "simplified", 1.0), _score("wenmind/riddle/0", "traditional_tw", 0.0),
        _score("wenmind/riddle/0", "simplified", 1.0, model="m2"),
        _score("wenmind/riddle/0", "traditional", 1.0, model="m2"),
    ]
    rows = _rows(_warehouse(scores))
    got = {(r["model"], r["benchmark"], r["task"], r["setting"], r["variant"]): (r["n"], r["delta"]) for r in rows}
    assert got == {
        ("m1", "aceval", "geography", "zero_shot", "traditional"): (2, pytest.approx(-0.5)),
        ("m1", "aceval", "translation", "zero_shot", "traditional"): (1, pytest.approx(1.0)),
        ("m1", "wenmind", "riddle", "zero_shot", "traditional_tw"): (1, pytest.approx(-1.0)),
        ("m2", "wenmind", "riddle", "zero_shot", "traditional"): (1, pytest.approx(0.0)),
    }
    geography = next(r for r in rows if r["task"] == "geography")
    assert geography["simplified"] == pytest.approx(1.0) and geography["traditional"] == pytest.approx(0.5)
    assert geography["task_group"] == "g"


@pytest.mark.parametrize("scores", [
    [],
    [_score("aceval/geography/0", "original", 1.0)],
    [_score("aceval/geography/0", "simplified", 1.0)],
], ids=["no scores", "original only", "simplified only"])
def test_no_script_pairs_give_an_empty_view(scores):
    con = _warehouse(scores)
    assert _rows(con) == []
    con.execute(SQL.read_text(encoding="utf-8"))  # re-running the file replaces the view
