"""A row judged where the judge's known-answer controls cannot tell right from wrong shows the
judge's measured J in every view, not a number that looks like a score; a row only partly so keeps
its score and says how much of it the J covers."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.aggregate.coverage import judge_weakness
from pipeline.compare import difference_text
from pipeline.reports.render import cell as html_cell
from pipeline.reports.text import cell as text_cell
from pipeline.rows import judge_j_text


def _row(**extra) -> pd.Series:
    base = dict(score=100.0, ci_low=100.0, ci_high=100.0, n_scored=30, n_items=30, coverage=1.0, capped=False,
                comparable=False, scored_by="judge demo", uninformative_share=None, judge_j=None)
    return pd.Series(base | extra)


def test_weakness_is_the_share_of_scored_items_and_the_best_j_among_them():
    bad = np.array([True, True, False, True])
    j = np.array([0.0, 0.25, 0.9, np.nan])
    scored = np.array([True, True, True, False])
    assert judge_weakness(bad, j, scored) == {"uninformative_share": round(2 / 3, 9),
                                              "judge_j": 0.25}
    assert judge_weakness(np.zeros(4, dtype=bool), j, scored) == {"uninformative_share": None, "judge_j": None}


def test_a_wholly_uninformative_row_shows_its_j_and_no_score():
    row = _row(uninformative_share=1.0, judge_j=0.0)
    assert text_cell(row) == "judge J 0.00† 30/30"
    html = html_cell(row.to_frame().T.itertuples(index=False).__next__())
    assert html["value"] == "" and html["ci"] == "" and html["judge"] == "judge J 0.00"


def test_a_partly_uninformative_row_keeps_its_score_and_says_the_share():
    row = _row(score=45.0, ci_low=30.0, ci_high=60.0, uninformative_share=0.4, judge_j=0.12)
    assert text_cell(row) == "45.0† [30.0, 60.0] 30/30 (judge J 0.12 on 40%)"
    assert text_cell(_row(comparable=True)) == "100.0 [100.0, 100.0] 30/30"   # no judge problem: as before
    assert judge_j_text(None, None) is None and judge_j_text(1.0, None) == "judge J –"


def test_a_comparison_names_each_side_whose_judge_is_uninformative():
    r = pd.Series({"difference": 0.0, "comparable": False, "n_scored_a": 30, "n_scored_b": 30,
                   "judge": "a: judge J 0.00; b: judge J 0.00"})
    assert difference_text(r) == "0.0† (a: judge J 0.00; b: judge J 0.00)"
