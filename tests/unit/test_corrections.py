"""Corrections files applied to standardized items, and diffs between two versions of a source."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT

from pipeline.config import SourceSpec, load_sources
from pipeline.corrections import (
    CorrectionsError,
    apply_corrections,
    correct,
    diff_versions,
    load_corrections,
)
from pipeline.ingest import parse_source
from pipeline.schema import CORRECTIONS_AUDIT, to_frame
from pipeline.standardize import standardize


def at(items, task, locator):
    """The id of the sample item of `task` at `locator` (WYWEB ids are content hashes)."""
    (item_id,) = [i["item_id"] for i in items if i["task"] == task and i["source_locator"] == locator]
    return item_id


@pytest.fixture
def items():
    spec = load_sources(ROOT / "data" / "sources.yaml")["wyweb"]
    standardized, _ = standardize(parse_source(spec).items)
    return standardized


@pytest.fixture
def tlc(items):
    """The ids of the sample TLC file's lines 1-3."""
    return [at(items, "tlc", f"line {n}") for n in (1, 2, 3)]


SAMPLE_SOURCES = {"wyweb": SourceSpec("wyweb", ROOT / "data" / "samples" / "wyweb", "sample-1")}


def test_shipped_corrections_apply_to_the_sample(items):
    irc = at(items, "irc", "index 2")
    corrected, audit = correct(items, ROOT / "data" / "corrections", SAMPLE_SOURCES)
    (row,) = audit
    assert row["status"] == "applied" and row["item_id"] == irc and row["field"] == "context"
    assert row["origin"] == "data/corrections/wyweb.yaml:1" and row["reason"] and row["date"]
    before = next(i for i in items if i["item_id"] == irc)
    after = next(i for i in corrected if i["item_id"] == irc)
    assert "<div" in before["context"] and after["context"] == "蛇固无足，子安能为之足？"
    assert after["content_hash"] != before["content_hash"] and after["answer_hash"] == before["answer_hash"]
    assert json.loads(row["old"]) == before["context"]
    to_frame(audit, CORRECTIONS_AUDIT)   # the audit rows have exactly the schema's columns


def test_the_shipped_correction_is_out_of_scope_for_other_sources(items, tmp_path):
    """Scoped to the sample file's version and path: another release, or the same text at another
    path, is reported out_of_scope and left alone (not stale, not applied)."""
    (correction,) = load_corrections(ROOT / "data" / "corrections")
    other_version = [dict(i, source_version="34bb6fd") for i in items]
    corrected, (row,) = apply_corrections(other_version, [correction], SAMPLE_SOURCES)
    assert row["status"] == "out_of_scope" and corrected == other_version
    assert "scoped to version sample-1; the source is version 34bb6fd" in row["reason"]
    elsewhere = {"wyweb": SourceSpec("wyweb", tmp_path / "WYWEB" / "data" / "tasks", "sample-1")}
    corrected, (row,) = apply_corrections(items, [correction], sources=elsewhere)
    assert row["status"] == "out_of_scope" and "scoped to path data/samples/wyweb" in row["reason"]
    assert corrected == items
    assert apply_corrections(items, [correction], sources=SAMPLE_SOURCES)[1][0]["status"] == "applied"
    (row,) = apply_corrections(items, [correction])[1]     # no source known: its path cannot match
    assert row["status"] == "out_of_scope" and "the source's path is not known" in row["reason"]


def test_scopes_per_file_and_per_row(tmp_path, items, tlc):
    (tmp_path / "scoped.yaml").write_text(
        "benchmark: wyweb\nversion: [sample-1, sample-2]\ncorrections:\n"
        f"  - {{item_id: {tlc[0]}, field: answer, old: A, new: B, reason: in scope, date: 2026-01-02}}\n"
        f"  - {{item_id: {tlc[1]}, field: answer, old: A, new: B, reason: row scope wins, date: 2026-01-02,"
        " version: v9}\n"
        f"  - {{item_id: {tlc[2]}, field: answer, old: B, new: C, reason: glob, date: 2026-01-02,"
        " path: '*/samples/wy*'}\n", encoding="utf-8")
    (tmp_path / "scoped.csv").write_text(
        "item_id,field,old,new,reason,date,version,path\n"
        f"{tlc[0]},context,x,y,csv scope,2026-01-02,v2,\n"
        f"{tlc[1]},answer,A,C,no scope,2026-01-02,,\n", encoding="utf-8")
    corrected, audit = apply_corrections(items, load_corrections(tmp_path), SAMPLE_SOURCES)
    # files in name order: scoped.csv, then scoped.yaml
    assert [(a["item_id"], a["status"]) for a in audit] == [
        (tlc[0], "out_of_scope"), (tlc[1], "applied"),
        (tlc[0], "applied"), (tlc[1], "out_of_scope"), (tlc[2], "applied")]
    assert "scoped to version v9; the source is version sample-1" in audit[3]["reason"]
    by_id = {i["item_id"]: i for i in corrected}
    assert [by_id[i]["answer"] for i in tlc] == ["B", "C", "C"]


def test_stale_unknown_and_chained_corrections(tmp_path, items, tlc):
    (tmp_path / "a.csv").write_text(
        "item_id,field,old,new,reason,date\n"
        f"{tlc[0]},answer,A,B,wrong period,2026-01-02\n"
        f"{tlc[0]},answer,B,C,second thoughts,2026-01-03\n"            # sees the first one's result
        f"{tlc[1]},answer,C,A,already changed,2026-01-02\n"            # old no longer matches
        "wyweb/dev/tlc/99,answer,A,B,no such item,2026-01-02\n"
        f'{tlc[2]},choices,"[""远古"", ""中古"", ""近古""]","[""上古"", ""中古"", ""近古""]",rename,2026-01-04\n',
        encoding="utf-8")
    corrected, audit = apply_corrections(items, load_corrections(tmp_path))
    assert [(a["item_id"], a["status"]) for a in audit] == [
        (tlc[0], "applied"), (tlc[0], "applied"), (tlc[1], "stale"),
        ("wyweb/dev/tlc/99", "unknown_item"), (tlc[2], "applied")]
    assert audit[2]["reason"].startswith("already changed [not applied: the item's answer is now \"A\"")
    assert audit[3]["benchmark"] == "wyweb" and audit[0]["origin"].endswith("a.csv:2")
    by_id = {i["item_id"]: i for i in corrected}
    assert by_id[tlc[0]]["answer"] == "C" and by_id[tlc[2]]["choices"][0] == "上古"
    original = {i["item_id"]: i for i in items}
    assert original[tlc[0]]["answer"] == "A"              # inputs are not modified
    assert by_id[tlc[0]]["answer_hash"] != original[tlc[0]]["answer_hash"]
    assert by_id[tlc[2]]["content_hash"] != original[tlc[2]]["content_hash"]
    assert by_id[tlc[1]] == original[tlc[1]]
    to_frame(audit, CORRECTIONS_AUDIT)


def test_a_correction_goes_stale_once_upstream_changes(items):
    (correction,) = load_corrections(ROOT / "data" / "corrections")
    fixed_upstream = [dict(i, context="蛇固无足，子安能为之足？") if i["item_id"] == correction.item_id else i
                      for i in items]
    corrected, (row,) = apply_corrections(fixed_upstream, [correction], SAMPLE_SOURCES)
    assert row["status"] == "stale" and corrected == fixed_upstream


HEADER = "item_id,field,old,new,reason,date\n"


@pytest.mark.parametrize("name, text, message", [
    ("bad.csv", "item_id,field,old,new,reason\n", "missing columns"),
    ("bad.csv", HEADER + "wyweb/dev/tlc/1,metadata,a,b,r,2026-01-01\n", "cannot be corrected"),
    ("bad.csv", HEADER + "wyweb/dev/tlc/1,answer,A,B,,2026-01-01\n", "needs a reason"),
    ("bad.csv", HEADER + "wyweb/dev/tlc/1,answer,A,B,r,yesterday\n", "is not YYYY-MM-DD"),
    ("bad.csv", HEADER + "tlc/1,answer,A,B,r,2026-01-01\n", "benchmark/split/task/key"),
    ("bad.csv", HEADER + "wyweb/dev/tlc/1,choices,A,B,r,2026-01-01\n", "JSON array"),
    ("bad.csv", "item_id,field,old,new,reason,date,release\n", r"unknown columns \['release'\]"),
    ("bad.csv", HEADER + "nosuch/dev/t/1,answer,A,B,r,2026-01-01\n", "names benchmark 'nosuch'"),
    ("bad.yaml", "versions: v1\ncorrections: []\n", r"unknown keys \['versions'\]"),
    ("bad.yaml", "- {item_id: wyweb/dev/tlc/1, field: answer, old: A, new: B, reason: r, date: 2026-01-01,"
                 " note: x}\n", r"\(bad.yaml:1\): unknown keys \['note'\]"),
    ("bad.yaml", "benchmark: aceval\ncorrections:\n  - {item_id: wyweb/dev/tlc/1, field: answer, old: A,"
                 " new: B, reason: r, date: 2026-01-01}\n", "outside the scope benchmark 'aceval'"),
    ("bad.yaml", "benchmark: wywb\ncorrections: []\n", "benchmark 'wywb' is not one of"),
    ("bad.yaml", "- {item_id: wyweb/dev/tlc/1, field: answer, old: A, new: B, reason: r, date: 2026-01-01,"
                 " version: {v: 1}}\n", "version must be a version label"),
    ("bad.yaml", "- {item_id: wyweb/dev/tlc/1, field: answer, old: A, new: B, reason: r, date: 2026-01-01,"
                 " path: []}\n", "path must be a path glob"),
])
def test_malformed_corrections_files_say_where(tmp_path, name, text, message):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(CorrectionsError, match=message) as raised:
        load_corrections(tmp_path)
    assert str(raised.value).startswith(str(tmp_path / name))


def test_every_problem_is_one_line(tmp_path):
    """All problems of all files at once, one line each, each naming its file and entry."""
    (tmp_path / "a.yaml").write_text(
        "version: [v1, {x: 1}]\ncorrections:\n"
        "  - {item_id: wyweb/dev/tlc/1, field: metadata, old: A, new: B, reason: '', date: soon}\n"
        "  - {item_id: wyweb/dev/tlc/2, field: answer, old: A, new: B, reason: r, date: 2026-01-01}\n",
        encoding="utf-8")
    (tmp_path / "b.csv").write_text("item_id,field,old,new,reason,date,when\n", encoding="utf-8")
    with pytest.raises(CorrectionsError) as raised:
        load_corrections(tmp_path)
    lines = str(raised.value).splitlines()
    assert len(lines) == 5, lines
    assert lines[0].endswith("a.yaml: version must be a version label or a list of them (got ['v1', {'x': 1}]); "
                             "quote it in YAML")                          # the file's scope, once
    assert sum("a.yaml (a.yaml:1)" in line for line in lines) == 3      # field, reason, date
    assert "b.csv: unknown columns ['when']" in lines[-1]


def test_yaml_lists_and_nulls(tmp_path, items, tlc):
    wywrc = at(items, "wywrc", "index 0")
    (tmp_path / "c.yaml").write_text(
        f"- item_id: {wywrc}\n  field: choices\n  old: [管宁看见地上的金子，把它当作瓦石一样，照旧锄菜。,"
        " 华歆拾起金子又扔掉，可见他对金子并非毫不在意。, 有显贵乘车从门前经过，管宁和华歆都放下书出去观看。,"
        " 管宁割开席子分开坐，表示不再把华歆当作朋友。]\n"
        "  new: [甲, 乙, 丙, 丁]\n  reason: test\n  date: 2026-01-01\n"
        f"- item_id: {tlc[0]}\n  field: context\n  old: 天时不如地利，地利不如人和。\n  new:\n"
        "  reason: test\n  date: 2026-01-01\n", encoding="utf-8")
    corrected, audit = apply_corrections(items, load_corrections(tmp_path))
    assert [a["status"] for a in audit] == ["applied", "applied"] and audit[1]["new"] == "null"
    assert next(i for i in corrected if i["item_id"] == tlc[0])["context"] is None
    assert load_corrections(tmp_path / "missing") == []


def test_diff_versions_reports_changed_removed_and_added_items():
    v1 = [{"item_id": "x/dev/t/1", "benchmark": "x", "source_version": "v1", "question": "问", "context": None,
           "choices": ["甲", "乙"], "answer": "A", "references": []},
          {"item_id": "x/dev/t/2", "benchmark": "x", "source_version": "v1", "question": "问二", "context": None,
           "choices": [], "answer": "答", "references": []},
          {"item_id": "x/dev/t/4", "benchmark": "x", "source_version": "v1", "question": "问四", "context": None,
           "choices": [], "answer": "答", "references": [], "source_file": "t.jsonl", "source_locator": "line 4"}]
    v2 = [dict(v1[0], source_version="v2", choices=np.array(["甲", "丙"]), answer="B"),
          dict(v1[1], source_version="v2", choices=np.array([], dtype=object)),
          {"item_id": "x/dev/t/3", "benchmark": "x", "source_version": "v2", "question": "新",
           "source_file": "t.jsonl", "source_locator": "line 3"}]
    rows = diff_versions(v1, v2)
    assert [(r["item_id"], r["field"], r["status"]) for r in rows] == [
        ("x/dev/t/1", "choices", "changed_upstream"), ("x/dev/t/1", "answer", "changed_upstream"),
        ("x/dev/t/3", None, "added_upstream"), ("x/dev/t/4", None, "removed_upstream")]
    assert [(r["old"], r["new"]) for r in rows[:2]] == [('["甲", "乙"]', '["甲", "丙"]'), ('"A"', '"B"')]
    assert rows[0]["origin"] == "upstream v1 -> v2" and rows[3]["origin"] == "upstream v1 -> v2"
    assert rows[2]["old"] is None and json.loads(rows[2]["new"])["question"] == "新"
    assert rows[2]["reason"] == "new upstream, at t.jsonl line 3"
    assert rows[3]["new"] is None and json.loads(rows[3]["old"])["question"] == "问四"
    assert rows[3]["reason"] == "no longer upstream (was at t.jsonl line 4)"
    to_frame(rows, CORRECTIONS_AUDIT)
    assert diff_versions(v1, v1) == []


def test_a_correction_is_not_an_upstream_change():
    """The previous build holds corrected items: a correction applied then, or first now, is not
    reported as a change; an upstream edit of the corrected field still is."""
    upstream = [{"item_id": "x/dev/t/1", "benchmark": "x", "source_version": "v1", "question": "问",
                 "context": None, "choices": [], "answer": "甲", "references": []}]
    corrected = [dict(upstream[0], answer="乙")]
    assert diff_versions(corrected, upstream, corrected) == []     # applied in both builds
    assert diff_versions(upstream, upstream, corrected) == []      # first applied now
    edited = [dict(upstream[0], answer="丙")]
    (row,) = diff_versions(corrected, edited, edited)
    assert (row["field"], row["old"], row["new"], row["origin"]) == (
        "answer", '"乙"', '"丙"', "upstream v1 (same version label)")


def _wyweb(root, files):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return standardize(parse_source(SourceSpec("wyweb", root, root.name)).items)[0]


TLC = "".join(f"{p}\t{d}\t{t}\n" for p, d, t in (
    ("远古", "先秦", "天时不如地利，地利不如人和。"), ("远古", "两汉", "人固有一死，或重于泰山，或轻于鸿毛。"),
    ("中古", "唐", "落霞与孤鹜齐飞，秋水共长天一色。"), ("近古", "清", "苟利国家生死以，岂因祸福避趋之。")))
WYWMT = "古文一\t今译一\n古文二\t今译二\n古文三\t今译三\n"


def test_deleting_adding_and_moving_lines_of_a_wyweb_file(tmp_path):
    """WYWEB ids come from content: deleting line 1 is one removed item and no changed field,
    adding a line is one added item, moving lines changes nothing, and an edited gold is one
    changed field of the same item."""
    v1 = _wyweb(tmp_path / "v1", {"tlc/dev.tsv": TLC, "wywmt/dev.tsv": WYWMT})
    deleted = _wyweb(tmp_path / "v2", {"tlc/dev.tsv": TLC.split("\n", 1)[1], "wywmt/dev.tsv": WYWMT})
    rows = diff_versions(v1, deleted)
    assert [(r["status"], r["field"]) for r in rows] == [("removed_upstream", None)]
    assert rows[0]["reason"] == "no longer upstream (was at tlc/dev.tsv line 1)"
    assert rows[0]["origin"] == "upstream v1 -> v2"
    added = _wyweb(tmp_path / "v3", {"tlc/dev.tsv": TLC, "wywmt/dev.tsv": "古文零\t今译零\n" + WYWMT})
    (row,) = diff_versions(v1, added)
    assert (row["status"], row["reason"]) == ("added_upstream", "new upstream, at wywmt/dev.tsv line 1")
    lines = TLC.splitlines(keepends=True)
    moved = _wyweb(tmp_path / "v4", {"tlc/dev.tsv": "".join(reversed(lines)), "wywmt/dev.tsv": WYWMT})
    assert diff_versions(v1, moved) == []
    assert {i["item_id"]: i["source_locator"] for i in moved if i["task"] == "tlc"} != {
        i["item_id"]: i["source_locator"] for i in v1 if i["task"] == "tlc"}
    edited = _wyweb(tmp_path / "v5", {"tlc/dev.tsv": TLC.replace("中古\t唐", "近古\t唐"), "wywmt/dev.tsv": WYWMT})
    (row,) = diff_versions(v1, edited)
    assert (row["status"], row["field"], row["old"], row["new"]) == ("changed_upstream", "answer", '"B"', '"C"')


def test_identical_wyweb_rows_are_numbered_in_order(tmp_path):
    """Identical text in one split and task: the first keeps the bare hash, later ones -2, -3;
    the same text in another task or split is keyed on its own."""
    items = _wyweb(tmp_path / "v1", {"wywmt/dev.tsv": "古文一\t今译一\n古文二\t今译二\n古文一\t今译一\n古文一\t今译一\n",
                                     "wywmt/test.tsv": "古文一\t今译一\n", "tlc/dev.tsv": "远古\t先秦\t古文一\n"})
    ids = {(i["split"], i["task"], i["source_locator"]): i["item_id"] for i in items}
    first = ids[("dev", "wywmt", "line 1")]
    assert ids[("dev", "wywmt", "line 3")] == first + "-2" and ids[("dev", "wywmt", "line 4")] == first + "-3"
    key = first.rsplit("/", 1)[1]
    assert len(key) == 12 and int(key, 16) >= 0
    assert ids[("test", "wywmt", "line 1")] == f"wyweb/test/wywmt/{key}"
    assert ids[("dev", "tlc", "line 1")] == f"wyweb/dev/tlc/{key}"   # the text alone defines the key


def test_build_items_routes_every_raw_row(tmp_path):
    """Adapter rejects and repeated ids end in quarantine, corrections apply, and the new rows are
    diffed against the previous items of the same benchmark: one plain call, no Dagster."""
    from pipeline.standardize import build_items

    def raw(item_id, question, version="v2", reason=None, benchmark="aceval"):
        return {"item_id": item_id, "benchmark": benchmark, "source_version": version, "task": "t",
                "context": None, "question": question, "choices": ["甲", "乙"], "answer": "A", "references": [],
                "metadata": "{}", "source_file": "f.csv", "source_locator": item_id, "reason": reason, "raw": None}

    (tmp_path / "fix.yaml").write_text(
        "corrections:\n  - {item_id: aceval/dev/t/1, field: answer, old: A, new: B, reason: wrong key, date: 2026-11-22}\n",
        encoding="utf-8")
    rows = [raw("aceval/dev/t/0", "问一"), raw("aceval/dev/t/1", "问二"), raw("aceval/dev/t/1", "问二"),
            raw("aceval/dev/t/2", None, reason="empty question")]
    # the previous build: t/1 already corrected, t/9 gone now, and another benchmark's item,
    # which a build of aceval alone must not report as removed
    previous = [dict(raw("aceval/dev/t/0", "旧问一", version="v1"), script="neutral"),
                dict(raw("aceval/dev/t/1", "问二", version="v1"), answer="B"),
                raw("aceval/dev/t/9", "问九", version="v1"),
                raw("wenmind/test/t/1", "问", version="v1", benchmark="wenmind")]
    items, quarantine, audit = build_items(rows, tmp_path, previous)
    assert [i["item_id"] for i in items] == ["aceval/dev/t/0", "aceval/dev/t/1"] and items[1]["answer"] == "B"
    assert sorted(q["reason"] for q in quarantine) == ["duplicate item_id aceval/dev/t/1", "empty question"]
    assert sorted((a["item_id"], a["status"]) for a in audit) == [
        ("aceval/dev/t/0", "changed_upstream"), ("aceval/dev/t/1", "applied"), ("aceval/dev/t/9", "removed_upstream")]
    _, _, unchanged = build_items(rows, tmp_path, items)
    assert [a["status"] for a in unchanged] == ["applied"]   # a rebuild of the same source: no upstream rows
    _, _, first = build_items(rows, tmp_path, previous[3:])
    assert [a["status"] for a in first] == ["applied"]       # aceval's first build: nothing was added
    _, _, moved = build_items([dict(r, source_version="v1") for r in rows[:2]], tmp_path, previous[:1])
    assert [(a["status"], a["origin"]) for a in moved if a["status"] != "applied"] == [
        ("changed_upstream", "upstream v1 (same version label)"), ("added_upstream", "upstream v1 (same version label)")]


def test_a_removed_correction_is_reverted_not_an_upstream_change(tmp_path):
    """A correction the previous build applied and that is gone now: the item has its upstream
    value again, which is no upstream change. An upstream edit of that field still is one."""
    from pipeline.standardize import build_items

    def raw(item_id, answer):
        return {"item_id": item_id, "benchmark": "aceval", "source_version": "v1", "task": "t", "context": None,
                "question": "问", "choices": ["甲", "乙", "丙"], "answer": answer, "references": [],
                "metadata": "{}", "source_file": "f.csv", "source_locator": item_id, "reason": None, "raw": None}

    fix = tmp_path / "fix.yaml"
    fix.write_text("corrections:\n  - {item_id: aceval/dev/t/1, field: answer, old: A, new: B, reason: wrong key,"
                   " date: 2026-11-22}\n", encoding="utf-8")
    rows = [raw("aceval/dev/t/0", "A"), raw("aceval/dev/t/1", "A")]
    items, _, audit = build_items(rows, tmp_path, None)
    assert [(a["status"], a["origin"]) for a in audit] == [("applied", f"{fix.as_posix()}:1")]
    fix.unlink()
    reverted, _, after = build_items(rows, tmp_path, items, previous_audit=audit)
    assert reverted[1]["answer"] == "A"
    assert [(a["item_id"], a["field"], a["status"], a["old"], a["new"], a["origin"], a["date"]) for a in after] == [
        ("aceval/dev/t/1", "answer", "reverted", '"B"', '"A"', f"{fix.as_posix()}:1", "2026-11-22")]
    assert after[0]["reason"].startswith("wrong key [reverted: ")
    to_frame(after, CORRECTIONS_AUDIT)
    # upstream moved the reverted field too: that is an upstream change
    _, _, moved = build_items([rows[0], raw("aceval/dev/t/1", "C")], tmp_path, items, previous_audit=audit)
    assert [(a["status"], a["old"], a["new"]) for a in moved] == [("changed_upstream", '"B"', '"C"')]
    # a correction edited in place (A -> C instead of A -> B): the applied row says it all
    fix.write_text("corrections:\n  - {item_id: aceval/dev/t/1, field: answer, old: A, new: C, reason: wrong key,"
                   " date: 2026-11-23}\n", encoding="utf-8")
    _, _, edited = build_items(rows, tmp_path, items, previous_audit=audit)
    assert [a["status"] for a in edited] == ["applied"]


def test_build_items_finds_path_scopes_in_the_configured_sources(tmp_path, monkeypatch):
    """Without `sources`, a path-scoped correction is matched against the sources file in use."""
    from pipeline.standardize import build_items

    (tmp_path / "src").mkdir()
    (tmp_path / "sources.yaml").write_text(f"benchmarks:\n  aceval: {{path: {tmp_path / 'src'}, version: v1}}\n",
                                           encoding="utf-8")
    monkeypatch.setenv("WENHENG_SOURCES", str(tmp_path / "sources.yaml"))
    fixes = tmp_path / "corrections"
    fixes.mkdir()
    (fixes / "fix.yaml").write_text("path: '*/src'\ncorrections:\n  - {item_id: aceval/dev/t/0, field: answer,"
                                    " old: A, new: B, reason: wrong key, date: 2026-11-22}\n", encoding="utf-8")
    row = {"item_id": "aceval/dev/t/0", "benchmark": "aceval", "source_version": "v1", "task": "t", "context": None,
           "question": "问", "choices": ["甲", "乙"], "answer": "A", "references": [], "metadata": "{}",
           "source_file": "f.csv", "source_locator": "row 0", "reason": None, "raw": None}
    items, _, (audit,) = build_items([row], fixes)
    assert audit["status"] == "applied" and items[0]["answer"] == "B"
    elsewhere = {"aceval": SourceSpec("aceval", tmp_path / "other", "v1")}
    items, _, (audit,) = build_items([row], fixes, sources=elsewhere)
    assert audit["status"] == "out_of_scope" and items[0]["answer"] == "A"


def test_diff_on_hashes_equals_diff_field_by_field(items):
    """Built items carry their hashes; the diff skips the items whose hashes are equal, and
    reports what comparing every field of every item reports."""
    from pipeline.schema import derive_fields

    edited = [dict(it) for it in items]
    edited[0]["question"] = (edited[0]["question"] or "") + "也"
    edited[1]["choices"] = [*(edited[1]["choices"] or []), "丁"]
    edited[2]["answer"] = "另一个答案"
    edited[3]["context"] = None if edited[3]["context"] else "序"
    for item in edited[:4]:
        derive_fields(item)
    plain = [{k: v for k, v in it.items() if k not in ("content_hash", "answer_hash")} for it in items]
    rows = diff_versions(items, edited, edited)
    assert rows == diff_versions(plain, edited, edited) and {r["item_id"] for r in rows} == {
        it["item_id"] for it in edited[:4]}
