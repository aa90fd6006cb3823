"""Each rule scorer writes the details `pipeline.scoring.rules.DETAILS` declares for it, which is
what a card's tables are checked against when it loads: scored here on every card's sample items
with the gold, a letter and an empty answer."""

from __future__ import annotations

from collections import defaultdict

from conftest import ROOT

from pipeline.config import load_sources
from pipeline.ingest import parse_source
from pipeline.scoring.rules import DETAILS, SCORERS, score_response, scorer_name


def test_every_scorer_writes_exactly_the_details_it_declares():
    written: dict[str, set[str]] = defaultdict(set)
    for spec in load_sources(ROOT / "data" / "sources.yaml").values():
        for item in parse_source(spec).items:
            for text in (item["answer"] or "", "A", ""):
                written[scorer_name(item)] |= set(score_response(item, text)["details"])
    assert set(DETAILS) == set(SCORERS)
    assert set(written) == set(SCORERS), "a scorer no sample item is routed to"
    assert {name: keys for name, keys in written.items() if keys != DETAILS[name]} == {}
