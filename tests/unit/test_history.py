"""History across source versions and incremental publishing, on small synthetic lakes (the
generator of perf/scale.py): an incremental publish gives the tables a whole build gives,
history is append-only and survives a deleted warehouse, a correction is a new snapshot of its
version, the audit accumulates, and `diff` counts exactly what was changed."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import ROOT

from pipeline import aggregate, history, paths, schema
from pipeline.warehouse import publish


def _scale():
    spec = importlib.util.spec_from_file_location("wenheng_scale", ROOT / "perf" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scale = _scale()
BENCHES, MODELS, ITEMS = ["wenmind", "aceval"], ["m0", "m1", "m2"], 40


@pytest.fixture
def lake(tmp_path):
    root = tmp_path / "lake"
    scale.write_lake(root, BENCHES, MODELS, ITEMS, variants=1, settings=2)
    return root


def tables(db) -> dict[str, list]:
    """Every table's rows in a canonical order (row order in a table carries no meaning)."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = [n for (n,) in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_type = 'BASE TABLE' AND table_name <> '_build'").fetchall()]
        return {n: con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall() for n in names}


def rewrite_partition(lake, bench, model, seed):
    responses, scores = scale.partition_tables(bench, model, ITEMS, 1, 2, seed)
    pq.write_table(responses, lake / "responses" / bench / f"{model}.parquet")
    pq.write_table(scores, lake / "scores" / bench / f"{model}.parquet")


def test_an_incremental_publish_gives_the_tables_of_a_full_build(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    first = publish(db, lake, paths.SQL_DIR)
    assert first.mode == "full" and first.counts["responses"] == len(BENCHES) * len(MODELS) * ITEMS * 2
    rewrite_partition(lake, "wenmind", "m0", seed=7)                 # answered again
    for asset in ("responses", "scores"):
        (lake / asset / "aceval" / "m2.parquet").unlink()           # a model dropped
    rewrite_partition(lake, "aceval", "m3", seed=8)                  # a model added
    again = publish(db, lake, paths.SQL_DIR)
    assert again.mode == "incremental"
    changed = [(("benchmark", "aceval"), ("model", "m2")), (("benchmark", "aceval"), ("model", "m3")),
               (("benchmark", "wenmind"), ("model", "m0"))]
    assert again.reloaded["responses"] == again.reloaded["scores"] == changed
    assert "items" not in again.reloaded and "prompts" not in again.reloaded
    whole = publish(tmp_path / "whole.duckdb", lake, paths.SQL_DIR, full=True)
    assert whole.mode == "full" and whole.recorded == []          # the history already holds it all
    incremental, full = tables(db), tables(tmp_path / "whole.duckdb")
    assert incremental.keys() == full.keys()
    for name in full:
        assert incremental[name] == full[name], name
    # the changed run's paper rows really moved, the others did not
    with duckdb.connect(str(db), read_only=True) as con:
        models = {m for (m,) in con.execute("SELECT DISTINCT model FROM paper_tables WHERE benchmark = 'aceval'")
                  .fetchall()}
    assert models == {"m0", "m1", "m3"}


def test_paper_rows_are_recomputed_only_for_runs_whose_units_changed(lake, tmp_path, monkeypatch):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    computed = []
    real = aggregate.paper_tables
    monkeypatch.setattr(aggregate, "paper_tables",
                        lambda tables, bench, units: computed.append((bench, sorted(set(units["model"]))))
                        or real(tables, bench, units))
    # the same rows written again (as a correction that moves no score rewrites its partitions)
    for asset in ("items", "prompts"):
        path = lake / asset / "wenmind.parquet"
        pq.write_table(pq.read_table(path), path)
    again = publish(db, lake, paths.SQL_DIR)
    assert again.mode == "incremental" and again.reloaded["scores"] == [(("benchmark", "wenmind"),)]
    assert computed == []
    # a changed score: that run's rows only
    path = lake / "scores" / "wenmind" / "m1.parquet"
    scores = pq.read_table(path)
    pq.write_table(_replace(scores, "score", [0], [1.0 - scores["score"][0].as_py()]), path)
    publish(db, lake, paths.SQL_DIR)
    assert computed == [("wenmind", ["m1"])]
    whole = tmp_path / "whole.duckdb"
    publish(whole, lake, paths.SQL_DIR, full=True)
    incremental, full = tables(db), tables(whole)
    for name in ("paper_tables", "_paper_inputs", "model_task_scores"):
        assert incremental[name] == full[name], name


def test_a_republish_writes_nothing_and_history_survives_a_deleted_warehouse(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    first = publish(db, lake, paths.SQL_DIR)
    # per benchmark: its items, and each model's responses and scores
    assert len(first.recorded) == len(BENCHES) * (1 + 2 * len(MODELS))
    assert publish(db, lake, paths.SQL_DIR).recorded == []
    before = tables(db)
    db.unlink()
    rebuilt = publish(db, lake, paths.SQL_DIR)
    assert rebuilt.mode == "full" and rebuilt.recorded == []
    after = tables(db)
    for name in history.TABLES:
        assert after[name] == before[name], name
    assert all(after[name] for name in ("item_history", "response_history", "score_history"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history", "lake", "warehouse.duckdb"]


def test_answers_served_again_with_the_same_content_are_not_recorded_again(lake, tmp_path):
    """`wenheng run --force` writes each responses partition again: the same answers from the cache,
    stamped with a new created_at. A re-publish of the same answers writes nothing; a changed
    answer is a new recording."""
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    path = lake / "responses" / "wenmind" / "m0.parquet"
    for hour in (1, 2):
        served = pq.read_table(path)
        stamp = dt.datetime(2026, 7, 1, hour, tzinfo=dt.UTC)
        pq.write_table(_replace(served, "created_at", range(len(served)), [stamp] * len(served)), path)
        again = publish(db, lake, paths.SQL_DIR)
        assert again.reloaded["responses"] == [(("benchmark", "wenmind"), ("model", "m0"))]
        assert again.recorded == [], hour
    served = pq.read_table(path)
    pq.write_table(_replace(served, "text", [0], [served["text"][0].as_py() + "!"]), path)
    (changed,) = publish(db, lake, paths.SQL_DIR).recorded
    assert "response_history" in changed and len(history.files(tmp_path / "history", "response_history")) == \
        len(BENCHES) * len(MODELS) + 1


def test_a_warehouse_built_by_other_code_is_rebuilt_whole(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE items AS SELECT 1 AS x")     # no _build table: an older wenheng's
    assert publish(db, lake, paths.SQL_DIR).mode == "full"
    assert publish(db, lake, paths.SQL_DIR).mode == "incremental"


def test_partition_files_win_over_a_single_file_left_from_the_old_layout(lake, tmp_path):
    stale = pq.read_table(lake / "items" / "wenmind.parquet")
    pq.write_table(stale, lake / "items.parquet")                 # would double wenmind's items
    counts = publish(tmp_path / "warehouse.duckdb", lake, paths.SQL_DIR).counts
    assert counts["items"] == len(BENCHES) * ITEMS


def _write_items(lake, bench, table):
    pq.write_table(table, lake / "items" / f"{bench}.parquet")


def _replace(table: pa.Table, column: str, rows: list[int], values: list) -> pa.Table:
    data = table.column(column).to_pylist()
    for row, value in zip(rows, values):
        data[row] = value
    return table.set_column(table.schema.get_field_index(column), column,
                            pa.array(data, type=table.schema.field(column).type))


def test_diff_counts_exactly_what_changed_between_two_versions(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    v2 = scale.items_table("wenmind", ITEMS, version="v2")
    v2 = _replace(v2, "question", [0, 1, 2], ["new question 0", "new question 1", "new question 2"])
    v2 = _replace(v2, "answer", [4, 8], ["D", "D"])            # items 4 and 8 had A
    v2 = _replace(v2, "choices", [5], [["w", "x", "y", "z"]])
    keep = pc.invert(pc.equal(v2["item_id"], "wenmind/test/6"))  # removed
    v2 = v2.filter(keep)
    added = scale.items_table("wenmind", ITEMS + 1, version="v2").slice(ITEMS, 1)
    _write_items(lake, "wenmind", pa.concat_tables([v2, added]))
    prompts = scale.prompts_table("wenmind", ITEMS + 1, 1, 2)
    pq.write_table(prompts.filter(pc.invert(pc.equal(prompts["item_id"], "wenmind/test/6"))),
                   lake / "prompts" / "wenmind.parquet")
    # m0 re-scored: items 4 and 8 now wrong (gold D), its other answers unchanged
    responses, scores = scale.partition_tables("wenmind", "m0", ITEMS, 1, 2, seed=0 * 100_003 + 0)
    old_scores = scores.column("score").to_pylist()
    rows_3_4 = [i for i, item in enumerate(scores["item_id"].to_pylist()) if item in ("wenmind/test/4",
                                                                                     "wenmind/test/8")]
    moved = [i for i in rows_3_4 if old_scores[i] == 1.0]
    pq.write_table(_replace(scores, "score", moved, [0.0] * len(moved)), lake / "scores" / "wenmind" / "m0.parquet")
    result = publish(db, lake, paths.SQL_DIR)
    assert result.mode == "incremental"

    known = history.versions("wenmind", db)
    assert list(known["snapshot"]) == ["v1", "v2"] and list(known["items"]) == [ITEMS, ITEMS]
    d = history.diff(db, "wenmind", "v1", "v2")
    assert d.counts() == {"added": 1, "removed": 1, "question_changed": 3, "answer_changed": 2,
                          "choices_changed": 1, "response_changed": 0, "score_changed": len(moved)}
    assert d.added == [f"wenmind/test/{ITEMS}"] and d.removed == ["wenmind/test/6"]
    assert d.answer_changed == ["wenmind/test/4", "wenmind/test/8"]
    assert {row[1] for row in d.score_changed} == ({"m0"} if moved else set())
    text = history.format_diff(d)
    assert "wenmind: v1 -> v2" in text and "question changed" in text
    with duckdb.connect(str(db), read_only=True) as con:
        changes = con.execute("""SELECT item_id, model, changed FROM score_changes
            WHERE benchmark = 'wenmind' ORDER BY ALL""").fetchall()
    assert {(i, m) for i, m, _ in changes if "score" in _} == {(r[0], r[1]) for r in d.score_changed}
    assert {i for i, _, c in changes if "question" in c} == {f"wenmind/test/{i}" for i in range(3)}
    assert {i for i, _, c in changes if "answer" in c} == {"wenmind/test/4", "wenmind/test/8"}


def _audit(rows):
    return pa.Table.from_pylist([dict(zip(schema.CORRECTIONS_AUDIT.names, r)) for r in rows],
                                schema=schema.CORRECTIONS_AUDIT)


def test_a_correction_is_a_new_snapshot_and_the_audit_accumulates(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    upstream = [(f"wenmind/test/{i}", "wenmind", "question", json.dumps("a"), json.dumps("b"),
                 "changed between versions", None, "changed_upstream", "upstream v0 -> v1") for i in range(3)]
    pq.write_table(_audit(upstream), lake / "corrections_audit.parquet")
    publish(db, lake, paths.SQL_DIR)
    assert list(history.versions("wenmind", db)["snapshot"]) == ["v1"]
    # the next build's audit holds only the new correction: the upstream rows stay in the history
    fixed = _replace(scale.items_table("wenmind", ITEMS), "answer", [0], ["B"])
    _write_items(lake, "wenmind", fixed)
    correction = ("wenmind/test/0", "wenmind", "answer", json.dumps("A"), json.dumps("B"), "typo", "2026-08-01",
                  "applied", "corrections/wenmind.yaml:1")
    pq.write_table(_audit([correction]), lake / "corrections_audit.parquet")
    publish(db, lake, paths.SQL_DIR)
    snaps = history.versions("wenmind", db)
    assert len(snaps) == 2 and snaps["snapshot"].iloc[1].startswith("v1+c") and set(snaps["version"]) == {"v1"}
    assert history.resolve(snaps, "v1", "wenmind") == "v1"    # a snapshot's own name: that snapshot
    assert history.resolve(snaps.iloc[1:], "v1", "wenmind") == snaps["snapshot"].iloc[1]   # else the version's latest
    assert history.diff(db, "wenmind", "v1", snaps["snapshot"].iloc[1]).answer_changed == ["wenmind/test/0"]
    publish(db, lake, paths.SQL_DIR, full=True)        # a whole rebuild adds nothing either
    with duckdb.connect(str(db), read_only=True) as con:
        audit = con.execute("SELECT status, count(*) FROM audit_history GROUP BY 1 ORDER BY 1").fetchall()
        assert con.execute("SELECT count(*) FROM corrections_audit").fetchone()[0] == 1
    assert audit == [("applied", 1), ("changed_upstream", 3)]


def test_diff_command_lists_known_versions_for_an_unknown_one(lake, tmp_path, monkeypatch, capsys):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(db))
    assert history.diff_command("wenmind", "v1", "v9") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["wenheng: wenmind has no version 'v9' in the history; known: v1"]
    assert history.diff_command("wenmind", "v1", "v1") == 0
    out = capsys.readouterr().out
    assert "wenmind: v1 -> v1" in out and "no task score moved" in out
    assert history.diff_command("nosuch", "v1", "v1") == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_score_files_written_before_kind_existed_publish_rule_rows(lake, tmp_path):
    """A scores file without the `kind` column, and one with it null: rule rows in the warehouse,
    its aggregates and the history, as the warehouse loads them."""
    no_kind = lake / "scores" / "wenmind" / "m0.parquet"
    pq.write_table(pq.read_table(no_kind).drop_columns(["kind"]), no_kind)
    null_kind = lake / "scores" / "aceval" / "m1.parquet"
    scores = pq.read_table(null_kind)
    pq.write_table(scores.set_column(scores.schema.get_field_index("kind"), "kind",
                                     pa.nulls(len(scores), pa.string())), null_kind)
    db = tmp_path / "warehouse.duckdb"
    result = publish(db, lake, paths.SQL_DIR)
    with duckdb.connect(str(db), read_only=True) as con:
        for table in ("scores", "score_history", "model_task_scores"):
            kinds = con.execute(f"SELECT kind, count(*) FROM {table} GROUP BY 1").fetchall()
            assert [k for k, _ in kinds] == ["rule"], table
        assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == result.counts["responses"]
