"""The adapters on the real public benchmark files (skipped when they are not on this machine).
Expected counts are the benchmarks' published sizes, re-counted on the files."""

from __future__ import annotations

import re
from collections import Counter

from conftest import upstream

from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.standardize import standardize

WENMIND_TASKS = {
    "inverted sentence structure": 18, "elliptical sentence": 32, "inverted sentence types": 7,
    "sentence structure identification": 43, "classical Chinese to modern Chinese": 200,
    "modern Chinese to classical Chinese": 200, "named entity recognition": 200, "punctuation": 200,
    "topic classification": 200, "word explanation": 100, "reading comprehension": 100, "function words": 100,
    "homophones": 200, "polysemy": 200, "ancient prose writing": 100, "appreciation exam questions": 150,
    "free appreciation": 100, "poetry writing": 30, "Ci writing": 50, "Qu writing": 20, "content Q&A": 200,
    "title and author Q&A": 200, "write the next sentence": 100, "write the previous sentence": 100,
    "comprehension dictation": 30, "genre judgment": 120, "ancient poetry translation": 200,
    "sentiment classification": 200, "ancient poetry to English": 50, "poet introduction": 110,
    "analysis of imagery": 185, "couplet following": 100, "couplet writing": 100, "HengPi writing": 100,
    "synonyms": 100, "the origin of idioms": 100, "idiom finding": 100, "idiom explanation": 100, "riddle": 100,
    "xiehouyu": 100, "historical Chinese phonology": 100, "knowledge of sinology Q&A": 130,
}
ACEVAL_TEST = {
    "historical_facts": 199, "geography": 197, "social_customs": 202, "art_and_cultural_heritage": 195,
    "philosophy_and_religion": 196, "lexical_pragmatics_analysis": 198, "allusions_and_idioms": 206,
    "word_sense_disambiguation": 402, "translation": 199, "event_extraction": 185, "sentence_pauses": 202,
    "summarization_and_analysis": 598, "poetry_appreciation": 201,
}
# file -> (raw rows, items): the digest's measured sizes; the quarantined XuCi rows mark a
# target "word" that is a punctuation mark (2 in dev, 29 in train).
WYWEB_FILES = {
    "fspc/dev.json": (1000, 1000), "fspc/train.json": (3000, 3000), "glner/dev.jsonl": (2000, 2000),
    "tlc/dev.tsv": (6115, 6115), "wywrc/dev.json": (432, 432), "xuci/dev.tsv": (500, 498),
    "xuci/train.tsv": (2675, 2646),
}


def _reconciles(result) -> bool:
    kept = Counter(i["source_file"] for i in result.items) + Counter(q["source_file"] for q in result.quarantine)
    return kept == result.raw_counts


def test_real_wenmind_file():
    path = upstream("wenmind", "WenMind_ver1.json")
    result = parse_source(SourceSpec("wenmind", path, "ver1"))
    assert len(result.items) == 4875 and not result.quarantine and _reconciles(result)
    assert Counter(i["task"] for i in result.items) == WENMIND_TASKS
    assert len({i["task_group"] for i in result.items}) == 26
    formats = Counter(i["format"] for i in result.items)
    assert formats == {"open_qa": 3928, "mcq_single": 704, "classification": 200, "fill_blank": 30, "mcq_multi": 13}
    # every multiple-choice item has its options split out, including the ones run on from the stem
    assert all(len(i["choices"]) >= 2 for i in result.items if i["format"].startswith("mcq"))
    assert Counter(i["metadata"].get("difficulty") for i in result.items) == {None: 4275, "hard": 449, "easy": 151}
    items, duplicates = standardize(result.items)
    assert len(items) == 4875 and not duplicates


def test_real_aceval_files():
    root = upstream("aceval")
    result = parse_source(SourceSpec("aceval", root, "v1"))
    assert not result.quarantine and _reconciles(result)
    assert Counter(i["split"] for i in result.items) == {"dev": 65, "test": 3180}
    assert Counter(i["task"] for i in result.items if i["split"] == "test") == ACEVAL_TEST
    assert Counter(i["task"] for i in result.items if i["split"] == "dev") == {s: 5 for s in ACEVAL_TEST}
    assert {i["task_group"] for i in result.items} == {
        "General Historical Knowledge", "Short Text Understanding", "Long Text Understanding"}
    assert all(i["answer"] is None for i in result.items if i["split"] == "test")


def test_real_aceval_submission_covers_every_test_row():
    from pipeline.benchmarks.aceval.adapter import submission

    result = parse_source(SourceSpec("aceval", upstream("aceval"), "v1"))
    sub = submission({i["item_id"]: "A" for i in result.items})
    assert list(sub) == list(ACEVAL_TEST) and {s: len(rows) for s, rows in sub.items()} == ACEVAL_TEST
    assert all(list(rows) == [str(n) for n in range(len(rows))] for rows in sub.values())


def test_real_wyweb_files():
    root = upstream("wyweb")
    result = parse_source(SourceSpec("wyweb", root, "34bb6fd"))
    assert _reconciles(result)
    assert dict(result.raw_counts) == {f: raw for f, (raw, _) in WYWEB_FILES.items()}
    assert Counter(i["source_file"] for i in result.items) == {f: n for f, (_, n) in WYWEB_FILES.items()}
    assert len(result.quarantine) == 31 and all("covers punctuation" in q["reason"] for q in result.quarantine)
    tlc = Counter(i["metadata"]["label"] for i in result.items if i["task"] == "tlc")
    assert tlc == {"中古": 2522, "远古": 1868, "近古": 1725}
    wywrc = Counter(i["answer"] for i in result.items if i["task"] == "wywrc")
    assert wywrc == {"A": 85, "B": 110, "C": 137, "D": 100}
    xuci = Counter(i["answer"] for i in result.items if i["source_file"] == "xuci/dev.tsv")
    assert xuci == {"B": 276 - 1, "A": 224 - 1}  # one quarantined row of each label
    glner = [i for i in result.items if i["task"] == "glner"]
    spans = Counter(e[2] for i in glner for e in i["metadata"]["entities"])
    assert spans == {"noun_other": 19161, "noun_bookname": 7353}
    assert all(i["answer"].replace("《", "").replace("》", "").replace("[", "").replace("]", "") == i["context"]
               for i in glner)
    # ids are content keys, unique, the same when read again; line numbers and indices are locators
    ids = [i["item_id"] for i in result.items]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"wyweb/\w+/\w+/[0-9a-f]{12}(-\d+)?", i) for i in ids)
    assert ids == [i["item_id"] for i in parse_source(SourceSpec("wyweb", upstream("wyweb"), "v2")).items]
    located = {(i["split"], i["task"], i["source_locator"]) for i in result.items}
    assert {("dev", "tlc", "line 1"), ("dev", "tlc", "line 6115"), ("dev", "fspc", "index 0"),
            ("dev", "glner", "line 2000")} <= located


def test_real_wyweb_dev_split_only():
    result = parse_source(SourceSpec("wyweb", upstream("wyweb"), "v", splits=("dev",)))
    assert {i["split"] for i in result.items} == {"dev"} and len(result.items) == 1000 + 2000 + 6115 + 432 + 498
