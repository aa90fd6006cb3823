"""AC-EVAL: the official submission file for the test split."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, upstream

from pipeline.benchmarks.aceval.adapter import SUBJECTS, submission
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source


def test_submission_shape_on_the_samples():
    items = parse_source(SourceSpec("aceval", ROOT / "data" / "samples" / "aceval", "sample")).items
    predictions = {i["item_id"]: "b" for i in items}          # dev rows are skipped, letters upper-cased
    predictions["aceval/test/translation/0"] = "未匹配到"        # an unparsable answer is kept as given
    sub = submission(predictions)
    assert sub == {"historical_facts": {"0": "B", "1": "B"}, "translation": {"0": "未匹配到"}}
    assert json.loads(json.dumps(sub, ensure_ascii=False)) == sub


def test_submission_orders_subjects_and_rows():
    sub = submission([("aceval/test/poetry_appreciation/10", "C"), ("aceval/test/poetry_appreciation/2", "A"),
                      ("aceval/test/geography/0", "D")])
    assert list(sub) == ["geography", "poetry_appreciation"] and list(sub["poetry_appreciation"]) == ["2", "10"]
    with pytest.raises(ValueError, match="not an AC-EVAL test item id"):
        submission({"wenmind/test/x/1": "A"})


def test_submission_matches_the_official_example_shape():
    example = json.loads(upstream("aceval", "submission_example.json").read_text(encoding="utf-8"))
    assert list(example) == list(SUBJECTS)
    ours = submission({f"aceval/test/{s}/{k}": v for s, rows in example.items() for k, v in rows.items()})
    assert ours == example
