"""Source adapters on our samples and on malformed input (more per benchmark in
test_sources_*.py; the real upstream files in test_sources_upstream.py)."""

from __future__ import annotations

import json
import re
from collections import Counter

from conftest import ROOT

from pipeline import benchmarks
from pipeline.config import SourceSpec, load_sources
from pipeline.ingest import parse_source
from pipeline.sources.accounting import rows_accounted
from pipeline.standardize import standardize


def test_samples_parse_without_loss():
    specs = load_sources(ROOT / "data" / "sources.yaml")
    assert set(specs) == set(benchmarks.names())   # a sample for every card
    for spec in specs.values():
        result = parse_source(spec)
        assert result.items, spec.benchmark
        assert not result.quarantine, result.quarantine
        assert rows_accounted(result.rows()) == result.raw_counts   # merged rows (CP-DUE AU) included
        items, duplicates = standardize(result.items)
        assert not duplicates and len(items) == len(result.items)


def test_every_sample_item_renders_a_prompt():
    from pipeline.benchmark_card import LOGLIKELIHOOD_FORMATS
    from pipeline.prompts import build_prompt_rows, protocol
    from pipeline.script import make_variant

    specs = load_sources(ROOT / "data" / "sources.yaml")
    raw = [i for spec in specs.values() for i in parse_source(spec).items]
    items, _ = standardize(raw)
    evaluate = {"aceval": ["dev", "test"], "wyweb": ["dev", "train"]}   # every sample split asked
    rows = build_prompt_rows(items, [make_variant(i, "original") for i in items], evaluate)
    per_item = Counter(r["item_id"] for r in rows)
    for item in items:
        # a log-likelihood setting asks only the single-answer choice items
        settings = [s for s in protocol(item["benchmark"]).settings.values()
                    if not s.loglikelihood or item["format"] in LOGLIKELIHOOD_FORMATS]
        assert per_item[item["item_id"]] == len(settings), item["item_id"]
    for row in rows:
        content = row["messages"][0]["content"]
        assert "{" not in content and content.strip(), row["item_id"]


def test_wenmind_options_run_on_from_the_stem():
    from pipeline.benchmarks.wenmind.adapter import split_inline_choices

    assert split_inline_choices("哪位诗人？（）A杜甫B苏轼C李白") == ["杜甫", "苏轼", "李白"]
    assert split_inline_choices("指的是？A.两位帝王B.两种动物C.两座城市") == ["两位帝王", "两种动物", "两座城市"]
    # "D" without a separator: the bare pattern finds four options where the glued one finds three
    assert split_inline_choices("揭露的是()A、灾害B、懒惰C、制度D有志难报") == ["灾害", "懒惰", "制度", "有志难报"]
    assert split_inline_choices("问：\nA、甲  B、乙") == ["甲", "乙"]
    assert split_inline_choices("没有选项的问题") == []


def test_wenmind_formats_and_inline_choices():
    spec = load_sources(ROOT / "data" / "sources.yaml")["wenmind"]
    items = {i["item_id"]: i for i in parse_source(spec).items}
    first = items["wenmind/test/function_words/0"]
    assert first["format"] == "mcq_single" and first["answer"] == "B"
    assert first["choices"] == ["说话", "通“悦”，高兴", "劝说", "学说"]
    formats = Counter(i["format"] for i in items.values())
    assert formats["mcq_multi"] == 1 and formats["classification"] == 2 and formats["fill_blank"] == 2
    sentiment = [i for i in items.values() if i["format"] == "classification"]
    assert all(i["metadata"]["labels"] == ["正面", "负面"] for i in sentiment)
    assert any(i["metadata"].get("difficulty") == "easy" for i in items.values())


def test_wenmind_bad_rows_are_quarantined(tmp_path):
    rows = [
        {"id": 0, "question_format": "MCQ", "fine_grained_task_en": "t", "coarse_grained_task_en": "t",
         "question": "问：\nA、甲  B、乙", "answer": "A"},
        {"id": 1, "question_format": "QA", "fine_grained_task_en": "t", "coarse_grained_task_en": "t",
         "question": "问", "answer": ""},                       # empty gold
        {"id": 0, "question_format": "QA", "fine_grained_task_en": "t", "coarse_grained_task_en": "t",
         "question": "问", "answer": "答"},                     # duplicate id
        "not an object",
    ]
    path = tmp_path / "WenMind_x.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(rows, ensure_ascii=False).encode())  # with a BOM
    result = parse_source(SourceSpec("wenmind", path, "v"))
    assert len(result.items) == 1
    reasons = sorted(q["reason"] for q in result.quarantine)
    assert reasons == ["duplicate id 0", "missing or empty: answer", "not a JSON object"]
    assert result.raw_counts["WenMind_x.json"] == 4


def test_wenmind_broken_json_is_one_quarantine_row(tmp_path):
    path = tmp_path / "WenMind_bad.json"
    path.write_text('[{"id": 0,', encoding="utf-8")
    result = parse_source(SourceSpec("wenmind", path, "v"))
    (row,) = result.quarantine
    assert not result.items and row["source_locator"] == "file" and row["reason"].startswith("not valid JSON")


def test_aceval_malformed_rows(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "geography.csv").write_bytes(
        ",Question,A,B,C,D,Answer,Explanation\r\n"
        "0,问一,甲,乙,丙,丁,A,因为\r\n"
        "1,问二,甲,乙,丙,丁,E,错\r\n"          # answer out of range
        "2,,甲,乙,丙,丁,B,空\r\n"              # empty question
        "0,问三,甲,乙,丙,丁,C,重\r\n"          # duplicate index
        "4,问四,甲,乙\r\n".encode())            # short row
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "geography.csv").write_text("Question;A;B;C;D\n问;甲;乙;丙;丁\n", encoding="utf-8")
    result = parse_source(SourceSpec("aceval", tmp_path, "v"))
    assert [i["item_id"] for i in result.items] == ["aceval/dev/geography/0"]
    reasons = [q["reason"] for q in result.quarantine]
    assert "answer 'E' is not one of A-D" in reasons and "empty question" in reasons
    assert "duplicate index 0" in reasons and "4 fields, header has 8" in reasons
    assert any(r.startswith("missing columns") for r in reasons)  # wrong delimiter
    assert sum(result.raw_counts.values()) == len(result.items) + len(result.quarantine)


def test_wyweb_crlf_and_bad_lines(tmp_path):
    (tmp_path / "wywmt").mkdir()
    (tmp_path / "wywmt" / "dev.tsv").write_bytes("古文一\t今译一\r\n只有一列\r\n古文二\t今译二".encode())
    (tmp_path / "tlc").mkdir()
    (tmp_path / "tlc" / "dev.tsv").write_bytes("远古\t先秦\t文一\r\n上古\t先秦\t文二\r\n".encode())
    result = parse_source(SourceSpec("wyweb", tmp_path, "v"))
    rows = sorted((i["task"], i["source_locator"]) for i in result.items)
    assert rows == [("tlc", "line 1"), ("wywmt", "line 1"), ("wywmt", "line 3")]
    assert all(re.fullmatch(r"wyweb/dev/(tlc|wywmt)/[0-9a-f]{12}", i["item_id"]) for i in result.items)
    assert {q["source_locator"] for q in result.quarantine} == {"line 2"}
    assert result.items[0]["answer"] in ("今译一", "A")


def test_standardize_hashes_are_stable_and_content_sensitive():
    spec = load_sources(ROOT / "data" / "sources.yaml")["aceval"]
    items, dups = standardize(parse_source(spec).items)
    again, _ = standardize(parse_source(spec).items)
    assert not dups
    assert [i["content_hash"] for i in items] == [i["content_hash"] for i in again]
    changed = dict(parse_source(spec).items[0], answer="D")
    (one,), _ = standardize([changed])
    assert one["content_hash"] == items[0]["content_hash"] and one["answer_hash"] != items[0]["answer_hash"]
