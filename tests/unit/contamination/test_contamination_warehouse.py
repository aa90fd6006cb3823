"""The warehouse's corpus tables on a small constructed lake: corpus_overlap and corpus_quarantine
load per corpus, the views count and rate what the rows say, paper_tables_clean leaves out exactly
the items a corpus contaminates (and moves the scores as constructed), and an incremental publish
after a corpus file changes reloads that corpus alone and gives what a whole build gives."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline import aggregate, paths, schema, warehouse
from pipeline.benchmarks import cards
from pipeline.contamination.overlap import CONTAMINATED as LEVELS_CONTAMINATED
from pipeline.contamination.overlap import level
from pipeline.warehouse import publish
from resources.lake import to_arrow

VARIANT, SETTING = "original", "zero_shot_ao"
GROUP = "General Historical Knowledge"
# aceval items: (item id, task, score of model m1, score of model m2)
ACEVAL = [("aceval/dev/historical_facts/0", "historical_facts", 1.0, 1.0),
          ("aceval/dev/historical_facts/1", "historical_facts", 1.0, 0.0),
          ("aceval/dev/historical_facts/2", "historical_facts", 0.0, 1.0),
          ("aceval/dev/historical_facts/3", "historical_facts", 0.0, 1.0),
          ("aceval/dev/geography/0", "geography", 1.0, 1.0),
          ("aceval/dev/geography/1", "geography", 0.0, 0.0)]
WYWEB = [("wyweb/test/gjc/0", "gjc", 1.0, 1.0), ("wyweb/test/gjc/1", "gjc", 0.0, 1.0)]
# corpus poetry: item -> ((input n-grams, matched), (label n-grams, matched)); threshold 0.5
POETRY = {
    "aceval/dev/historical_facts/0": ((10, 8), (5, 0)),    # input 0.8: contaminated (input)
    "aceval/dev/historical_facts/1": ((10, 8), (0, 0)),    # input 0.8: contaminated (input)
    "aceval/dev/historical_facts/2": ((10, 3), (5, 1)),    # 0.3 / 0.2: clean
    "aceval/dev/historical_facts/3": ((0, 0), (0, 0)),     # too short
    "aceval/dev/geography/0": ((10, 1), (5, 3)),           # label 0.6: contaminated (label)
    "aceval/dev/geography/1": ((10, 0), (5, 0)),
    "wyweb/test/gjc/0": ((10, 0), (5, 0)),
    "wyweb/test/gjc/1": ((10, 2), (5, 0)),
}
CONTAMINATED = {"aceval/dev/historical_facts/0", "aceval/dev/historical_facts/1", "aceval/dev/geography/0"}
# corpus news: aceval only, nothing contaminated
NEWS = {item: ((10, 1), (5, 0)) for item, *_ in ACEVAL}


def write(path: Path, rows: list[dict], table_schema) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_arrow(schema.to_frame(rows, table_schema), table_schema), path)


def overlap_rows(corpus: str, fields: dict[str, tuple], threshold: float = 0.5, version: str = "1") -> list[dict]:
    """corpus_overlap rows as pipeline/contamination/overlap.py makes them."""
    tasks = {item: task for item, task, *_ in ACEVAL + WYWEB}
    rows = []
    for item, counts in fields.items():
        row = {"item_id": item, "benchmark": item.split("/")[0], "task": tasks[item], "corpus": corpus,
               "corpus_version": version, "ngram": 13, "threshold": threshold}
        for name, (total, matched) in zip(("input", "label"), counts):
            share = matched / total if total else None
            row |= {f"{name}_ngrams": total, f"{name}_matched": matched, f"{name}_share": share,
                    f"{name}_longest": 13 + matched if matched else 0,
                    f"{name}_file": f"/corpora/{corpus}/a.jsonl" if matched else None,
                    f"{name}_doc": f"doc-{item.split('/')[-1]}" if matched else None,
                    f"{name}_offset": 7 if matched else None,
                    f"{name}_snippet": f"學而時習之 {name} {item}" if matched else None,
                    # every n-gram the item's own, found in one document
                    f"{name}_specific_ngrams": total, f"{name}_specific_matched": matched,
                    f"{name}_document_share": share, f"{name}_flagged": share is not None and share >= threshold}
        total = counts[0][0] + counts[1][0]
        best = "label" if (row["label_share"] or 0) > (row["input_share"] or 0) else "input"
        row |= {f"specific_{k}": row[f"{best}_{k}"] for k in ("longest", "file", "doc", "offset", "snippet")}
        row |= {"specific_ngrams": total, "specific_matched": counts[0][1] + counts[1][1],
                "specific_share": (counts[0][1] + counts[1][1]) / total if total else None,
                "source_ngrams": 0, "source_matched": 0, "template_ngrams": 0, "answer_doc": None}
        row["level"] = level(row)
        row["status"] = "too_short" if row["level"] == "too_short" else "checked"
        row["contaminated"] = None if row["level"] == "too_short" else row["level"] in LEVELS_CONTAMINATED
        rows.append(row)
    return rows


def write_benchmark(lake: Path, bench: str, split: str, entries: list[tuple]) -> None:
    items, prompts = [], []
    for item, task, *_ in entries:
        items.append({"item_id": item, "benchmark": bench, "source_version": "t", "split": split, "task": task,
                      "task_group": GROUP if bench == "aceval" else "nlu", "format": "mcq_single",
                      "question": f"question {item}", "choices": ["甲", "乙"], "answer": "A", "metadata": {}})
        prompts.append({"item_id": item, "benchmark": bench, "variant": VARIANT, "setting": SETTING,
                        "messages": [{"role": "user", "content": item}], "prompt_hash": f"h-{item}"})
    write(lake / "items" / f"{bench}.parquet", items, schema.ITEMS)
    write(lake / "prompts" / f"{bench}.parquet", prompts, schema.PROMPTS)
    for k, model in enumerate(("m1", "m2")):
        write_run(lake, bench, model, [(item, scores[k]) for item, _, *scores in entries])


def write_run(lake: Path, bench: str, model: str, scored: list[tuple[str, float]]) -> None:
    responses, scores = [], []
    for item, score in scored:
        key = {"item_id": item, "benchmark": bench, "variant": VARIANT, "setting": SETTING, "model": model}
        responses.append(key | {"prompt_hash": f"h-{item}", "text": "A" if score else "B"})
        scores.append(key | {"kind": "rule", "scorer": "mcq@1", "score": score, "details": {}})
    write(lake / "responses" / bench / f"{model}.parquet", responses, schema.RESPONSES)
    write(lake / "scores" / bench / f"{model}.parquet", scores, schema.SCORES)


def write_lake(lake: Path, corpora: bool = True) -> Path:
    write_benchmark(lake, "aceval", "dev", ACEVAL)
    write_benchmark(lake, "wyweb", "test", WYWEB)
    if corpora:
        write(lake / "corpus_overlap" / "poetry.parquet", overlap_rows("poetry", POETRY), schema.CORPUS_OVERLAP)
        write(lake / "corpus_overlap" / "news.v2.parquet", overlap_rows("news.v2", NEWS), schema.CORPUS_OVERLAP)
        write(lake / "corpus_quarantine" / "poetry.parquet",
              [{"corpus": "poetry", "path": "/corpora/poetry/bad.json", "reason": "not valid JSON: <oops>"}],
              schema.CORPUS_QUARANTINE)
        write(lake / "corpus_quarantine" / "news.v2.parquet", [], schema.CORPUS_QUARANTINE)
        write(lake / "corpus_reading" / "poetry.parquet",
              [{"corpus": "poetry", "files": 3, "documents": 120, "bad_lines": 2, "empty_files": 1, "invalid_utf8": 0,
                "first_error": "/corpora/poetry/a.jsonl: a line is not JSON (Expecting value)"}], schema.CORPUS_READING)
    return lake


@pytest.fixture
def lake(tmp_path) -> Path:
    return write_lake(tmp_path / "lake")


def rows(db: Path, query: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(query, params or []).fetchall()


def dicts(db: Path, query: str, params: list | None = None) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute(query, params or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]


def all_tables(db: Path) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        names = [n for (n,) in con.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_type = 'BASE TABLE' AND table_name <> '_build'").fetchall()]
        return {n: con.execute(f'SELECT * FROM "{n}" ORDER BY ALL').fetchall() for n in names}


def test_partition_columns_are_per_table(lake):
    assert warehouse.partition_columns("corpus_overlap") == ("corpus",)
    assert warehouse.partition_columns("responses") == warehouse.PARTITION_COLUMNS == ("benchmark", "model")
    parts = warehouse.lake_parts(lake, "corpus_overlap", warehouse.BASE_TABLES["corpus_overlap"][0])
    assert [p.key for p in parts] == [(("corpus", "news.v2"),), (("corpus", "poetry"),)]
    parts = warehouse.lake_parts(lake, "responses", warehouse.BASE_TABLES["responses"][0])
    assert [p.key for p in parts][:2] == [(("benchmark", "aceval"), ("model", "m1")),
                                          (("benchmark", "aceval"), ("model", "m2"))]


def test_the_corpus_tables_load_with_their_declared_columns(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    counts = publish(db, lake, paths.SQL_DIR).counts
    assert counts["corpus_overlap"] == len(POETRY) + len(NEWS) and counts["corpus_quarantine"] == 1
    for table, declared in [("corpus_overlap", schema.CORPUS_OVERLAP), ("corpus_quarantine", schema.CORPUS_QUARANTINE)]:
        columns = [c for (c,) in rows(db, "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                          "ORDER BY ordinal_position", [table])]
        assert columns == declared.names
    assert rows(db, "SELECT corpus, count(*) FROM corpus_overlap GROUP BY 1 ORDER BY 1") == [
        ("news.v2", len(NEWS)), ("poetry", len(POETRY))]
    assert rows(db, "SELECT * FROM corpus_quarantine") == [("poetry", "/corpora/poetry/bad.json",
                                                            "not valid JSON: <oops>")]


def test_no_corpus_gives_empty_tables_and_views(tmp_path):
    lake = write_lake(tmp_path / "lake", corpora=False)
    db = tmp_path / "warehouse.duckdb"
    counts = publish(db, lake, paths.SQL_DIR).counts
    assert counts["corpus_overlap"] == counts["corpus_quarantine"] == counts["paper_tables_clean"] == 0
    assert counts["paper_tables"] > 0
    columns = [c for (c,) in rows(db, "SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'paper_tables_clean' ORDER BY ordinal_position")]
    assert columns == ["corpus", *aggregate.PAPER_TABLE_COLUMNS]
    types = dict(rows(db, "SELECT column_name, data_type FROM information_schema.columns "
                          "WHERE table_name = 'paper_tables_clean'"))
    assert (types["score"], types["n_items"], types["headline"]) == ("DOUBLE", "BIGINT", "BOOLEAN")
    for view in ("corpus_contamination", "corpus_contamination_by_field", "contamination_effect"):
        assert rows(db, f"SELECT count(*) FROM {view}") == [(0,)]


def test_corpus_contamination_counts_and_rates(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    got = {(r["corpus"], r["benchmark"], r["task"]): r for r in dicts(db, "SELECT * FROM corpus_contamination")}
    assert set(got) == {("poetry", "aceval", "(all)"), ("poetry", "aceval", "historical_facts"),
                        ("poetry", "aceval", "geography"), ("poetry", "wyweb", "(all)"), ("poetry", "wyweb", "gjc"),
                        ("news.v2", "aceval", "(all)"), ("news.v2", "aceval", "historical_facts"),
                        ("news.v2", "aceval", "geography")}
    keys = ["n_items", "n_checked", "n_too_short", "n_contaminated", "n_input_flagged", "n_label_flagged"]
    assert [got["poetry", "aceval", "(all)"][k] for k in keys] == [6, 5, 1, 3, 2, 1]
    assert [got["poetry", "aceval", "historical_facts"][k] for k in keys] == [4, 3, 1, 2, 2, 0]
    assert [got["poetry", "aceval", "geography"][k] for k in keys] == [2, 2, 0, 1, 0, 1]
    assert [got["poetry", "wyweb", "(all)"][k] for k in keys] == [2, 2, 0, 0, 0, 0]
    assert got["poetry", "aceval", "(all)"]["rate"] == pytest.approx(3 / 5)
    assert got["poetry", "aceval", "historical_facts"]["rate"] == pytest.approx(2 / 3)
    assert got["poetry", "wyweb", "gjc"]["rate"] == 0
    assert got["poetry", "aceval", "(all)"]["mean_input_share"] == pytest.approx((0.8 + 0.8 + 0.3 + 0.1 + 0) / 5)
    assert got["poetry", "aceval", "(all)"]["mean_label_share"] == pytest.approx((0 + 0.2 + 0.6 + 0) / 4)
    assert got["poetry", "aceval", "(all)"]["threshold"] == 0.5
    assert got["poetry", "aceval", "(all)"]["corpus_version"] == "1"
    assert got["news.v2", "aceval", "(all)"]["n_contaminated"] == 0

    field = {(r["corpus"], r["benchmark"], r["task"], r["field"]): r
             for r in dicts(db, "SELECT * FROM corpus_contamination_by_field")}
    keys = ["n_with_ngrams", "n_flagged", "n_share_ge_020"]
    assert [field["poetry", "aceval", "(all)", "input"][k] for k in keys] == [5, 2, 3]
    assert [field["poetry", "aceval", "(all)", "label"][k] for k in keys] == [4, 1, 2]
    assert [field["poetry", "aceval", "historical_facts", "label"][k] for k in keys] == [2, 0, 1]
    inp, lab = field["poetry", "aceval", "(all)", "input"], field["poetry", "aceval", "(all)", "label"]
    assert (inp["rate"], inp["mean_share"], inp["median_share"]) == pytest.approx((0.4, 0.4, 0.3))
    assert (lab["rate"], lab["mean_share"], lab["median_share"]) == pytest.approx((0.25, 0.2, 0.1))


def test_clean_tables_leave_out_exactly_the_contaminated_items(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    effect = {(r["corpus"], r["benchmark"], r["table_name"], r["row_label"], r["model"]): r
              for r in dicts(db, "SELECT * FROM contamination_effect")}
    # the headline: AC-EVAL's average over its items, 3 of which poetry contaminates
    for model in ("m1", "m2"):
        row = effect["poetry", "aceval", "average", "average", model]
        assert (row["n_items_all"], row["n_items_clean"]) == (6, 6 - len(CONTAMINATED))
        assert row["headline"]
    m1 = effect["poetry", "aceval", "average", "average", "m1"]
    # all: mean over tasks of (2/4, 1/2) = 50; clean: historical_facts 2, 3 and geography 1, all wrong
    assert (m1["score_all"], m1["score_clean"], m1["delta"]) == pytest.approx((50.0, 0.0, -50.0))
    m2 = effect["poetry", "aceval", "by_subject", "historical_facts", "m2"]
    assert (m2["score_all"], m2["score_clean"], m2["n_items_clean"]) == pytest.approx((75.0, 100.0, 2))
    assert m2["ci_low_clean"] <= m2["score_clean"] <= m2["ci_high_clean"]
    geo = effect["poetry", "aceval", "by_subject", "geography", "m1"]
    assert (geo["score_all"], geo["score_clean"], geo["n_items_clean"], geo["n_scored_clean"]) == (50.0, 0.0, 1, 1)
    # news contaminates nothing: its clean rows are the full ones, interval included
    for key, row in effect.items():
        if key[0] == "news.v2":
            assert (row["score_clean"], row["ci_low_clean"], row["ci_high_clean"], row["n_items_clean"]) == (
                row["score_all"], row["ci_low_all"], row["ci_high_all"], row["n_items_all"]) and row["delta"] == 0
    # wyweb: scanned by poetry (nothing contaminated: rows equal), never by news (no rows)
    assert {k[0] for k in effect if k[1] == "wyweb"} == {"poetry"}
    assert rows(db, "SELECT count(*) FROM paper_tables_clean WHERE corpus = 'news.v2' AND benchmark = 'wyweb'") == [
        (0,)]
    assert rows(db, "SELECT * EXCLUDE (corpus) FROM paper_tables_clean WHERE corpus = 'poetry' "
                    "AND benchmark = 'wyweb' ORDER BY ALL") == rows(
        db, "SELECT * FROM paper_tables WHERE benchmark = 'wyweb' ORDER BY ALL")
    # per model, every row's n_items smaller by the contaminated items it covered
    n = {(r[0], r[1], r[2]): r[3] for r in rows(
        db, "SELECT model, table_name, row_label, n_items_all - n_items_clean FROM contamination_effect "
            "WHERE corpus = 'poetry' AND benchmark = 'aceval'")}
    assert n[("m1", "by_subject", "historical_facts")] == 2 and n[("m1", "by_subject", "geography")] == 1
    assert n[("m1", "by_level", GROUP)] == n[("m2", "average", "average")] == 3


def test_clean_rows_are_aggregate_paper_tables_on_the_clean_units(lake, tmp_path):
    """Same function, same unit ids: the bootstrap weights (so the intervals) pair with paper_tables."""
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    bench = cards()["aceval"]
    with duckdb.connect(str(db), read_only=True) as con:
        params = {"benchmark": "aceval", "judge_tasks": warehouse.paper_judge_tasks(con, bench)}
        units = warehouse.units(con, ["m1", "m2"], params)
        stored = con.execute("SELECT * EXCLUDE (corpus) FROM paper_tables_clean WHERE corpus = 'poetry' "
                             "AND benchmark = 'aceval'").df()
    assert set(units["unit_id"]) >= CONTAMINATED
    expected = aggregate.paper_tables(aggregate.load_tables(bench.folder / "tables.yaml"), "aceval",
                                      units[~units["unit_id"].isin(CONTAMINATED)])
    key = ["model", "table_name", "row_label", "metric"]
    got = stored.sort_values(key).reset_index(drop=True)
    want = expected.sort_values(key).reset_index(drop=True)
    assert len(got) == len(want) > 0
    for column in ("score", "ci_low", "ci_high", "n_items", "n_scored"):
        assert got[column].astype(float).tolist() == pytest.approx(want[column].astype(float).tolist(),
                                                                   nan_ok=True), column


def touch(path: Path, step: int = 1) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000 * step))


def test_a_changed_corpus_file_reloads_that_corpus_alone(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    changed = dict(POETRY) | {"aceval/dev/historical_facts/2": ((10, 9), (5, 1))}   # now contaminated too
    path = lake / "corpus_overlap" / "poetry.parquet"
    write(path, overlap_rows("poetry", changed, version="2"), schema.CORPUS_OVERLAP)
    touch(path)
    news_before = rows(db, "SELECT * FROM paper_tables_clean WHERE corpus = 'news.v2' ORDER BY ALL")
    result = publish(db, lake, paths.SQL_DIR)
    assert result.mode == "incremental"
    assert result.reloaded == {"corpus_overlap": [(("corpus", "poetry"),)]}
    assert rows(db, "SELECT DISTINCT corpus_version FROM corpus_overlap WHERE corpus = 'poetry'") == [("2",)]
    assert rows(db, "SELECT n_items_clean FROM contamination_effect WHERE corpus = 'poetry' AND model = 'm1' "
                    "AND table_name = 'average'") == [(2,)]
    assert rows(db, "SELECT * FROM paper_tables_clean WHERE corpus = 'news.v2' ORDER BY ALL") == news_before
    whole = tmp_path / "whole.duckdb"
    assert publish(whole, lake, paths.SQL_DIR, full=True).mode == "full"
    assert all_tables(db) == all_tables(whole)


def test_an_incremental_publish_of_runs_and_corpora_gives_the_full_tables(lake, tmp_path):
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, paths.SQL_DIR)
    write_run(lake, "aceval", "m1", [(item, 1.0) for item, *_ in ACEVAL])          # m1 answered again
    write_run(lake, "aceval", "m3", [(item, 0.0) for item, *_ in ACEVAL])          # a model added
    (lake / "corpus_overlap" / "news.v2.parquet").unlink()                          # a corpus dropped
    (lake / "corpus_quarantine" / "news.v2.parquet").unlink()
    result = publish(db, lake, paths.SQL_DIR)
    assert result.mode == "incremental"
    assert result.reloaded["corpus_overlap"] == result.reloaded["corpus_quarantine"] == [(("corpus", "news.v2"),)]
    assert result.reloaded["scores"] == [(("benchmark", "aceval"), ("model", "m1")),
                                         (("benchmark", "aceval"), ("model", "m3"))]
    assert rows(db, "SELECT DISTINCT corpus FROM paper_tables_clean") == [("poetry",)]
    assert rows(db, "SELECT score_clean FROM contamination_effect WHERE model = 'm1' AND table_name = 'average'") == [
        (100.0,)]
    assert rows(db, "SELECT n_items_clean FROM contamination_effect WHERE model = 'm3' AND table_name = 'average'") == [
        (3,)]
    whole = tmp_path / "whole.duckdb"
    publish(whole, lake, paths.SQL_DIR, full=True)
    assert all_tables(db) == all_tables(whole)
