"""Corrections files applied to standardized items, and diffs between two versions of a source."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT

from pipeline.config import load_sources
from pipeline.corrections import (
    CorrectionsError,
    apply_corrections,
    correct,
    diff_versions,
    load_corrections,
)
from pipeline.schema import CORRECTIONS_AUDIT, to_frame
from pipeline.sources.ingest import parse_source
from pipeline.standardize import standardize

IRC = "wyweb/dev/irc/2"


@pytest.fixture
def items():
    spec = load_sources(ROOT / "data" / "sources.yaml")["wyweb"]
    standardized, _ = standardize(parse_source(spec).items)
    return standardized


def test_shipped_corrections_apply_to_the_sample(items):
    corrected, audit = correct(items, ROOT / "data" / "corrections")
    (row,) = audit
    assert row["status"] == "applied" and row["item_id"] == IRC and row["field"] == "context"
    assert row["origin"] == "data/corrections/wyweb.yaml:1" and row["reason"] and row["date"]
    before = next(i for i in items if i["item_id"] == IRC)
    after = next(i for i in corrected if i["item_id"] == IRC)
    assert "<div" in before["context"] and after["context"] == "蛇固无足，子安能为之足？"
    assert after["content_hash"] != before["content_hash"] and after["answer_hash"] == before["answer_hash"]
    assert json.loads(row["old"]) == before["context"]
    to_frame(audit, CORRECTIONS_AUDIT)   # the audit rows have exactly the schema's columns


def test_stale_unknown_and_chained_corrections(tmp_path, items):
    (tmp_path / "a.csv").write_text(
        "item_id,field,old,new,reason,date\n"
        "wyweb/dev/tlc/1,answer,A,B,wrong period,2026-01-02\n"
        "wyweb/dev/tlc/1,answer,B,C,second thoughts,2026-01-03\n"            # sees the first one's result
        "wyweb/dev/tlc/2,answer,C,A,already changed,2026-01-02\n"            # old no longer matches
        "wyweb/dev/tlc/99,answer,A,B,no such item,2026-01-02\n"
        'wyweb/dev/tlc/3,choices,"[""远古"", ""中古"", ""近古""]","[""上古"", ""中古"", ""近古""]",rename,2026-01-04\n',
        encoding="utf-8")
    corrected, audit = apply_corrections(items, load_corrections(tmp_path))
    assert [(a["item_id"], a["status"]) for a in audit] == [
        ("wyweb/dev/tlc/1", "applied"), ("wyweb/dev/tlc/1", "applied"), ("wyweb/dev/tlc/2", "stale"),
        ("wyweb/dev/tlc/99", "unknown_item"), ("wyweb/dev/tlc/3", "applied")]
    assert audit[2]["reason"].startswith("already changed [not applied: the item's answer is now \"A\"")
    assert audit[3]["benchmark"] == "wyweb" and audit[0]["origin"].endswith("a.csv:2")
    by_id = {i["item_id"]: i for i in corrected}
    assert by_id["wyweb/dev/tlc/1"]["answer"] == "C" and by_id["wyweb/dev/tlc/3"]["choices"][0] == "上古"
    original = {i["item_id"]: i for i in items}
    assert original["wyweb/dev/tlc/1"]["answer"] == "A"              # inputs are not modified
    assert by_id["wyweb/dev/tlc/1"]["answer_hash"] != original["wyweb/dev/tlc/1"]["answer_hash"]
    assert by_id["wyweb/dev/tlc/3"]["content_hash"] != original["wyweb/dev/tlc/3"]["content_hash"]
    assert by_id["wyweb/dev/tlc/2"] == original["wyweb/dev/tlc/2"]
    to_frame(audit, CORRECTIONS_AUDIT)


def test_a_correction_goes_stale_once_upstream_changes(items):
    (correction,) = load_corrections(ROOT / "data" / "corrections")
    fixed_upstream = [dict(i, context="蛇固无足，子安能为之足？") if i["item_id"] == IRC else i for i in items]
    corrected, (row,) = apply_corrections(fixed_upstream, [correction])
    assert row["status"] == "stale" and corrected == fixed_upstream


@pytest.mark.parametrize("text, message", [
    ("item_id,field,old,new,reason\n", "missing columns"),
    ("item_id,field,old,new,reason,date\nwyweb/dev/tlc/1,metadata,a,b,r,2026-01-01\n", "cannot be corrected"),
    ("item_id,field,old,new,reason,date\nwyweb/dev/tlc/1,answer,A,B,,2026-01-01\n", "needs a reason"),
    ("item_id,field,old,new,reason,date\nwyweb/dev/tlc/1,answer,A,B,r,yesterday\n", "is not YYYY-MM-DD"),
    ("item_id,field,old,new,reason,date\ntlc/1,answer,A,B,r,2026-01-01\n", "benchmark/split/task/key"),
    ("item_id,field,old,new,reason,date\nwyweb/dev/tlc/1,choices,A,B,r,2026-01-01\n", "JSON array"),
])
def test_malformed_corrections_files_say_where(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text, encoding="utf-8")
    with pytest.raises(CorrectionsError, match=message):
        load_corrections(tmp_path)


def test_yaml_lists_and_nulls(tmp_path, items):
    (tmp_path / "c.yaml").write_text(
        "- item_id: wyweb/dev/wywrc/0\n  field: choices\n  old: [管宁看见地上的金子，把它当作瓦石一样，照旧锄菜。,"
        " 华歆拾起金子又扔掉，可见他对金子并非毫不在意。, 有显贵乘车从门前经过，管宁和华歆都放下书出去观看。,"
        " 管宁割开席子分开坐，表示不再把华歆当作朋友。]\n"
        "  new: [甲, 乙, 丙, 丁]\n  reason: test\n  date: 2026-01-01\n"
        "- item_id: wyweb/dev/tlc/1\n  field: context\n  old: 天时不如地利，地利不如人和。\n  new:\n"
        "  reason: test\n  date: 2026-01-01\n", encoding="utf-8")
    corrected, audit = apply_corrections(items, load_corrections(tmp_path))
    assert [a["status"] for a in audit] == ["applied", "applied"] and audit[1]["new"] == "null"
    assert next(i for i in corrected if i["item_id"] == "wyweb/dev/tlc/1")["context"] is None
    assert load_corrections(tmp_path / "missing") == []


def test_diff_versions_reports_changed_fields():
    v1 = [{"item_id": "x/dev/t/1", "benchmark": "x", "source_version": "v1", "question": "问", "context": None,
           "choices": ["甲", "乙"], "answer": "A", "references": []},
          {"item_id": "x/dev/t/2", "benchmark": "x", "source_version": "v1", "question": "问二", "context": None,
           "choices": [], "answer": "答", "references": []}]
    v2 = [dict(v1[0], source_version="v2", choices=np.array(["甲", "丙"]), answer="B"),
          dict(v1[1], source_version="v2", choices=np.array([], dtype=object)),
          {"item_id": "x/dev/t/3", "source_version": "v2", "question": "新"}]
    rows = diff_versions(v1, v2)
    assert [(r["item_id"], r["field"], r["old"], r["new"]) for r in rows] == [
        ("x/dev/t/1", "choices", '["甲", "乙"]', '["甲", "丙"]'), ("x/dev/t/1", "answer", '"A"', '"B"')]
    assert {r["status"] for r in rows} == {"changed_upstream"} and rows[0]["origin"] == "upstream v1 -> v2"
    to_frame(rows, CORRECTIONS_AUDIT)


def test_diff_versions_on_two_source_versions(tmp_path):
    """Two versions of a WYWMT file: the line keys match items, so only the edited one is reported."""
    from pipeline.config import SourceSpec

    folder = tmp_path / "v1" / "wywmt"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").write_text("古文一\t今译一\n古文二\t今译二\n", encoding="utf-8")
    v1 = parse_source(SourceSpec("wyweb", tmp_path / "v1", "v1")).items
    folder = tmp_path / "v2" / "wywmt"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").write_text("古文一\t今译一\n古文二\t新的今译二\n古文三\t今译三\n", encoding="utf-8")
    v2 = parse_source(SourceSpec("wyweb", tmp_path / "v2", "v2")).items
    (row,) = diff_versions(standardize(v1)[0], standardize(v2)[0])
    assert (row["item_id"], row["field"], row["new"]) == ("wyweb/dev/wywmt/2", "answer", '"新的今译二"')


def test_build_items_routes_every_raw_row(tmp_path):
    """Adapter rejects and repeated ids end in quarantine, corrections apply, and a new source
    version is diffed against the previous items: one plain call, no Dagster."""
    from pipeline.standardize import build_items

    def raw(item_id, question, version="v2", reason=None):
        return {"item_id": item_id, "benchmark": "aceval", "source_version": version, "task": "t",
                "context": None, "question": question, "choices": ["甲", "乙"], "answer": "A", "references": [],
                "metadata": "{}", "source_file": "f.csv", "source_locator": item_id, "reason": reason, "raw": None}

    (tmp_path / "fix.yaml").write_text(
        "corrections:\n  - {item_id: aceval/dev/t/1, field: answer, old: A, new: B, reason: wrong key, date: 2026-11-22}\n",
        encoding="utf-8")
    rows = [raw("aceval/dev/t/0", "问一"), raw("aceval/dev/t/1", "问二"), raw("aceval/dev/t/1", "问二"),
            raw("aceval/dev/t/2", None, reason="empty question")]
    previous = [dict(raw("aceval/dev/t/0", "旧问一", version="v1"), script="neutral")]
    items, quarantine, audit = build_items(rows, tmp_path, previous)
    assert [i["item_id"] for i in items] == ["aceval/dev/t/0", "aceval/dev/t/1"] and items[1]["answer"] == "B"
    assert sorted(q["reason"] for q in quarantine) == ["duplicate item_id aceval/dev/t/1", "empty question"]
    assert sorted((a["item_id"], a["status"]) for a in audit) == [
        ("aceval/dev/t/0", "changed_upstream"), ("aceval/dev/t/1", "applied")]
