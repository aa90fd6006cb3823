"""The cards' published.yaml (the papers' own model rows): every file loads and places its columns
on rows the card's tables have; a broken file is one line naming what is wrong; which published
rows a table is shown with, and how they are summed up."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.benchmarks import cards
from pipeline.benchmarks.published import read_published, row_labels
from pipeline.errors import ConfigError
from pipeline.reports import published as reference

PAPERS_TABLES = {"wenmind": {"Table 3", "Table 4"}, "aceval": {"Tables 3-6"}, "wyweb": {"Table 2"},
                 "fuxi": {"Table 3", "Table 4", "Table 5", "Table 7", "Table 8"}, "cpdue": {"Table 2"}}


@pytest.mark.parametrize("name", sorted(PAPERS_TABLES))
def test_every_card_carries_its_papers_rows_on_rows_of_its_own_tables(name):
    card = cards()[name]
    assert {t.table for t in card.published.tables} == PAPERS_TABLES[name]
    rows = card.published.rows(name)
    labels = row_labels(card.tables)
    for table_name, label in set(zip(rows["table_name"], rows["row_label"])):
        assert labels[table_name] is None or label in labels[table_name], (table_name, label)
    assert rows["score"].between(0, 100).all() and not rows["score"].isna().any()
    assert set(rows["kind"]) <= {"model", "average", "human", "chance"}


def test_a_headline_row_of_each_card_has_published_models():
    """Every card's headline table is shown with its paper's models (in the paper's setting)."""
    for name, card in cards().items():
        rows = card.published.rows(name)
        headline = [t.name for t in card.tables.tables if t.headline]
        assert set(rows.loc[rows["kind"] == "model", "table_name"]) & set(headline), name


CSV = "model,overall,T1\nA,50.0,40.0\nB,,30.0\n"


def _write(tmp_path, body: str):
    path = tmp_path / "published.yaml"
    path.write_text("paper: P paper\ntables:\n" + body, encoding="utf-8")
    return path


def _entry(columns: str, extra: str = "    setting: s\n") -> str:
    rows = "".join(f"      {line}\n" for line in CSV.splitlines())
    return f"  - table: Table 1\n{extra}    split: test\n    columns: {columns}\n    rows: |\n{rows}"


TABLES = {"overall": {"overall"}, "by_task": {"T1", "T2"}}


def test_a_good_file_gives_long_rows_without_the_empty_cells(tmp_path):
    published = read_published(_write(tmp_path, _entry("{overall: overall/overall, T1: by_task/T1}")), TABLES)
    rows = published.rows("b").sort_values(["model", "row_label"])
    assert list(zip(rows["model"], rows["row_label"], rows["score"])) == [
        ("A", "T1", 40.0), ("A", "overall", 50.0), ("B", "T1", 30.0)]
    assert set(rows["source"]) == {"P paper, Table 1"} and set(rows["setting"]) == {"s"}
    assert published.csv("Table 1") == CSV


@pytest.mark.parametrize("columns, extra, says", [
    ("{overall: overall/overall}", "    setting: s\n", "Table 1: `columns` must name every CSV column"),
    ("{overall: overall/overall, T1: by_task/T9}", "    setting: s\n", "column T1: 'by_task/T9' is no row"),
    ("{overall: overall/overall, T1: nosuch/T1}", "    setting: s\n", "'nosuch/T1' is no row"),
    ("{overall: overall/overall, T1: null}", "", "give `setting`"),
    ("{overall: overall/overall, T1: null}", "    setting: s\n    kinds: {A: alien}\n", "'alien' is not one of"),
    ("{overall: overall/overall, T1: null}", "    setting: s\n    colour: red\n", "unknown keys ['colour']"),
    ("{overall: [", "    setting: s\n", "not YAML"),
])
def test_a_broken_file_is_one_line_naming_the_file_and_the_problem(tmp_path, columns, extra, says):
    with pytest.raises(ConfigError) as err:
        read_published(_write(tmp_path, _entry(columns, extra)), TABLES)
    assert "published.yaml: " in str(err.value) and says in str(err.value)
    assert "\n" not in str(err.value)


def _published(*rows) -> pd.DataFrame:
    frame = pd.DataFrame([dict(zip(["benchmark", "table_name", "row_label", "model", "kind", "setting", "split",
                                    "score", "source"], r)) for r in rows])
    return frame.assign(paper_table=frame["source"].str.split(", ").str[-1])


def test_a_table_is_shown_with_its_setting_else_the_papers_only_one():
    pub = _published(("b", "t", "r", "A", "model", "zero", "test", 50.0, "P, T1"),
                     ("b", "t", "r", "A", "model", "five", "test", 60.0, "P, T1"),
                     ("c", "t", "r", "E", "model", "fine-tuned", "test", 70.0, "Q, T2"))
    assert list(reference.beside(pub, "b", "t", "zero")["score"]) == [50.0]
    assert reference.beside(pub, "b", "t", "cot").empty            # two other settings: none is it
    assert list(reference.beside(pub, "c", "t", "prompted")["score"]) == [70.0]   # the paper's only one
    assert reference.source_label(reference.beside(pub, "c", "t", "prompted"), "prompted", "dev") == \
        "published (Q, T2; fine-tuned, test split)"
    assert reference.beside(None, "b", "t", "zero").empty


def test_the_summary_and_the_standing_count_models_only():
    pub = _published(*[("b", "t", "r", m, k, "s", "test", s, "P, T1") for m, k, s in
                       [("A", "model", 60.0), ("B", "model", 20.0), ("C", "model", 40.0),
                        ("Average", "average", 40.0), ("Random", "chance", 25.0)]])
    assert reference.summary(pub) == {"r": "40.0 [20.0, 60.0] ·3"}
    assert reference.standing(pub, "r", "mine", 30.0) == \
        "mine 30.0 would rank 3 of 4 (next above: C 40.0; next below: B 20.0)"
    assert reference.standing(pub, "r", "mine", 99.0) == "mine 99.0 would rank 1 of 4 (next below: A 60.0)"
    assert reference.standing(pub, "r", "mine", None) is None


def test_a_score_not_comparable_to_the_paper_gets_no_rank_among_its_models():
    """A demo judge's or a rule's number in place of the paper's judge is shown (marked †), but
    `wenheng leaderboard` does not say where it would rank among the paper's models."""
    from pipeline.reports.text import standings

    pub = _published(*[("b", "t", "r", m, "model", "s", "test", s, "P, T1") for m, s in [("A", 60.0), ("B", 20.0)]])
    part = pd.DataFrame({"row_label": ["r"] * 4, "model": ["judged", "demo", "unknown", "numpy"],
                         "score": [30.0, 90.0, 40.0, 50.0], "comparable": [True, False, None, np.False_]})
    assert standings(part, pub) == ["judged 30.0 would rank 2 of 3 (next above: A 60.0; next below: B 20.0)",
                                    "unknown 40.0 would rank 2 of 3 (next above: A 60.0; next below: B 20.0)"]
    assert len(standings(part.drop(columns="comparable"), pub)) == 4
