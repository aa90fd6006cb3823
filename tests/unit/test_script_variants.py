"""make_variants and convert_many give what make_variant and convert give one text at a time;
detect_script labels texts by its rule (worked cases below) and keeps what any rule must: neutral
exactly when neither conversion changes the text, one script's label when only the other
conversion does; detect_scripts labels many texts as detect_script labels each."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from conftest import upstream

from pipeline import script
from pipeline.config import SourceSpec, load_sources
from pipeline.dedup.keys import item_text
from pipeline.ingest import parse_source
from pipeline.schema import ITEM_VARIANTS, ITEMS, VARIANTS, derive_fields, to_frame
from pipeline.script import (
    VARIANT_CONFIGS,
    convert,
    convert_many,
    detect_script,
    detect_scripts,
    make_variant,
    make_variants,
)
from pipeline.standardize import derive_all, standardize

ROOT = Path(__file__).resolve().parents[2]
ALL = list(VARIANT_CONFIGS)  # original, simplified, traditional and the regional forms


def _samples() -> list[dict]:
    specs = load_sources(ROOT / "data" / "sources.yaml")
    return standardize([i for spec in specs.values() for i in parse_source(spec).items])[0]


# detect_script's rule, case by case: traditional when at least three times as many characters
# are traditional-only (t2s changes them) as simplified-only (s2t changes them), simplified the
# other way round, mixed in between, neutral when no character differs between the scripts.
DETECTED = {
    "学而时习之，不亦说乎": "simplified",
    "學而時習之，不亦說乎": "traditional",
    "天地山水": "neutral",
    "乾隆皇帝": "neutral",      # OpenCC keeps 乾 in 乾隆 both ways
    "": "neutral",
    "abc": "neutral",
    "学而时习之，學而時習之": "mixed",
    "頭髮發展，后来": "mixed",
    "學習說这": "traditional",   # 3 traditional-only to 1 simplified-only: at the ratio
    "學習这们": "mixed",         # 2 to 2
    "学习说們": "simplified",    # 1 to 3
    "学习們": "mixed",           # 1 to 2
}


def _holds_for_any_rule(text: str, label: str) -> None:
    """What a script label must be whatever the counting rule: neutral exactly when neither
    conversion changes the text; one script's label when only the other conversion changes it."""
    as_simplified, as_traditional = convert(text, "t2s"), convert(text, "s2t")
    assert (label == "neutral") == (as_simplified == text == as_traditional), text
    if as_simplified == text != as_traditional:
        assert label == "simplified", text
    if as_traditional == text != as_simplified:
        assert label == "traditional", text


def test_make_variants_equals_make_variant_on_the_samples():
    items = _samples()
    items.append(dict(items[0], item_id="x/none", context=None, question=None, choices=None, answer=None,
                      references=None))
    items.append(dict(items[0], item_id="x/empty", context="", question="", choices=["", "乾隆"], answer=""))
    assert make_variants(items, ALL) == [make_variant(it, v) for it in items for v in ALL]
    assert make_variants(items, ["traditional", "original"]) == [
        make_variant(it, v) for it in items for v in ["traditional", "original"]]
    assert make_variants(items, []) == []
    with pytest.raises(ValueError, match="unknown script variant"):
        make_variants(items, ["klingon"])


def test_convert_many_across_batches_and_with_the_separator_in_a_text(monkeypatch):
    texts = ["學而時習之", "", "为了着想，里面的线很长", "乾隆皇帝", "发\x1e髮", "頭髮和發財"] * 7
    for config in ("t2s", "s2t", "s2tw", "s2hk"):
        expected = [convert(t, config) for t in texts]
        assert convert_many(texts, config) == expected
        monkeypatch.setattr(script, "_BATCH_CHARS", 12)   # many small batches
        assert convert_many(texts, config) == expected
        monkeypatch.undo()


@pytest.mark.parametrize(("text", "label"), list(DETECTED.items()))
def test_detect_script_counts_each_scripts_own_characters(text, label):
    assert detect_script(text) == label
    _holds_for_any_rule(text, label)
    assert detect_scripts([text, text + "發", text]) == [label, detect_script(text + "發"), label]


def test_sample_texts_are_labelled_as_any_rule_must():
    items = _samples()
    texts = [item_text(it) for it in items] + [it["question"] or "" for it in items]
    labels = detect_scripts(texts)
    assert labels == [detect_script(t) for t in texts]
    for text, label in zip(texts, labels):
        _holds_for_any_rule(text, label)


def test_real_files_variants_and_script_labels():
    raw = []
    for name, parts in [("wenmind", ("wenmind", "WenMind_ver1.json")), ("aceval", ("aceval",)),
                        ("wyweb", ("wyweb",))]:
        raw += parse_source(SourceSpec(name, upstream(*parts), "public")).items
    items, _ = standardize(raw)
    variants = ["original", "simplified", "traditional"]
    assert make_variants(items, variants) == [make_variant(it, v) for it in items for v in variants]
    texts = ["".join(filter(None, [it.get("context"), it.get("question"), *(it.get("choices") or [])]))
             for it in items[::7]] + [item_text(it) for it in items[::97]]
    labels = detect_scripts(texts)
    assert [detect_script(t) for t in texts] == labels
    for text, label in zip(texts, labels):
        _holds_for_any_rule(text, label)
    assert len(set(labels)) >= 3  # the corpus has simplified, traditional and neutral or mixed texts
    # standardize derives script and hashes for all items at once: what derive_fields gives one by one
    for item in items[::5]:
        assert {k: item[k] for k in ("script", "content_hash", "answer_hash")} == {
            k: derive_fields(dict(item))[k] for k in ("script", "content_hash", "answer_hash")}


def test_derive_all_is_derive_fields():
    items = _samples()
    items += [dict(items[0], item_id="x/none", context=None, question=None, choices=None, answer=None,
                   references=None),
              dict(items[0], item_id="x/sep", context="發\x1e", question="头髮", choices=["", "乾隆"], answer="")]
    derived = [dict(it, script=None, content_hash=None, answer_hash=None) for it in items]
    derive_all(derived)
    assert derived == [derive_fields(dict(it)) for it in items]
    # scripts known by content hash (the previous build's) are taken, the others detected
    known = {it["content_hash"]: it["script"] for it in derived[::2]}
    again = [dict(it, script=None, content_hash=None, answer_hash=None) for it in items]
    derive_all(again, known)
    assert again == derived
    marked = [dict(it, script=None) for it in items[:2]]
    derive_all(marked, {derived[0]["content_hash"]: "known"})
    assert [it["script"] for it in marked] == ["known", derived[1]["script"]]
    assert standardize(items, known)[0] == standardize(items)[0]


def _variants_frame(items: list[dict], variants) -> pa.Table:
    return pa.Table.from_pylist(make_variants(items, variants), schema=script.variant_columns())


def test_variant_columns_are_the_item_variants_table():
    assert script.variant_columns().equals(ITEM_VARIANTS)


def test_variants_table_reuses_unchanged_items_only():
    """Rows of the previous build are taken for items whose benchmark and texts are the same;
    the table always equals make_variants on all items, whatever changed."""
    items = [it for it in _samples() if it["benchmark"] in ("wenmind", "cpdue")]
    frame = to_frame(items, ITEMS)
    wanted = list(VARIANTS)
    first, counts = script.variants_table(frame, wanted)
    assert first.equals(_variants_frame(items, wanted)) and counts == {"reused": 0, "converted": len(items)}
    stored = pa.Table.from_pandas(first.to_pandas(), schema=ITEM_VARIANTS)   # as the lake gives it back
    again, counts = script.variants_table(frame, wanted, stored)
    assert again.equals(first) and counts == {"reused": len(items), "converted": 0}

    edited = [dict(it) for it in items[3:]] + [dict(items[0], item_id="new/item/0/0")]   # removed and added
    edited[0]["question"] += "乎"
    edited[1]["choices"] = [*edited[1]["choices"], "丁"]           # one more option
    edited[2]["choices"] = ["甲"] + list(edited[2]["choices"][1:]) if edited[2]["choices"] else ["甲"]
    edited[3]["answer"] = None if edited[3]["answer"] is not None else "A"
    edited[4]["references"] = [*(edited[4]["references"] or []), "參考"]
    edited[5]["benchmark"] = "cpdue" if edited[5]["benchmark"] == "wenmind" else "wenmind"
    edited[6]["context"] = (edited[6]["context"] or "") + "序"
    edited = edited[7:] + edited[:7]                                  # another order
    changed, counts = script.variants_table(to_frame(edited, ITEMS), wanted, stored)
    assert changed.equals(_variants_frame(edited, wanted))
    assert counts == {"reused": len(edited) - 8, "converted": 8}

    # a variant the previous build did not make: its items are converted again, all of them
    more = [*wanted, "traditional_tw"]
    assert script.variants_table(frame, more, stored)[0].equals(_variants_frame(items, more))
    assert script.variants_table(frame, more, stored)[1]["reused"] == 0
    # fewer variants: the rows asked for, taken from the previous build
    fewer, counts = script.variants_table(frame, ["simplified"], stored)
    assert fewer.equals(_variants_frame(items, ["simplified"])) and counts["converted"] == 0
    assert script.variants_table(frame.iloc[:0], wanted, stored)[0].num_rows == 0


def test_variants_table_null_lists_and_empty_texts():
    base = {"benchmark": "b", "context": None, "answer": None, "references": None}
    items = [base | {"item_id": "b/s/t/1", "question": "為學", "choices": None},
             base | {"item_id": "b/s/t/2", "question": "", "choices": ["", "学"]},
             base | {"item_id": "b/s/t/3", "question": "问", "choices": []}]
    frame = pd.DataFrame(items)
    first, _ = script.variants_table(frame, ALL)
    assert first.equals(_variants_frame(items, ALL))
    again, counts = script.variants_table(frame, ALL, first)
    assert again.equals(first) and counts["reused"] == 3
    swapped = [items[0] | {"choices": []}, items[1] | {"choices": ["学", ""]}, items[2] | {"choices": None}]
    changed, counts = script.variants_table(pd.DataFrame(swapped), ALL, first)
    # a null list is stored as the empty list, so only the reordered options count as a change
    assert changed.equals(_variants_frame(swapped, ALL)) and counts == {"reused": 2, "converted": 1}
