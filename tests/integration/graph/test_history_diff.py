"""Two versions of WenMind through the whole pipeline, then a correction: the history keeps every
snapshot and every audit row, and `diff` reports exactly the edits made between the versions.

Version 1 is a slice of the real WenMind file (copied to a temp dir at test time; the test skips
when the file is absent). Version 2 edits the copy: questions of some QA items, the gold letter of
some MCQ items (answer only), an option's text of other MCQ items (WenMind's options are written
inline in the question, so these change the question too), one item removed and one added."""

from __future__ import annotations

import json
import re

import duckdb
import pytest
from conftest import upstream, write_yaml

from pipeline import history, paths
from pipeline.benchmarks.wenmind.adapter import split_inline_choices
from pipeline.runner import run_pipeline

BASELINES = """
models:
  random: {engine: baseline, strategy: random, seed: 0}
  oracle: {engine: baseline, strategy: oracle}
"""
K_QUESTIONS, J_ANSWERS, M_CHOICES = 3, 2, 2


def _slice(rows: list[dict]) -> list[dict]:
    """MCQ items with a single-letter gold and options that split, and QA items: small and varied."""
    mcq = [r for r in rows if r.get("question_format") == "MCQ" and len(r["answer"].strip()) == 1
           and len(split_inline_choices(r["question"])) >= 3][:12]
    qa = [r for r in rows if r.get("question_format") == "QA"][:10]
    return mcq + qa


def _write(path, rows, version, workdir, monkeypatch):
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("WENHENG_SOURCES", str(write_yaml(
        workdir / "sources.yaml", f"benchmarks:\n  wenmind: {{path: {path}, version: {version}}}\n")))


@pytest.fixture
def two_versions(workdir, monkeypatch):
    rows = _slice(json.loads(upstream("wenmind", "WenMind_ver1.json").read_text(encoding="utf-8")))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", BASELINES)))
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(workdir / "corrections"))
    source = workdir / "wenmind.json"
    _write(source, rows, "v1", workdir, monkeypatch)
    assert run_pipeline(["wenmind"], ["random", "oracle"], log=lambda _: None).ok
    mcq = [r for r in rows if r["question_format"] == "MCQ"]
    qa = [r for r in rows if r["question_format"] == "QA"]
    edited = [dict(r) for r in rows]
    index = {r["id"]: i for i, r in enumerate(rows)}
    edits = {"question": [], "answer": [], "choices": []}
    for r in qa[:K_QUESTIONS]:
        edited[index[r["id"]]]["question"] = "（修订）" + r["question"]
        edits["question"].append(str(r["id"]))
    for r in mcq[:J_ANSWERS]:
        letters = "ABCD"
        edited[index[r["id"]]]["answer"] = letters[(letters.index(r["answer"].strip()) + 1) % 3]
        edits["answer"].append(str(r["id"]))
    for r in mcq[J_ANSWERS:J_ANSWERS + M_CHOICES]:
        option = split_inline_choices(r["question"])[1]
        head, tail = r["question"].rsplit(option, 1)
        edited[index[r["id"]]]["question"] = head + option + "乙" + tail
        edits["choices"].append(str(r["id"]))
    removed = qa[-1]["id"]
    edited = [r for r in edited if r["id"] != removed]
    added = dict(qa[-2], id="990001", question="（新增）" + qa[-2]["question"])
    edited.append(added)
    _write(source, edited, "v2", workdir, monkeypatch)
    assert run_pipeline(["wenmind"], ["random", "oracle"], log=lambda _: None).ok
    with duckdb.connect(str(paths.warehouse_file()), read_only=True) as con:
        v2_ids = dict(con.execute("SELECT item_id, item_id FROM items").fetchall())
    return {"edits": edits, "removed": str(removed), "added": added["id"], "v2_ids": v2_ids, "workdir": workdir}


def _ids_of(source_ids: list[str], item_ids: list[str]) -> set[str]:
    """The warehouse item ids of WenMind source ids (an item id ends with its source key)."""
    return {i for i in item_ids for s in source_ids if i.rsplit("/", 1)[-1] == s}


def test_diff_reports_exactly_the_edits_between_two_versions(two_versions):
    v = two_versions
    db = paths.warehouse_file()
    d = history.diff(db, "wenmind", "v1", "v2")
    every = set(v["v2_ids"]) | set(d.removed)
    assert d.counts()["added"] == 1 and d.counts()["removed"] == 1
    assert d.added[0].rsplit("/", 1)[-1] == v["added"] and d.removed[0].rsplit("/", 1)[-1] == v["removed"]
    questions, answers, choices = (_ids_of(v["edits"][k], every) for k in ("question", "answer", "choices"))
    assert len(questions) == K_QUESTIONS and len(answers) == J_ANSWERS and len(choices) == M_CHOICES
    assert set(d.choices_changed) == choices
    assert set(d.answer_changed) == answers
    # WenMind's options are inline: an edited option is an edited question too
    assert set(d.question_changed) == questions | choices
    # the oracle answers the gold: its answers change exactly where the gold did, its scores do not
    assert {i for i, model, *_ in d.response_changed if model == "oracle"} == answers
    assert [row for row in d.score_changed if row[1] == "oracle"] == []
    # the random baseline's letter is drawn per prompt: the same prompt, the same letter, so an
    # answer-only change moves its score (when its letter was the old or the new gold), never its text
    random_text = {i for i, model, *_ in d.response_changed if model == "random"}
    assert not random_text & answers
    assert {row[0] for row in d.score_changed if row[1] == "random"} <= answers | questions | choices
    with duckdb.connect(str(db), read_only=True) as con:
        letters = dict(con.execute("""SELECT r.item_id, s.extracted FROM response_history r
            JOIN score_history s USING (item_id, model, setting, variant, snapshot)
            WHERE r.model = 'random' AND r.snapshot = 'v2' AND coalesce(s.kind, 'rule') = 'rule'""").fetchall())
        golds = {snap: dict(con.execute("SELECT item_id, answer FROM item_history WHERE snapshot = ?",
                                        [snap]).fetchall()) for snap in ("v1", "v2")}
        changes = con.execute("""SELECT item_id, model, changed FROM score_changes
            WHERE benchmark = 'wenmind' AND from_snapshot = 'v1' AND to_snapshot = 'v2'""").fetchall()
    moved = {i for i in answers if letters.get(i) in (golds["v1"][i], golds["v2"][i])}
    assert {row[0] for row in d.score_changed if row[1] == "random" and row[0] in answers} == moved
    assert {i for i, m, c in changes if m == "random" and "score" in c and i in answers} == moved
    assert {i for i, _, c in changes if "answer" in c} == answers
    text = history.format_diff(d)
    assert "wenmind: v1 -> v2" in text
    assert re.search(rf"^  answer changed +{J_ANSWERS}$", text, re.MULTILINE), text


def test_a_correction_is_a_new_snapshot_and_no_audit_row_is_lost(two_versions, monkeypatch):
    v = two_versions
    db = paths.warehouse_file()
    with duckdb.connect(str(db), read_only=True) as con:
        upstream_rows = con.execute("""SELECT item_id, field FROM audit_history
            WHERE status = 'changed_upstream' ORDER BY ALL""").fetchall()
        target, answer = con.execute("""SELECT item_id, answer FROM items WHERE format = 'open_qa'
            ORDER BY item_id LIMIT 1""").fetchone()
    # one row per edited field: questions, answers, and the choice edits' question and choices
    assert len(upstream_rows) == K_QUESTIONS + J_ANSWERS + 2 * M_CHOICES
    corrections = v["workdir"] / "corrections"
    corrections.mkdir()
    (corrections / "wenmind.yaml").write_text(json.dumps([{
        "item_id": target, "field": "answer", "old": answer, "new": answer + "（订正）",
        "reason": "typo", "date": "2026-08-01"}], ensure_ascii=False), encoding="utf-8")
    assert run_pipeline(["wenmind"], ["random", "oracle"], log=lambda _: None).ok
    with duckdb.connect(str(db), read_only=True) as con:
        lake_audit = con.execute("SELECT status, count(*) FROM corrections_audit GROUP BY 1").fetchall()
        kept = con.execute("""SELECT item_id, field FROM audit_history
            WHERE status = 'changed_upstream' ORDER BY ALL""").fetchall()
        applied = con.execute("SELECT count(*) FROM audit_history WHERE status = 'applied'").fetchone()[0]
    assert lake_audit == [("applied", 1)]           # the build replaced its audit ...
    assert kept == upstream_rows and applied == 1   # ... the history did not lose a row
    snaps = history.versions("wenmind", db)
    assert list(snaps["version"]) == ["v1", "v2", "v2"]
    corrected = snaps["snapshot"].iloc[-1]
    assert corrected.startswith("v2+c")
    d = history.diff(db, "wenmind", "v2", corrected)
    assert d.answer_changed == [target] and d.counts()["added"] == d.counts()["removed"] == 0
