"""The shared record loop and item ids (pipeline/sources/records.py, keys.py): one guarded row per
record, a repeated key quarantined with its record, the others yielded in file order."""

from __future__ import annotations

from pipeline.sources.accounting import ParseResult
from pipeline.sources.keys import item_id
from pipeline.sources.records import unique_items


def _build(locator, record):
    if "answer" not in record:
        return None, "missing: answer"
    return {"task": record["task"], "answer": record["answer"], "metadata": {}}, ""


RECORDS = [("line 1", {"id": "a", "task": "T1", "answer": "A"}),
           ("line 2", {"id": "a", "task": "T2", "answer": "B"}),   # same id, another task
           ("line 3", {"id": "b", "task": "T1"}),                  # no answer
           ("line 4", {"id": "a", "task": "T1", "answer": "C"}),   # same id, same task
           ("line 5", {"id": "c", "task": "T1", "answer": 1})]     # not text: item_problem


def test_ids_are_unique_per_key_and_every_other_record_is_a_quarantine_row():
    result = ParseResult()
    kept = list(unique_items(result, "demo", "test.jsonl", RECORDS, _build,
                             key=lambda record, item: (item["task"], record["id"]),
                             duplicate=lambda key: f"duplicate id {key[1]} in task {key[0]}"))
    assert [locator for locator, _, _ in kept] == ["line 1", "line 2"]
    assert [(q["source_locator"], q["reason"]) for q in result.quarantine] == [
        ("line 3", "missing: answer"), ("line 4", "duplicate id a in task T1"),
        ("line 5", "item field answer is a number, not text")]


def test_the_default_duplicate_reason_names_the_id():
    result = ParseResult()
    kept = list(unique_items(result, "demo", "f", RECORDS[:2], _build, key=lambda record, _: record["id"]))
    assert len(kept) == 1 and result.quarantine[0]["reason"] == "duplicate id a"


def test_item_id_is_benchmark_split_task_key():
    assert item_id("fuxi", "test", "ACRC", 7) == "fuxi/test/ACRC/7"
    assert item_id("wyweb", "dev", "tlc", "0123456789ab-2") == "wyweb/dev/tlc/0123456789ab-2"
