"""What a paper-table row covers and what chance would score on it.

Coverage counts every official row of the evaluated split: the items asked, the items the
data-quality or duplicate policy left out and the rows quarantined at ingestion (placed by the
card's `quarantine:` layout), each not-asked row an unscored unit that the note counts. The
chance column is each item's chance level (the card's `chance:`), averaged like the score.
Synthetic units (pipeline/aggregate/), a small lake published into a warehouse (the units SQL),
the real WYWEB files (skipped without them) and CP-DUE's shipped card against its paper's Random row.
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections import Counter
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, upstream
from published_tables import CPDUE_TABLE2

from pipeline import schema
from pipeline.aggregate import (
    CardTables,
    TableSpec,
    item_stats,
    load_tables,
    paper_tables,
    place_quarantine,
    unit_chance,
)
from pipeline.benchmarks import cards
from pipeline.warehouse import publish
from resources.lake import to_arrow


def _units(rows):
    base = {"model": "m", "variant": "original", "setting": "s", "split": "dev", "group": None, "part": None,
            "details": {}, "task": "t", "task_group": "g", "domain": None, "capability": None}
    frame = pd.DataFrame([{**base, **r} for r in rows])
    if "unit_id" not in frame:
        frame["unit_id"] = [f"u{i}" for i in range(len(frame))]
    return frame


def _tables(*specs, **kw) -> CardTables:
    return CardTables(tuple(specs), kw.get("task_metrics", {}), {}, kw.get("row_order", {}),
                      chance=kw.get("chance", {}), notes=kw.get("notes", {}))


def _card(name: str) -> CardTables:
    return load_tables(cards()[name].folder / "tables.yaml")


def _isnull(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


# ---- synthetic units -------------------------------------------------------------------------

def test_rows_not_asked_count_in_n_items_not_in_n_scored_and_the_note_says_why():
    rows = ([{"score": 1.0}] * 3 + [{"score": 0.0}]
            + [{"score": None, "not_asked": "data-quality (empty_option)"},
               {"score": None, "not_asked": "quarantined"}, {"score": None, "not_asked": "quarantined"}])
    out = paper_tables(_tables(TableSpec("all", "All")), "b", _units(rows)).iloc[0]
    assert (out["score"], out["n_items"], out["n_scored"]) == (75.0, 7, 4)
    assert out["coverage"] == pytest.approx(4 / 7)
    assert out["note"] == ("1 official row not asked: data-quality (empty_option); "
                           "2 rows quarantined at ingestion")
    several = _units([{"score": 1.0}, {"score": None, "not_asked": "duplicate"},
                      {"score": None, "not_asked": "duplicate"}, {"score": None, "not_asked": "data-quality (x)"}])
    note = paper_tables(_tables(TableSpec("all", "All")), "b", several).iloc[0]["note"]
    assert note == "3 official rows not asked: 1 data-quality (x), 2 duplicate"


def test_without_rows_not_asked_nothing_changes():
    out = paper_tables(_tables(TableSpec("all", "All")), "b", _units([{"score": 1.0}, {"score": 0.0}])).iloc[0]
    assert (out["n_items"], out["n_scored"], out["coverage"], out["note"]) == (2, 2, 1.0, None)


def test_a_row_not_asked_that_no_task_holds_counts_in_the_total_but_is_not_a_group_of_a_mean():
    rows = ([{"task": "a", "score": 1.0}, {"task": "b", "score": 0.0}]
            + [{"task": None, "score": None, "not_asked": "quarantined"}])
    units = _units(rows)
    average = paper_tables(_tables(TableSpec("avg", "A", mean_of=("task",))), "b", units).iloc[0]
    assert (average["score"], average["n_items"], average["n_scored"]) == (50.0, 3, 2)
    # a task whose only rows were quarantined is a group with nothing scored: no average
    units = _units(rows[:2] + [{"task": "c", "score": None, "not_asked": "quarantined"}])
    average = paper_tables(_tables(TableSpec("avg", "A", mean_of=("task",))), "b", units).iloc[0]
    assert _isnull(average["score"]) and average["n_items"] == 3 and "no scored items in: c" in average["note"]
    by_task = paper_tables(_tables(TableSpec("t", "T", rows="task")), "b", units)
    assert list(zip(by_task["row_label"], by_task["n_items"], by_task["coverage"])) == [
        ("a", 1, 1.0), ("b", 1, 1.0), ("c", 1, 0.0)]


def test_card_notes_name_what_the_card_changed_with_its_merged_rows():
    notes = {"mt": "MT: {merged_rows} rows merged as references", "cls": "labels simplified"}
    rows = [{"task": "mt", "score": 1.0, "merged_rows": 2}, {"task": "mt", "score": 0.0, "merged_rows": 1},
            {"task": "cls", "score": 1.0, "merged_rows": 0}]
    out = paper_tables(_tables(TableSpec("t", "T", rows="task"), notes=notes), "b", _units(rows))
    note = dict(zip(out["row_label"], out["note"]))
    assert note == {"cls": "labels simplified", "mt": "MT: 3 rows merged as references"}
    # nothing merged: the merged-rows note is left out
    plain = paper_tables(_tables(TableSpec("t", "T"), notes=notes), "b",
                         _units([{"task": "mt", "score": 1.0, "merged_rows": 0}])).iloc[0]
    assert plain["note"] is None


def test_chance_is_the_mean_items_chance_nested_like_the_score_and_null_when_any_item_has_none():
    chance = {"mcq_single": "options", "classification": "labels"}
    rows = ([{"task": "a", "task_group": "L1", "format": "mcq_single", "n_options": 4, "score": 1.0}] * 3
            + [{"task": "b", "task_group": "L1", "format": "mcq_single", "n_options": 2, "score": 1.0}]
            + [{"task": "c", "task_group": "L2", "format": "classification", "n_labels": 5, "score": 0.0}] * 2)
    units = _units(rows)
    micro = paper_tables(_tables(TableSpec("all", "All"), chance=chance), "b", units).iloc[0]
    assert micro["chance"] == pytest.approx(100 * (3 / 4 + 1 / 2 + 2 / 5) / 6)
    nested = paper_tables(_tables(TableSpec("avg", "A", mean_of=("task_group", "task")), chance=chance),
                          "b", units).iloc[0]
    assert nested["chance"] == pytest.approx(((25 + 50) / 2 + 20) / 2)
    # a generation item has no chance level: neither has any row holding it
    with_generation = _units(rows + [{"task": "d", "task_group": "L2", "format": "generation", "score": 0.5}])
    out = paper_tables(_tables(TableSpec("t", "T", rows="task"), TableSpec("all", "All"), chance=chance),
                       "b", with_generation)
    by_label = dict(zip(out["row_label"], out["chance"]))
    assert by_label["a"] == 25.0 and by_label["b"] == 50.0 and by_label["c"] == 20.0
    assert _isnull(by_label["d"]) and _isnull(by_label["all"])
    # rows not asked have no say in it
    not_asked = _units(rows[:1] + [{"task": "a", "format": None, "score": None, "not_asked": "quarantined"}])
    assert paper_tables(_tables(TableSpec("all", "All"), chance=chance), "b", not_asked).iloc[0]["chance"] == 25.0


def test_chance_of_several_questions_at_once_and_of_groups_is_the_product():
    tables = CardTables((), {}, {}, {}, chance={"mcq_single": "options", "x": "none"})
    units = _units([{"task": "AU", "format": "mcq_single", "n_options": 4, "n_questions": 3},
                    {"task": "CK", "format": "mcq_single", "n_options": 3, "n_questions": 1},
                    {"task": "x", "format": "mcq_single", "n_options": 3},
                    {"task": "y", "format": "generation", "n_options": None}])
    whole, each = unit_chance(tables, units)
    assert whole == [pytest.approx(1 / 64), pytest.approx(1 / 3), None, None]
    assert each == [pytest.approx(1 / 4), pytest.approx(1 / 3), None, None]
    # units without the columns (a card's own units) have no chance level
    assert unit_chance(tables, _units([{"task": "AU"}])) == ([None], [None])


# ---- where a quarantined row belongs ---------------------------------------------------------

def test_the_shipped_layouts_place_quarantined_rows_in_their_split_and_task():
    def place(card, source_file, raw="", tasks=("xuci", "geography", "AU", "OQ", "ACRC", "诗句")):
        rows = [{"benchmark": card, "source_file": source_file, "source_locator": "line 3", "raw": raw}]
        (placed,) = place_quarantine(_card(card).quarantine, rows, set(tasks))
        return placed["split"], placed["task"]

    assert place("wyweb", "xuci/dev.tsv") == ("dev", "xuci")
    assert place("wyweb", "xuci/train.tsv") == ("train", "xuci")
    assert place("wyweb", "nosuch/dev.tsv") == ("dev", None)        # not one of the benchmark's tasks
    assert place("aceval", "test/geography.csv") == ("test", "geography")
    assert place("fuxi", "test.jsonl", '{"id": 1, "task": "ACRC"}') == ("test", "ACRC")
    assert place("fuxi", "test.jsonl", "not json") == ("test", None)
    assert place("wenmind", "WenMind_ver1.json", '{"fine_grained_task_en": "诗句"}') == ("test", "诗句")
    # CP-DUE: an AU group's three rows are one unit (one item), OQ's best and worst two
    rows = [{"benchmark": "cpdue", "source_file": "test.jsonl", "source_locator": f"line {n}",
             "raw": f'{{"task": "{task}", "group": "{group}", "part": "{part}"}}'}
            for n, (task, group, part) in enumerate([("AU", "au-1", "figure"), ("AU", "au-1", "source"),
                                                     ("AU", "au-1", "meaning"), ("OQ", "oq-1", "best"),
                                                     ("OQ", "oq-1", "worst")])]
    placed = place_quarantine(_card("cpdue").quarantine, rows, {"AU", "OQ"})
    assert [(p["task"], p["group"], p["part"]) for p in placed] == [
        ("AU", "au-1", "figure"), ("OQ", "oq-1", "best"), ("OQ", "oq-1", "worst")]


# ---- through the warehouse: the units SQL ----------------------------------------------------

VARIANT, SETTING = "original", "zero_shot"


def _write(path: Path, rows: list[dict], table_schema) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_arrow(schema.to_frame(rows, table_schema), table_schema), path)


def _lake(lake: Path, bench: str, items: list[dict], asked: set[str], scores: dict[str, tuple[float, dict]],
          quarantine: list[dict] = (), clusters: list[dict] = (), model: str = "m") -> Path:
    """A benchmark's lake partitions: its items, the prompts of the items `asked`, one model's
    response and score to each, its quarantine rows and dedup clusters."""
    keep = set(schema.ITEMS.names)
    _write(lake / "items" / f"{bench}.parquet", [{k: v for k, v in it.items() if k in keep} for it in items],
           schema.ITEMS)
    prompts = [{"item_id": i, "benchmark": bench, "variant": VARIANT, "setting": SETTING,
                "messages": [{"role": "user", "content": i}], "prompt_hash": f"h-{i}"} for i in sorted(asked)]
    _write(lake / "prompts" / f"{bench}.parquet", prompts, schema.PROMPTS)
    key = {"benchmark": bench, "variant": VARIANT, "setting": SETTING, "model": model}
    _write(lake / "responses" / bench / f"{model}.parquet",
           [key | {"item_id": i, "prompt_hash": f"h-{i}", "text": "A"} for i in sorted(asked)], schema.RESPONSES)
    _write(lake / "scores" / bench / f"{model}.parquet",
           [key | {"item_id": i, "kind": "rule", "scorer": "t@1", "score": scores[i][0], "details": scores[i][1]}
            for i in sorted(asked)], schema.SCORES)
    _write(lake / "quarantine" / f"{bench}.parquet", list(quarantine), schema.QUARANTINE)
    _write(lake / "dedup_clusters" / f"{bench}.parquet", list(clusters), schema.DEDUP_CLUSTERS)
    return lake


def _published(tmp_path: Path, lake: Path) -> pd.DataFrame:
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, ROOT / "sql", tmp_path / "history")
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT * FROM paper_tables").df()


def _item(item_id: str, task: str, fmt: str = "classification", choices=("相同", "不同"), split: str = "dev",
          **metadata) -> dict:
    return {"item_id": item_id, "benchmark": "wyweb", "source_version": "t", "split": split, "task": task,
            "task_group": "nlu", "format": fmt, "context": f"context {item_id}", "question": None,
            "choices": list(choices), "answer": "A", "answer_hash": f"a-{item_id}", "metadata": metadata,
            "source_file": f"{task}/{split}.tsv", "source_locator": f"line {item_id[-1]}"}


def _row(out: pd.DataFrame, table: str, label: str) -> pd.Series:
    hit = out[(out["table_name"] == table) & (out["row_label"] == label)]
    assert len(hit) == 1, (table, label)
    return hit.iloc[0]


def _synthetic_wyweb(lake: Path, limited: bool = False) -> Path:
    options = ("甲", "乙", "丙", "丁")
    items = [_item("wyweb/dev/wywrc/1", "wywrc", "mcq_single", options, quality_flags=[]),
             _item("wyweb/dev/wywrc/2", "wywrc", "mcq_single", options, quality_flags=[]),
             _item("wyweb/dev/wywrc/3", "wywrc", "mcq_single", ("甲", "", "丙", "丁"), quality_flags=["empty_option"]),
             _item("wyweb/dev/xuci/1", "xuci"), _item("wyweb/dev/xuci/2", "xuci"),
             # a copy of xuci/1, gold included: `duplicates: drop` left it out
             {**_item("wyweb/dev/xuci/3", "xuci"), "answer_hash": "a-wyweb/dev/xuci/1"},
             _item("wyweb/train/xuci/1", "xuci", split="train"),
             _item("wyweb/dev/wywmt/1", "wywmt", "translation", (), merged_rows=[{"source_locator": "line 9"}])]
    asked = {"wyweb/dev/wywrc/1", "wyweb/dev/wywrc/2", "wyweb/dev/xuci/1", "wyweb/dev/xuci/2", "wyweb/dev/wywmt/1"}
    if limited:   # a sample: an item no policy left out is not asked either
        asked.discard("wyweb/dev/xuci/2")
    translated = {"bleu_stats": item_stats("bleu", "今译", ["今译"]), "chrf_stats": item_stats("chrf", "今译", ["今译"])}
    scores = {i: (1.0, translated if "wywmt" in i else {}) for i in asked}
    quarantine = [{"benchmark": "wyweb", "source_file": "xuci/dev.tsv", "source_locator": "line 75",
                   "reason": "span covers punctuation", "raw": "a\tb\t1, 1\t2, 2\tt"},
                  {"benchmark": "wyweb", "source_file": "xuci/train.tsv", "source_locator": "line 50",
                   "reason": "span covers punctuation", "raw": "a\tb\t1, 1\t2, 2\tt"}]
    clusters = [{"item_id": i, "benchmark": "wyweb", "cluster_id": "wyweb/dev/xuci/1", "cluster_size": 2,
                 "is_representative": i.endswith("/1"), "max_jaccard": 1.0, "exact_duplicate": True}
                for i in ("wyweb/dev/xuci/1", "wyweb/dev/xuci/3")]
    return _lake(lake, "wyweb", items, asked, scores, quarantine, clusters)


def test_the_warehouse_counts_policy_drops_and_quarantined_rows_of_the_evaluated_split(tmp_path):
    out = _published(tmp_path, _synthetic_wyweb(tmp_path / "lake"))
    wywrc = _row(out, "nlu", "wywrc")
    assert (wywrc["n_scored"], wywrc["n_items"]) == (2, 3) and wywrc["coverage"] == pytest.approx(2 / 3)
    assert "1 official row not asked: data-quality (empty_option)" in wywrc["note"]
    assert wywrc["chance"] == 25.0
    # xuci: 2 asked, 1 copy dropped, 1 dev row quarantined (the train row is not the evaluated split)
    xuci = _row(out, "nlu", "xuci")
    assert (xuci["n_scored"], xuci["n_items"]) == (2, 4)
    assert xuci["note"] == "1 official row not asked: duplicate; 1 row quarantined at ingestion"
    assert xuci["chance"] == 50.0
    wywmt = out[(out["table_name"] == "wywmt")]
    assert set(wywmt["metric"]) == {"corpus_bleu", "corpus_chrf"} and wywmt["chance"].isna().all()
    assert list(wywmt["note"]) == ["WYWMT references merged (1 rows): a source sentence repeated with another "
                                   "translation is one item, the first row's, scored against every translation"] * 2
    assert list(wywmt["coverage"]) == [1.0, 1.0] and list(wywmt["n_items"]) == [1, 1]
    average = _row(out, "nlu_average", "nlu_average")
    assert average["n_items"] == 7 and _isnull(average["chance"])
    # the tasks with no files are rows too, in the paper's order, with n_items 0 and a note
    nlu = out[(out["table_name"] == "nlu") & (out["model"] == out["model"].iloc[0])].sort_values("row_order")
    assert list(nlu["row_label"]) == ["punc", "glner", "gjc", "fspc", "tlc", "xuci", "wywrc", "irc"]
    punc = _row(out, "nlu", "punc")
    assert (punc["n_items"], punc["n_scored"]) == (0, 0) and _isnull(punc["score"]) and punc["metric"] == "micro_f1"
    assert punc["note"] == "no items: the paper's table has punc, but the files read hold none of its rows"


def test_a_table_whose_rows_have_no_items_at_all_is_still_shown():
    spec = TableSpec(name="mt", title="Table 3", rows="task", where={"task": ["mt"]})
    listed = TableSpec(name="nlu", title="Table 2", rows="task", where={"task": ["t", "absent"]})
    out = paper_tables(_tables(spec, listed, task_metrics={"mt": "corpus_bleu"}), "b",
                       _units([{"score": 1.0}, {"score": 0.0}]))
    mt = out[out["table_name"] == "mt"].iloc[0]
    assert (mt["row_label"], mt["metric"], mt["n_items"], mt["title"]) == ("mt", "corpus_bleu", 0, "Table 3")
    nlu = out[out["table_name"] == "nlu"].sort_values("row_order")
    assert list(nlu["row_label"]) == ["t", "absent"] and list(nlu["n_items"]) == [2, 0]


def test_a_quarantine_that_changes_alone_recomputes_its_rows_incrementally(tmp_path):
    lake = _synthetic_wyweb(tmp_path / "lake")
    db = tmp_path / "warehouse.duckdb"
    publish(db, lake, ROOT / "sql", tmp_path / "history")
    quarantined = pq.read_table(lake / "quarantine" / "wyweb.parquet").to_pylist()
    extra = {**quarantined[0], "source_locator": "line 152"}
    _write(lake / "quarantine" / "wyweb.parquet", quarantined + [extra], schema.QUARANTINE)
    result = publish(db, lake, ROOT / "sql", tmp_path / "history")
    assert result.mode == "incremental" and set(result.reloaded) == {"quarantine"}
    with duckdb.connect(str(db), read_only=True) as con:
        incremental = con.execute("SELECT * FROM paper_tables ORDER BY ALL").df()
    assert _row(incremental, "nlu", "xuci")["n_items"] == 5
    assert "2 rows quarantined at ingestion" in _row(incremental, "nlu", "xuci")["note"]
    publish(db, lake, ROOT / "sql", tmp_path / "history", full=True)
    with duckdb.connect(str(db), read_only=True) as con:
        whole = con.execute("SELECT * FROM paper_tables ORDER BY ALL").df()
    pd.testing.assert_frame_equal(incremental, whole)


def test_a_sampled_run_counts_the_items_asked_only(tmp_path):
    """WENHENG_LIMIT asks a sample: an item of the evaluated split that no policy left out is not
    asked, so the rows cover the sample, as before, and nothing is counted beside it."""
    out = _published(tmp_path, _synthetic_wyweb(tmp_path / "lake", limited=True))
    assert (_row(out, "nlu", "wywrc")["n_items"], _row(out, "nlu", "xuci")["n_items"]) == (2, 1)
    assert out["coverage"].dropna().eq(1.0).all()


# ---- the real WYWEB files --------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_wyweb(tmp_path_factory):
    from pipeline.config import SourceSpec
    from pipeline.dedup.policy import quality_items
    from pipeline.ingest import parse_source
    from pipeline.standardize import standardize

    parsed = parse_source(SourceSpec("wyweb", upstream("wyweb"), "public"))
    items, duplicated = standardize(parsed.items)
    quarantine = parsed.quarantine + duplicated
    # the default policies (quality: drop, duplicates: flag) on the evaluated split (dev)
    asked = {it["item_id"] for it in quality_items(items, {}) if it["split"] in cards()["wyweb"].eval_splits}
    scores = {i: (1.0, {"tp": 1, "fp": 0, "fn": 0}) for i in asked}
    tmp = tmp_path_factory.mktemp("wyweb")
    return items, quarantine, _published(tmp, _lake(tmp / "lake", "wyweb", items, asked, scores, quarantine))


def test_real_wywrc_is_431_of_its_432_official_rows(real_wyweb):
    items, _, out = real_wyweb
    official = sum(1 for it in items if (it["split"], it["task"]) == ("dev", "wywrc"))
    if official != 432:
        pytest.skip(f"this WYWRC dev file has {official} rows, not the published 432")
    wywrc = _row(out, "nlu", "wywrc")
    assert (wywrc["n_scored"], wywrc["n_items"]) == (431, 432)
    assert wywrc["coverage"] == pytest.approx(431 / 432)
    assert "1 official row not asked: data-quality (empty_option)" in wywrc["note"]
    assert wywrc["chance"] == 25.0


def test_real_xuci_counts_its_quarantined_dev_rows(real_wyweb):
    items, quarantine, out = real_wyweb
    dropped = Counter(q["source_file"] for q in quarantine)["xuci/dev.tsv"]
    asked = sum(1 for it in items if (it["split"], it["task"]) == ("dev", "xuci"))
    if not dropped:
        pytest.skip("this XuCi dev file has no quarantined row")
    xuci = _row(out, "nlu", "xuci")
    assert (xuci["n_scored"], xuci["n_items"]) == (asked, asked + dropped)
    assert f"{dropped} row{'s' if dropped > 1 else ''} quarantined at ingestion" in xuci["note"]
    assert xuci["chance"] == 50.0
    # the rows of tasks nothing was left out of are whole
    for task in {it["task"] for it in items} - {"xuci", "wywrc"}:
        row = _row(out, "nlu", task)
        assert row["coverage"] == 1.0 and row["n_items"] == row["n_scored"], task
        assert "official row" not in (row["note"] or "") and "quarantined" not in (row["note"] or ""), task
    assert _row(out, "nlu", "fspc")["note"].startswith("FSPC labels simplified: the whole poem's sentiment is asked")


# ---- a shipped card's chance levels: CP-DUE's Random row ---------------------------------------

def test_cpdue_chance_levels_are_its_papers_random_baseline():
    """CP-DUE's Table 2 prints a Random row; the card's chance column, from items shaped as its
    adapter makes them (CK 3 options, TH 10, ST 8, WS 4; AU three 4-option questions in one
    item; OQ best and worst of 3 poems linked by group), gives it back."""
    options = {"CK": 3, "TH": 10, "ST": 8, "WS": 4}
    base = {"model": "m", "variant": "original", "setting": "s", "split": "test", "details": {}, "score": 1.0,
            "format": "mcq_single", "task_group": None, "domain": None, "capability": None}
    units = [{**base, "unit_id": f"{task}/{i}", "task": task, "n_options": k, "n_questions": 1, "group": None,
              "part": None} for task, k in options.items() for i in range(3)]
    units += [{**base, "unit_id": "AU/1", "task": "AU", "n_options": 4, "n_questions": 3, "group": "au-1",
               "part": None, "details": {"q1": 1.0, "q2": 1.0, "q3": 1.0}}]
    units += [{**base, "unit_id": f"OQ/{g}/{part}", "task": "OQ", "n_options": 3, "n_questions": 1,
               "group": f"oq-{g}", "part": part} for g in range(2) for part in ("best", "worst")]
    out = paper_tables(_card("cpdue"), "cpdue", pd.DataFrame(units))
    chance = dict(zip(out["row_label"], out["chance"]))
    random_row = pd.read_csv(io.StringIO(CPDUE_TABLE2)).set_index("model").loc["Random"]
    assert set(chance) == set(random_row.index)
    for column, published in random_row.items():
        assert abs(chance[column] - published) <= 0.005 + 1e-9, (column, chance[column], published)
    # the card without its chance declaration: no chance levels
    bare = paper_tables(dataclasses.replace(_card("cpdue"), chance={}), "cpdue", pd.DataFrame(units))
    assert bare["chance"].isna().all()
