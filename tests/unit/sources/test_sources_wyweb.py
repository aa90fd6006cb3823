"""WYWEB: every task's format on wenheng's sample files, and the choices made in verbalising them."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from conftest import ROOT

from pipeline.config import SourceSpec
from pipeline.ingest import parse_source

SAMPLES = ROOT / "data" / "samples" / "wyweb"


def place(item) -> str:
    """Where an item sits in its file, written like a position id: wyweb/<split>/<task>/<line or
    index> (its item_id is a hash of its text; the position is only its source_locator)."""
    return f"wyweb/{item['split']}/{item['task']}/{item['source_locator'].split()[-1]}"


@pytest.fixture(scope="module")
def items():
    result = parse_source(SourceSpec("wyweb", SAMPLES, "sample"))
    assert not result.quarantine
    return {place(i): i for i in result.items}


def test_every_task_is_present_with_its_format(items):
    formats = {(i["task"], i["format"], i["task_group"]) for i in items.values()}
    assert formats == {
        ("punc", "labeling", "labeling"), ("glner", "labeling", "labeling"),
        ("gjc", "classification", "classification"), ("fspc", "classification", "classification"),
        ("tlc", "classification", "classification"), ("xuci", "classification", "classification"),
        ("wywrc", "mcq_single", "reading comprehension"), ("irc", "mcq_single", "reading comprehension"),
        ("wywmt", "translation", "translation"),
    }


def test_ids_come_from_content_and_positions_are_locators(items):
    assert {f"wyweb/dev/wywmt/{n}" for n in range(1, 5)} | {f"wyweb/dev/tlc/{n}" for n in range(1, 7)} <= set(items)
    assert items["wyweb/dev/wywmt/1"]["source_locator"] == "line 1"
    assert items["wyweb/dev/fspc/0"]["source_locator"] == "index 0"   # JSON arrays: 0-based index
    ids = [i["item_id"] for i in items.values()]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(rf"wyweb/dev/{i['task']}/[0-9a-f]{{12}}", i["item_id"]) for i in items.values())
    # the same file parsed again gives the same ids
    assert [i["item_id"] for i in parse_source(SourceSpec("wyweb", SAMPLES, "other")).items] == ids


def test_punctuation_gold_is_the_punctuated_text(items):
    punc = items["wyweb/dev/punc/1"]
    assert punc["context"] == "知者不惑仁者不忧勇者不惧"
    assert punc["answer"] == "知者不惑，仁者不忧，勇者不惧。"
    assert punc["metadata"]["marks"] == "OOO，OOO，OOO。"


def test_ner_gold_marks_books_and_other_names(items):
    ner = items["wyweb/dev/glner/1"]
    assert ner["answer"] == "[司马迁]作《史记》，[班固]作《汉书》，皆良史也。"
    assert ner["metadata"]["entities"][0] == [0, 3, "noun_other"]


def test_labels_become_lettered_options(items):
    gjc = items["wyweb/dev/gjc/3"]
    assert gjc["choices"][9] == "史藏" and gjc["answer"] == "J" and gjc["metadata"]["label"] == "史藏"
    fspc = items["wyweb/dev/fspc/4"]
    assert fspc["choices"] == ["消极", "隐含消极", "中性", "隐含积极", "积极"] and fspc["answer"] == "A"
    assert fspc["context"] == "前不见古人，后不见来者。念天地之悠悠，独怆然而涕下。"
    assert fspc["metadata"]["line_labels"]["line4"] == "negative"
    xuci = items["wyweb/dev/xuci/2"]
    assert xuci["context"] == "句一：青，取之于蓝，而青【于】蓝。\n句二：冰，水为之，而寒【于】水。"
    assert xuci["choices"] == ["相同", "不同"] and xuci["answer"] == "A"


def test_tlc_period_is_asked_and_dynasty_kept(items):
    tlc = items["wyweb/dev/tlc/4"]
    assert tlc["choices"] == ["远古", "中古", "近古"] and tlc["answer"] == "B"
    assert tlc["metadata"]["dynasty"] == "宋" and tlc["metadata"]["dynasty_answer"] == "E"
    assert len(tlc["metadata"]["dynasty_choices"]) == 7


def test_reading_comprehension(items):
    rc = items["wyweb/dev/wywrc/0"]
    assert rc["answer"] == "C" and rc["metadata"]["type_name"] == "summary and analysis" and len(rc["choices"]) == 4
    irc = items["wyweb/dev/irc/0"]
    assert irc["question"] == "守株待兔" and irc["answer"] == "C" and irc["context"].startswith("宋人有耕者")


def test_sample_options_are_clean_and_translations_single(items):
    """The samples are evaluated in full: no option is flagged for data quality, no WYWMT sentence
    has a second translation (tests/unit/benchmarks/test_wyweb_quality.py covers both)."""
    checked = [i for i in items.values() if i["task"] in ("wywrc", "irc")]
    assert checked and all(i["metadata"]["quality_flags"] == [] for i in checked)
    assert all(i["references"] == [] and "merged_rows" not in i["metadata"]
               for i in items.values() if i["task"] == "wywmt")


def test_gjc_accepts_text_then_label(tmp_path):
    (tmp_path / "gjc").mkdir()
    (tmp_path / "gjc" / "dev.tsv").write_text("高祖，沛丰邑中阳里人。\t史藏\n", encoding="utf-8")
    (item,) = parse_source(SourceSpec("wyweb", tmp_path, "v")).items
    assert item["context"] == "高祖，沛丰邑中阳里人。" and item["answer"] == "J"


def test_splits_can_be_limited(tmp_path):
    for split in ("train", "dev"):
        (tmp_path / "wywmt").mkdir(exist_ok=True)
        (tmp_path / "wywmt" / f"{split}.tsv").write_text("古文\t今译\n", encoding="utf-8")
    assert Counter(i["split"] for i in parse_source(SourceSpec("wyweb", tmp_path, "v")).items) == {"train": 1, "dev": 1}
    only_dev = parse_source(SourceSpec("wyweb", tmp_path, "v", splits=("dev",)))
    assert [place(i) for i in only_dev.items] == ["wyweb/dev/wywmt/1"]
    assert set(only_dev.raw_counts) == {"wywmt/dev.tsv"}


def test_sample_files_keep_upstream_line_endings():
    for path, crlf in [("glner/dev.jsonl", True), ("irc/dev.json", True), ("wywrc/dev.json", True),
                       ("fspc/dev.json", False), ("xuci/dev.tsv", False)]:
        data = (SAMPLES / path).read_bytes()
        assert (b"\r\n" in data) == crlf, path
    assert isinstance(json.loads((SAMPLES / "irc" / "dev.json").read_text(encoding="utf-8"))[0]["label"], int)
