"""Malformed files never raise out of parse_source and never lose a row: every raw row is an item or
a quarantine row with file, locator and reason, per file, across all adapters."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline import benchmarks
from pipeline.benchmarks.fuxi.adapter import BCC_LABELS
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.sources.accounting import SourceError


def place(item) -> str:
    """A WYWEB item's place in its file (wyweb/<split>/<task>/<line or index>); its id is a hash."""
    return f"wyweb/{item['split']}/{item['task']}/{item['source_locator'].split()[-1]}"

GBK = "远古\t先秦\t天时不如地利。\n".encode("gbk")


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _jsonl(*rows) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n"


def _parse(benchmark: str, path: Path):
    result = parse_source(SourceSpec(benchmark, path, "v"))
    kept = Counter(i["source_file"] for i in result.items) + Counter(q["source_file"] for q in result.quarantine)
    assert kept == result.raw_counts, "items + quarantined must equal raw rows, per file"
    assert all(q["source_file"] and q["source_locator"] and q["reason"] for q in result.quarantine)
    return result


def _reasons(result, source_file: str | None = None) -> list[str]:
    return [q["reason"] for q in result.quarantine if source_file in (None, q["source_file"])]


# --- wrong encoding: one quarantine row for the file, the other files still load ------------------

@pytest.mark.parametrize("benchmark, bad, good, good_text", [
    ("wenmind", "WenMind_a.json", "WenMind_b.json",
     json.dumps([{"id": 0, "question_format": "QA", "fine_grained_task_en": "t", "coarse_grained_task_en": "t",
                  "question": "问", "answer": "答"}])),
    ("aceval", "dev/geography.csv", "dev/translation.csv", ",Question,A,B,C,D,Answer,Explanation\n0,问,甲,乙,丙,丁,A,因\n"),
    ("wyweb", "tlc/dev.tsv", "wywmt/dev.tsv", "古文\t今译\n"),
    ("wyweb", "fspc/dev.json", "wywmt/dev.tsv", "古文\t今译\n"),
    ("fuxi", "dev.jsonl", "test.jsonl", _jsonl({"id": 1, "task": "BA", "input": "《史记》的作者是谁？", "output": "司马迁"})),
    ("cpdue", "dev.jsonl", "test.jsonl", _jsonl({"id": 1, "task": "CK", "question": "问", "options": ["甲", "乙", "丙"],
                                                 "answer": "A"})),
])
def test_wrong_encoding_quarantines_the_file_only(tmp_path, benchmark, bad, good, good_text):
    _write(tmp_path / bad, GBK)
    _write(tmp_path / good, good_text)
    result = _parse(benchmark, tmp_path)
    assert len(result.items) == 1 and result.items[0]["source_file"] == good
    (row,) = result.quarantine
    assert row["source_file"] == bad and row["source_locator"] == "file"
    assert "UTF-8" in row["reason"] or "utf-8" in row["reason"]


# --- BOM and CRLF are read like plain UTF-8 / LF ----------------------------------------------------

def test_bom_and_crlf_everywhere(tmp_path):
    bom = b"\xef\xbb\xbf"

    def crlf(text):
        return bom + text.replace("\n", "\r\n").encode("utf-8")

    _write(tmp_path / "wyweb" / "glner" / "dev.jsonl", crlf(_jsonl({"text": "孔子曰", "label": [[0, 2, "noun_other"]]})))
    _write(tmp_path / "wyweb" / "xuci" / "dev.tsv", crlf("为之\t为人\t0, 0\t0, 0\tt\n"))
    _write(tmp_path / "wyweb" / "irc" / "dev.json", crlf(json.dumps(
        [{"idiom": "守株待兔", "options": ["甲", "乙", "丙", "丁"], "label": 0, "origin": "宋人有耕者"}], indent=1)))
    _write(tmp_path / "fuxi" / "test.jsonl", crlf(_jsonl({"id": "a", "task": "IE", "input": "破釜沉舟", "output": "下定决心"})))
    _write(tmp_path / "cpdue" / "test.jsonl", crlf(_jsonl(
        {"id": "a", "task": "WS", "question": "不尽长江*来", "options": ["滚滚", "滔滔", "浩浩", "汩汩"], "answer": "A"})))
    wyweb = _parse("wyweb", tmp_path / "wyweb")
    assert not wyweb.quarantine
    assert {place(i): i["answer"] for i in wyweb.items} == {
        "wyweb/dev/glner/1": "[孔子]曰", "wyweb/dev/xuci/1": "A", "wyweb/dev/irc/0": "A"}
    assert _parse("fuxi", tmp_path / "fuxi").items[0]["answer"] == "下定决心"
    assert _parse("cpdue", tmp_path / "cpdue").items[0]["question"] == "不尽长江*来"


# --- bad JSON -----------------------------------------------------------------------------------------

def test_bad_json_array_is_one_row_bad_json_line_is_that_line(tmp_path):
    _write(tmp_path / "wyweb" / "fspc" / "dev.json", '[{"poem": "甲|乙|丙|丁",')
    _write(tmp_path / "wyweb" / "wywrc" / "dev.json", '{"article": "不是数组"}')
    _write(tmp_path / "wyweb" / "glner" / "dev.jsonl", _jsonl({"text": "孔子曰", "label": []}, '{"text": "坏', "[1, 2]"))
    wyweb = _parse("wyweb", tmp_path / "wyweb")
    reasons = {(q["source_file"], q["source_locator"]): q["reason"] for q in wyweb.quarantine}
    assert reasons[("fspc/dev.json", "file")].startswith("not valid JSON: ")
    assert reasons[("wywrc/dev.json", "file")] == "expected a JSON array of objects, not an object"
    assert reasons[("glner/dev.jsonl", "line 2")].startswith("not valid JSON: ")
    assert reasons[("glner/dev.jsonl", "line 3")] == "not a JSON object"
    assert [place(i) for i in wyweb.items] == ["wyweb/dev/glner/1"]

    _write(tmp_path / "fuxi" / "test.jsonl", _jsonl({"id": 1, "task": "BA", "input": "问", "output": "答"}, "{oops", "",
                                                     '"a string"'))
    fuxi = _parse("fuxi", tmp_path / "fuxi")
    assert len(fuxi.items) == 1 and fuxi.raw_counts["test.jsonl"] == 4
    assert [r.split(":")[0] for r in _reasons(fuxi)] == ["not valid JSON", "blank line", "not a JSON object"]


# --- wrong delimiter / missing columns ---------------------------------------------------------------

def test_wrong_delimiter_and_missing_columns(tmp_path):
    _write(tmp_path / "tlc" / "dev.tsv", "远古,先秦,天时不如地利。\n中古\t唐\t落霞与孤鹜齐飞。\n")
    _write(tmp_path / "xuci" / "dev.tsv", "为之\t为人\t0, 0\tt\n")
    _write(tmp_path / "punc" / "dev.tsv", "学而时习之 OOOO，\n")
    _write(tmp_path / "wywrc" / "dev.json", json.dumps([{"article": "文", "question": "问", "answer": "0",
                                                          "option0": "甲", "option1": "乙", "option2": "丙"}]))
    _write(tmp_path / "irc" / "dev.json", json.dumps([{"idiom": "守株待兔", "label": 0, "origin": "句"}]))
    result = _parse("wyweb", tmp_path)
    reasons = {(q["source_file"], q["source_locator"]): q["reason"] for q in result.quarantine}
    assert reasons == {
        ("tlc/dev.tsv", "line 1"): "expected 3 tab-separated fields, got 1",
        ("xuci/dev.tsv", "line 1"): "expected 5 tab-separated fields, got 4",
        ("punc/dev.tsv", "line 1"): "expected 2 tab-separated fields, got 1",
        ("wywrc/dev.json", "index 0"): "missing: option3",
        ("irc/dev.json", "index 0"): "options must be a list of 4 strings",
    }
    assert [place(i) for i in result.items] == ["wyweb/dev/tlc/2"]


def test_fuxi_and_cpdue_missing_fields(tmp_path):
    _write(tmp_path / "fuxi" / "test.jsonl", _jsonl(
        {"id": 1, "task": "ACRC", "input": "文", "output": "A"},                       # no options
        {"id": 2, "task": "ACT", "input": "温故而知新"},                               # no output
        {"task": "IE", "input": "破釜沉舟", "output": "决心"},                          # no id
        {"id": 4, "task": "XYZ", "input": "问", "output": "答"},                       # unknown task
        {"id": 5, "task": "CiG", "input": "词牌：忆江南", "output": "江南好"},           # no rules
    ))
    fuxi = _parse("fuxi", tmp_path / "fuxi")
    assert not fuxi.items
    assert _reasons(fuxi) == [
        "ACRC needs 'options': 4 non-empty strings", "missing or empty: output",
        "missing or invalid id (a non-empty string or integer without '/')",
        "task 'XYZ' is not one of the 21 Fùxì tasks", "CiG needs 'rules' with cipai, lines and rhymes"]
    _write(tmp_path / "cpdue" / "test.jsonl", _jsonl(
        {"id": 1, "task": "CK", "question": "问", "answer": "A"},
        {"id": 2, "task": "TH", "options": ["题材"] * 10, "answer": "A"},
        {"id": 3, "task": "AU", "group": "g", "part": "figure", "options": ["甲", "乙", "丙"], "answer": "A"},
    ))
    cpdue = _parse("cpdue", tmp_path / "cpdue")
    assert not cpdue.items
    assert _reasons(cpdue) == ["CK needs 'options': 3 non-empty strings", "missing or empty: content",
                               "missing or empty: line"]


# --- empty gold answers ---------------------------------------------------------------------------------

def test_empty_gold_is_quarantined(tmp_path):
    _write(tmp_path / "wyweb" / "wywmt" / "dev.tsv", "古文一\t\n古文二\t今译二\n")
    _write(tmp_path / "wyweb" / "wywrc" / "dev.json", json.dumps([
        {"article": "文", "question": "问", "type": 0, "answer": "3", "option0": "甲", "option1": "乙",
         "option2": "丙", "option3": ""},
        {"article": "文", "question": "问", "type": 0, "answer": "0", "option0": "甲", "option1": "乙",
         "option2": "丙", "option3": ""}]))
    _write(tmp_path / "wyweb" / "irc" / "dev.json", json.dumps(
        [{"idiom": "成语", "options": ["", "乙", "丙", "丁"], "label": 0, "origin": "句"}]))
    wyweb = _parse("wyweb", tmp_path / "wyweb")
    assert _reasons(wyweb) == ["the gold option D (option3) is empty", "the gold option A is empty",
                               "empty source or reference translation"]
    kept = {place(i): i for i in wyweb.items}
    assert set(kept) == {"wyweb/dev/wywrc/1", "wyweb/dev/wywmt/2"}
    assert kept["wyweb/dev/wywrc/1"]["metadata"]["empty_options"] == ["D"]  # an empty distractor is kept, flagged

    _write(tmp_path / "fuxi" / "test.jsonl", _jsonl({"id": 1, "task": "IE", "input": "破釜沉舟", "output": "  "}))
    assert _reasons(_parse("fuxi", tmp_path / "fuxi")) == ["missing or empty: output"]
    _write(tmp_path / "aceval" / "dev" / "geography.csv", ",Question,A,B,C,D,Answer,Explanation\n0,问,甲,乙,丙,丁,,\n")
    assert _reasons(_parse("aceval", tmp_path / "aceval")) == ["answer '' is not one of A-D"]


# --- duplicate ids ---------------------------------------------------------------------------------------

def test_duplicate_ids(tmp_path):
    row = {"id": "x", "task": "BA", "input": "《史记》的作者是谁？", "output": "司马迁"}
    _write(tmp_path / "fuxi" / "test.jsonl", _jsonl(row, row, {**row, "task": "BD"}))
    fuxi = _parse("fuxi", tmp_path / "fuxi")
    assert [i["item_id"] for i in fuxi.items] == ["fuxi/test/BA/x", "fuxi/test/BD/x"]
    assert _reasons(fuxi) == ["duplicate id x in task BA"]
    ck = {"id": "y", "task": "CK", "question": "问", "options": ["甲", "乙", "丙"], "answer": "A"}
    _write(tmp_path / "cpdue" / "test.jsonl", _jsonl(ck, ck))
    assert _reasons(_parse("cpdue", tmp_path / "cpdue")) == ["duplicate id y"]


# --- out-of-range labels -------------------------------------------------------------------------------

def test_out_of_range_labels(tmp_path):
    root = tmp_path / "wyweb"
    _write(root / "tlc" / "dev.tsv", "上古\t先秦\t文\n")
    _write(root / "gjc" / "dev.tsv", "经藏\t文\n")
    _write(root / "xuci" / "dev.tsv", "为之\t为人\t0, 0\t0, 0\tx\n为之\t为人\t0, 9\t0, 0\tt\n")
    _write(root / "punc" / "dev.tsv", "学而\tO#\n学而\tO\n")
    _write(root / "glner" / "dev.jsonl", _jsonl({"text": "孔子曰", "label": [[0, 9, "noun_other"]]},
                                              {"text": "孔子曰", "label": [[0, 2, "person"]]},
                                              {"text": "孔子曰", "label": [[0, 2, "noun_other"], [1, 3, "noun_other"]]}))
    _write(root / "fspc" / "dev.json", json.dumps([{"poem": "甲|乙|丙|丁", "sentiments": {"holistic": "happy"}}]))
    _write(root / "wywrc" / "dev.json", json.dumps([{"article": "文", "question": "问", "answer": "4", "option0": "甲",
                                                    "option1": "乙", "option2": "丙", "option3": "丁"}]))
    _write(root / "irc" / "dev.json", json.dumps([{"idiom": "成语", "options": ["甲", "乙", "丙", "丁"], "label": 4},
                                                 {"idiom": "成语", "options": ["甲", "乙", "丙", "丁"], "label": True}]))
    result = _parse("wyweb", root)
    assert not result.items
    assert _reasons(result) == [
        "labels ['#'] not in O。？！，、；：|", "1 labels for 2 characters",
        "entity 0-9 is outside the text (3 chars)", "entity type 'person' not in ['noun_bookname', 'noun_other']",
        "overlapping entities",
        "neither field is one of the GJC labels ['儒藏', '诗藏', '佛藏', '易藏', '医藏', '艺藏', '子藏', '集藏', '道藏', '史藏']",
        "holistic sentiment 'happy' not in ['negative', 'implicit negative', 'neutral', 'implicit positive', 'positive']",
        "period label '上古' not in ['远古', '中古', '近古']",
        "label 'x' is not t or f", "span 0-9 is outside sentence A (2 chars)",
        "answer '4' is not 0-3",
        "label 4 is not an integer 0-3", "label True is not an integer 0-3",
    ]
    _write(tmp_path / "fuxi" / "test.jsonl", _jsonl(
        {"id": 1, "task": "IRC", "input": "问", "options": ["甲", "乙", "丙", "丁"], "output": "E"},
        {"id": 2, "task": "BCC", "input": "《史记》", "output": "经藏"}))
    assert _reasons(_parse("fuxi", tmp_path / "fuxi")) == [
        "output 'E' is not an option letter A-D",
        "output '经藏' is not one of the ten collections " + str(BCC_LABELS)]
    _write(tmp_path / "cpdue" / "test.jsonl", _jsonl(
        {"id": 1, "task": "CK", "question": "问", "options": ["甲", "乙", "丙"], "answer": "D"},
        {"id": 2, "task": "ST", "content": "词", "answer": "I"}))
    assert _reasons(_parse("cpdue", tmp_path / "cpdue")) == ["answer 'D' is not one of ABC",
                                                              "answer 'I' is not one of ABCDEFGH"]


# --- missing paths, empty layouts, adapter failures ----------------------------------------------------

def test_a_missing_path_is_the_sources_error_not_a_row(tmp_path):
    with pytest.raises(SourceError, match=r"^wyweb: path: .*nowhere does not exist; expected a folder of "):
        parse_source(SourceSpec("wyweb", tmp_path / "nowhere", "v"))


def test_a_folder_without_the_layout_says_so(tmp_path):
    _write(tmp_path / "notes.txt", "nothing here")
    for benchmark in benchmarks.names():   # every card declares its layout
        with pytest.raises(SourceError, match=f"holds no {benchmark} file; expected "):
            parse_source(SourceSpec(benchmark, tmp_path, "v"))
        assert parse_source(SourceSpec(benchmark, tmp_path, "v", allow_empty=True)).raw_counts == {}


def test_a_source_without_rows_fails_unless_it_may_be_empty(tmp_path):
    _write(tmp_path / "test.jsonl", "")
    with pytest.raises(SourceError, match="yields no rows .* set allow_empty: true"):
        parse_source(SourceSpec("fuxi", tmp_path, "v"))
    assert not parse_source(SourceSpec("fuxi", tmp_path, "v", allow_empty=True)).rows()


def test_a_reader_failure_is_contained_to_its_row(tmp_path, monkeypatch):
    from pipeline.benchmarks.wyweb import adapter as wyweb

    _write(tmp_path / "tlc" / "dev.tsv", "远古\t先秦\t天时不如地利。\n中古\t唐\t落霞与孤鹜齐飞。\n")
    _write(tmp_path / "wywmt" / "dev.tsv", "古文\t今译\n")

    def broken(line):
        if line.startswith("中古"):
            raise RuntimeError("reader bug")
        return wyweb._tlc(line)

    monkeypatch.setitem(wyweb.TASKS, "tlc", (("tsv",), "tsv", broken))
    result = _parse("wyweb", tmp_path)
    assert [place(i) for i in result.items] == ["wyweb/dev/tlc/1", "wyweb/dev/wywmt/1"]
    assert [(q["source_locator"], q["reason"]) for q in result.quarantine] == [
        ("line 2", "could not read row: RuntimeError: reader bug")]
    assert result.raw_counts["tlc/dev.tsv"] == 2 and not result.incomplete


def test_a_parser_failure_outside_rows_fails_the_reconciliation(tmp_path, monkeypatch):
    """A bug after the rows were read (here: merging WYWMT's repeated sentences) leaves one file row,
    but the file's rows stay counted and the file is listed as incomplete: the check cannot pass."""
    from pipeline.benchmarks.wyweb import adapter as wyweb

    _write(tmp_path / "wywmt" / "dev.tsv", "古文一\t今译一\n古文二\t今译二\n")
    _write(tmp_path / "tlc" / "dev.tsv", "远古\t先秦\t天时不如地利。\n")

    def merge_bug(items):
        raise RuntimeError("merge bug")

    monkeypatch.setattr(wyweb, "_merge_references", merge_bug)
    result = parse_source(SourceSpec("wyweb", tmp_path, "v"))
    assert [place(i) for i in result.items] == ["wyweb/dev/tlc/1"]
    (row,) = result.quarantine
    assert (row["source_file"], row["source_locator"]) == ("wywmt/dev.tsv", "file")
    assert result.raw_counts["wywmt/dev.tsv"] == 2              # rows, not one per file
    assert result.incomplete == {"wywmt/dev.tsv": "could not parse file: RuntimeError: merge bug"}


def test_a_quarantined_row_keeps_a_bounded_excerpt():
    """`raw` holds a row up to RAW_EXCERPT_BYTES whole; a longer one its first RAW_EXCERPT_BYTES
    (never half a character), its length and its sha256."""
    import hashlib

    from pipeline.sources.text import RAW_EXCERPT_BYTES, raw_text

    short = {"question": "鹅" * 1000}
    assert raw_text(short) == json.dumps(short, ensure_ascii=False)
    row = "鹅" * 5000   # 15,000 bytes: the cut falls inside a character
    cut = raw_text(row)
    head, _, tail = cut.partition("\n")
    assert head == "鹅" * (RAW_EXCERPT_BYTES // 3) and len(cut.encode("utf-8")) < RAW_EXCERPT_BYTES + 300
    assert "5,000 characters (15,000 bytes UTF-8)" in tail and hashlib.sha256(row.encode()).hexdigest() in tail
    assert raw_text("\ud800" + "x" * 5000).startswith("\\ud800x")   # lone surrogates still escaped first


def test_a_long_records_excerpt_is_still_json_and_placed_by_its_task():
    """A quarantined record over RAW_EXCERPT_BYTES keeps its keys and short values as JSON (its long
    texts cut), so a card's `quarantine:` layout still reads its task from `raw`."""
    import hashlib

    from pipeline.aggregate import place_quarantine
    from pipeline.sources.text import RAW_EXCERPT_BYTES, raw_text

    record = {"task": "CG", "id": "x-1", "input": "鹅" * 50_000}
    kept = raw_text(record)
    whole = json.dumps(record, ensure_ascii=False)
    assert len(kept.encode("utf-8")) <= RAW_EXCERPT_BYTES + 300
    assert json.JSONDecoder().raw_decode(kept)[0] == {"task": "CG", "id": "x-1", "input": "鹅" * 1000 + "…"}
    assert hashlib.sha256(whole.encode()).hexdigest() in kept and f"{len(whole):,} characters" in kept
    row = {"benchmark": "fuxi", "source_file": "test.jsonl", "source_locator": "line 1", "raw": kept}
    (placed,) = place_quarantine({"file": "{split}.jsonl", "task": "task"}, [row], {"CG"})
    assert placed["task"] == "CG" and placed["split"] == "test"
