"""WYWEB data the paper would not score as it stands: one WYWMT source sentence with several
translations becomes one multi-reference item, and IRC / WYWRC items whose options cannot be
answered as asked (scraped HTML, an empty option, the gold repeated) are flagged, reported and
left out of evaluation unless the sources file keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import upstream, write_yaml

from pipeline.config import ConfigError, SourceSpec, load_sources
from pipeline.dedup import cluster, conflicting_clusters
from pipeline.dedup.keys import match_keys
from pipeline.dedup.policy import option_quality_flags, quality_flags, quality_items, quality_report
from pipeline.ingest import parse_source
from pipeline.scoring.rules import score_response
from pipeline.sources.accounting import rows_accounted
from pipeline.standardize import standardize

# WYWMT as published: classical<TAB>modern, CRLF, no final newline.
WYWMT_LINES = [
    "子曰：\t孔子说：",                                          # 1  first of a cluster
    "学而时习之，不亦说乎？\t学习了又按时温习，不也是很愉快吗？",      # 2  repeated below with the same translation
    "子曰：\t孔子说：",                                          # 3  the same pair again: merged into 1
    "子曰:\t孔子说道：",                                         # 4  other punctuation, other translation: into 1
    "学而时习之，不亦说乎？\t学习了又按时温习，不也是很愉快吗？",      # 5  an exact copy of 2: left to dedup
    "温故而知新",                                                # 6  one field: quarantined
    "三人行，必有我師焉。\t几个人一起走路，其中一定有可以做我老师的人。",  # 7  traditional 師 ...
    "三人行，必有我师焉。\t三个人同行，其中必定有人可以做我的老师。",    # 8  ... and simplified: one sentence
    "子曰：\t孔子说道：",                                        # 9  a translation already in 1's references
]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    return path


def place(item: dict) -> str:
    """An item's place in its file, wyweb/<split>/<task>/<line or index>: WYWEB ids are hashes of
    the text, and these tests name items by the row they come from."""
    return f"wyweb/{item['split']}/{item['task']}/{item['source_locator'].split()[-1]}"


def _json_array(rows: list[dict]) -> str:
    return json.dumps(rows, ensure_ascii=False, indent=1)


@pytest.fixture
def wywmt(tmp_path):
    _write(tmp_path / "wywmt" / "dev.tsv", "\n".join(WYWMT_LINES))
    result = parse_source(SourceSpec("wyweb", tmp_path, "v"))
    return result, {place(i): i for i in result.items}


# --- WYWMT: one item per source sentence, every translation a reference -------------------------

def test_a_sentence_with_several_translations_is_one_item_with_the_first_rows_id(wywmt):
    result, items = wywmt
    assert [i["item_id"] for i in items.values()] == [i["item_id"] for i in result.items]
    assert list(items) == ["wyweb/dev/wywmt/1", "wyweb/dev/wywmt/2", "wyweb/dev/wywmt/5", "wyweb/dev/wywmt/7"]
    first = items["wyweb/dev/wywmt/1"]
    assert (first["context"], first["source_locator"]) == ("子曰：", "line 1")
    assert first["answer"] == "孔子说：" and first["references"] == ["孔子说道："]  # each translation once
    assert [m["source_locator"] for m in first["metadata"]["merged_rows"]] == ["line 3", "line 4", "line 9"]
    assert first["metadata"]["merged_rows"][1] == {"source_locator": "line 4", "context": "子曰:",
                                                   "answer": "孔子说道："}
    script = items["wyweb/dev/wywmt/7"]
    assert script["answer"].startswith("几个人") and script["references"] == ["三个人同行，其中必定有人可以做我的老师。"]
    # the same translation twice is a plain duplicate, not a second reference: both rows stay items
    assert items["wyweb/dev/wywmt/2"]["references"] == items["wyweb/dev/wywmt/5"]["references"] == []
    assert "merged_rows" not in items["wyweb/dev/wywmt/2"]["metadata"]


def test_merged_rows_reconcile(wywmt):
    result, items = wywmt
    assert result.raw_counts == {"wywmt/dev.tsv": 9}
    assert len(items) + len(result.quarantine) == 5   # 4 rows merged into items, 1 quarantined
    assert [q["source_locator"] for q in result.quarantine] == ["line 6"]
    assert rows_accounted(result.rows()) == result.raw_counts
    # every raw line is in exactly one place
    located = [q["source_locator"] for q in result.quarantine]
    for item in items.values():
        located += [item["source_locator"]] + [m["source_locator"] for m in item["metadata"].get("merged_rows", [])]
    assert sorted(located, key=lambda s: int(s.split()[1])) == [f"line {n}" for n in range(1, 10)]


def test_a_lost_row_fails_the_reconciliation(wywmt):
    result, _ = wywmt
    result.items[0]["metadata"]["merged_rows"].pop()
    assert rows_accounted(result.rows()) != result.raw_counts


def test_merged_items_leave_no_conflicting_gold_cluster(wywmt):
    result, by_place = wywmt
    items, _ = standardize(result.items)
    rows, _ = cluster(items)
    assert conflicting_clusters(items, rows) == []
    names = {i["item_id"]: p for p, i in by_place.items()}
    assert {names[r["item_id"]] for r in rows} == {"wyweb/dev/wywmt/2", "wyweb/dev/wywmt/5"}  # the exact copy


def test_translation_is_scored_against_every_reference(wywmt):
    _, items = wywmt
    item = items["wyweb/dev/wywmt/7"]
    second = item["references"][0]
    scored = score_response(item, second)
    assert scored["score"] == pytest.approx(1.0) and scored["details"]["bleu"] == pytest.approx(100.0)
    only_first = score_response({**item, "references": []}, second)
    assert only_first["score"] < 0.5 and only_first["details"]["bleu"] < 50
    # corpus statistics: with the matching reference every n-gram of the hypothesis counts
    bleu_stats = scored["details"]["bleu_stats"]
    assert bleu_stats[2:6] == bleu_stats[6:10]          # matches == totals for 1- to 4-grams
    assert only_first["details"]["bleu_stats"][2] < bleu_stats[2]


# --- IRC and WYWRC: options that cannot be answered as asked ------------------------------------

IRC_ROWS = [
    {"idiom": "守株待兔", "options": ["比喻做事勤恳。", "形容农夫耐心。", "比喻死守狭隘经验，不知变通。", "比喻把握时机。"],
     "label": 2, "origin": "因释其耒而守株，冀复得兔。"},
    # options scraped from a dictionary page (as irc/755 in the published dev file)
    {"idiom": "刻舟求剑", "options": ['<div class="biaoti">出处</div>', '<div class="biaoti">解释</div>',
                                      '<div class="biaoti">拼音</div>', '<div class="biaoti">用法</div>'],
     "label": 1, "origin": "楚人有涉江者，其剑自舟中坠于水。"},
    {"idiom": "画蛇添足", "options": ["形容画技精湛。", "比喻做了多余的事，反而弄巧成拙。", " ", "比喻有始有终。"],
     "label": 1, "origin": "蛇固无足，子安能为之足？"},
    {"idiom": "完璧归赵", "options": ["比喻把原物完好地归还本人。", "形容赵国强盛。", "比喻交换珍宝。", "比喻把原物完好地归还本人。"],
     "label": 3, "origin": "城不入，臣请完璧归赵。"},
    # two equal distractors: one right answer still, so not a quality flag
    {"idiom": "对牛弹琴", "options": ["比喻对不懂道理的人讲道理。", "不知道", "不知道", "形容琴艺高超。"],
     "label": 0, "origin": "公明仪为牛弹清角之操。"},
    # a `<` standing for a bracket (an OCR slip) is not markup
    {"idiom": "扬子之论", "options": ["扬子<雄）的性混论", "性善论", "性恶论", "性三品说"],
     "label": 0, "origin": "扬子之言性也。"},
    {"idiom": "成语", "options": ["", "乙", "丙", "丁"], "label": 0, "origin": "句"},   # empty gold: quarantined
]
WYWRC_ROWS = [
    {"article": "樊宏字靡卿。", "question": "下列概括和分析，不正确的一项是", "type": 0, "answer": "2",
     "option0": "甲", "option1": "乙", "option2": "丙", "option3": ""},
    {"article": "贾生名谊。", "question": "下列解释，不正确的一项是", "type": 3, "answer": "0",
     "option0": "甲", "option1": "乙", "option2": "丙", "option3": "丁"},
]
EXPECTED_FLAGS = {"wyweb/dev/irc/0": [], "wyweb/dev/irc/1": ["html_option"], "wyweb/dev/irc/2": ["empty_option"],
                  "wyweb/dev/irc/3": ["gold_repeated"], "wyweb/dev/irc/4": [], "wyweb/dev/irc/5": [],
                  "wyweb/dev/wywrc/0": ["empty_option"], "wyweb/dev/wywrc/1": []}


@pytest.fixture
def mcq_root(tmp_path):
    root = tmp_path / "wyweb"
    _write(root / "irc" / "dev.json", _json_array(IRC_ROWS))
    _write(root / "wywrc" / "dev.json", _json_array(WYWRC_ROWS))
    return root


@pytest.fixture
def mcq(mcq_root):
    result = parse_source(SourceSpec("wyweb", mcq_root, "v"))
    assert rows_accounted(result.rows()) == result.raw_counts
    assert [q["reason"] for q in result.quarantine] == ["the gold option A is empty"]
    return {place(i): i for i in result.items}


def test_options_are_flagged_in_metadata(mcq):
    assert {i: it["metadata"]["quality_flags"] for i, it in mcq.items()} == EXPECTED_FLAGS
    assert {i: quality_flags(it) for i, it in mcq.items()} == EXPECTED_FLAGS
    assert mcq["wyweb/dev/irc/4"]["metadata"]["duplicate_options"] is True
    assert mcq["wyweb/dev/irc/2"]["metadata"]["empty_options"] == ["C"]


def test_flags_need_the_gold_and_any_markup():
    assert option_quality_flags(["甲", "<br/>乙", "甲", ""], "A") == ["html_option", "empty_option", "gold_repeated"]
    assert option_quality_flags(["甲", "乙&nbsp;", "丙", "丁"], "A") == ["html_option"]
    assert option_quality_flags(["甲", "乙", "甲", "丁"], "B") == []        # a repeated distractor
    assert option_quality_flags(["甲", "乙", "甲", "丁"], None) == []        # no gold: nothing to repeat


def test_the_report_counts_items_per_flag_with_the_first_ids(mcq):
    ids = {p: i["item_id"] for p, i in mcq.items()}
    assert quality_report(list(mcq.values())) == {
        "html_option": {"items": 1, "first ids": [ids["wyweb/dev/irc/1"]]},
        "empty_option": {"items": 2, "first ids": [ids["wyweb/dev/wywrc/0"], ids["wyweb/dev/irc/2"]]},  # file order
        "gold_repeated": {"items": 1, "first ids": [ids["wyweb/dev/irc/3"]]},
    }


def test_flagged_items_are_left_out_unless_kept(mcq):
    items = list(mcq.values())
    flagged = {i for i, flags in EXPECTED_FLAGS.items() if flags}
    assert {place(it) for it in quality_items(items, {})} == set(mcq) - flagged     # default: drop
    assert {place(it) for it in quality_items(items, {"wyweb": "drop"})} == set(mcq) - flagged
    assert quality_items(items, {"wyweb": "keep"}) == items
    with pytest.raises(ValueError, match="quality policy"):
        quality_items(items, {"wyweb": "ignore"})


def test_a_correction_that_repairs_the_options_brings_the_item_back(mcq):
    from pipeline.corrections import Correction, apply_corrections

    item = mcq["wyweb/dev/irc/3"]
    fix = Correction(item["item_id"], "choices", item["choices"],
                     ["比喻把原物完好地归还本人。", "形容赵国强盛。", "比喻交换珍宝。", "比喻借东西给别人。"],
                     "the gold text was repeated as option D", "2026-01-01", "test:1")
    (corrected,), audit = apply_corrections([item], [fix])
    assert audit[0]["status"] == "applied"
    assert quality_flags(corrected) == [] and quality_items([corrected], {}) == [corrected]


def test_items_without_option_checks_have_no_flags():
    assert quality_flags({"item_id": "x", "benchmark": "aceval", "choices": ["", "乙"], "answer": "B",
                          "metadata": {}}) == []


# --- the sources file: quality: drop | keep ----------------------------------------------------

def test_quality_is_read_top_level_and_per_benchmark(tmp_path):
    path = write_yaml(tmp_path / "sources.yaml", "benchmarks:\n  wyweb: {path: w, version: v}\n"
                                                 "  aceval: {path: a, version: v, quality: keep}\n")
    assert {n: s.quality for n, s in load_sources(path).items()} == {"wyweb": "drop", "aceval": "keep"}
    path = write_yaml(tmp_path / "sources.yaml", "quality: keep\nbenchmarks:\n  wyweb: {path: w, version: v}\n"
                                                 "  aceval: {path: a, version: v, quality: drop}\n")
    assert {n: s.quality for n, s in load_sources(path).items()} == {"wyweb": "keep", "aceval": "drop"}


@pytest.mark.parametrize("text, where", [
    ("quality: yes\nbenchmarks:\n  wyweb: {path: w, version: v}\n", "sources.yaml: quality"),
    ("benchmarks:\n  wyweb: {path: w, version: v, quality: flag}\n", "sources.yaml: benchmarks.wyweb: quality"),
])
def test_a_bad_quality_value_is_a_one_line_error(tmp_path, text, where):
    with pytest.raises(ConfigError) as error:
        load_sources(write_yaml(tmp_path / "sources.yaml", text))
    message = str(error.value)
    assert "\n" not in message and where in message and "must be one of drop, keep" in message


@pytest.mark.parametrize("keep", [False, True])
def test_prompts_leave_flagged_items_out_by_default(workdir, monkeypatch, mcq_root, keep):
    """The graph: the data_quality check warns, and the prompts asset asks no flagged item unless
    the sources file says quality: keep."""
    import pyarrow.parquet as pq

    from pipeline.runner import run_pipeline

    option = "quality: keep\n" if keep else ""
    sources = write_yaml(workdir / "sources.yaml", f"{option}benchmarks:\n  wyweb: {{path: {mcq_root}, version: v}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml",
                                                        "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
    log: list[str] = []
    summary = run_pipeline(["wyweb"], ["oracle"], selection="group:sources or group:items", log=log.append)
    assert summary.ok
    assert "  check data_quality on items [wyweb] did not pass" in log
    meta = summary.metadata("prompts", "wyweb")
    assert meta["items left out: data quality"] == (0 if keep else 4)
    assert meta["items left out: duplicates"] == 0
    names = {i["item_id"]: place(i) for i in parse_source(SourceSpec("wyweb", mcq_root, "v")).items}
    lake = workdir / "lake"
    prompts = lake / "prompts" / "wyweb.parquet"   # per benchmark partition; one file before partitions
    prompts = prompts if prompts.is_file() else lake / "prompts.parquet"
    asked = {names[row["item_id"]] for row in pq.read_table(prompts).to_pylist()}
    flagged = {i for i, flags in EXPECTED_FLAGS.items() if flags}
    assert asked == (set(EXPECTED_FLAGS) if keep else set(EXPECTED_FLAGS) - flagged)


# --- the published dev files (skipped when they are not on this machine) --------------------------

def _parse_task(task: str, filename: str) -> tuple[list[dict], list[dict]]:
    """The items and quarantine rows of one published file (its split of every task is read)."""
    path = upstream("wyweb", task, filename)
    result = parse_source(SourceSpec("wyweb", path.parent.parent, "public", splits=(path.stem,)))
    assert rows_accounted(result.rows()) == result.raw_counts
    shown = f"{task}/{filename}"
    return ([i for i in result.items if i["source_file"] == shown],
            [q for q in result.quarantine if q["source_file"] == shown])


def test_published_wywrc_has_one_flagged_item():
    items, _ = _parse_task("wywrc", "dev.json")
    assert len(items) == 432
    by_id = {place(i): i for i in items}
    assert quality_report(items) == {"empty_option": {"items": 1, "first ids": [by_id["wyweb/dev/wywrc/69"]["item_id"]]}}
    assert by_id["wyweb/dev/wywrc/69"]["metadata"]["empty_options"] == ["D"]
    # 不知道 twice among the distractors: still one right answer, not flagged
    assert by_id["wyweb/dev/wywrc/426"]["metadata"]["duplicate_options"] is True
    assert quality_flags(by_id["wyweb/dev/wywrc/426"]) == []


def test_published_irc_flags():
    items, quarantine = _parse_task("irc", "dev.json")
    assert len(items) + len(quarantine) == 5000
    (empty_gold,) = quarantine   # the one item whose gold option is empty
    assert empty_gold["reason"].startswith("the gold option")
    report = quality_report(items, first=len(items))
    (irc_755,) = [i["item_id"] for i in items if place(i) == "wyweb/dev/irc/755"]
    assert irc_755 in report["html_option"]["first ids"]
    # as measured on this file (WYWEB 34bb6fd): HTML debris in 9 items (in options or in the source
    # sentence), 10 empty options (one of them gold), 10 items whose gold text is also a distractor
    assert report["gold_repeated"]["items"] == 10
    assert report["html_option"]["items"] <= 9
    assert report["empty_option"]["items"] <= sum(c.strip() == "" for i in items for c in i["choices"]) <= 9


def test_published_wywmt_merges_every_sentence_with_several_translations():
    items, quarantine = _parse_task("wywmt", "dev.tsv")
    merged = [i for i in items if i["metadata"].get("merged_rows")]
    assert len(items) + sum(len(i["metadata"]["merged_rows"]) for i in merged) + len(quarantine) == 19981
    # independently: the lines grouped by the match key of their source, with >= 2 translations
    lines = upstream("wyweb", "wywmt", "dev.tsv").read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
    pairs = [(n, *line.split("\t")) for n, line in enumerate(lines, start=1) if line.count("\t") == 1]
    pairs = [(n, s.strip(), t.strip()) for n, s, t in pairs if s.strip() and t.strip()]
    groups: dict[str, list[tuple[int, str]]] = {}
    for (n, _, target), key in zip(pairs, match_keys([s for _, s, _ in pairs])):
        if key:
            groups.setdefault(key, []).append((n, target))
    several = {f"wyweb/dev/wywmt/{g[0][0]}": g for g in groups.values() if len({t for _, t in g}) > 1}
    assert {place(i) for i in merged} == set(several)
    for item in merged:
        group = several[place(item)]
        assert [item["answer"], *item["references"]] == list(dict.fromkeys(t for _, t in group))
    # what dedup still reports is near-duplicate sentences, never one sentence with two golds
    standardized, _ = standardize(items)
    rows, _ = cluster(standardized)
    keys = dict(zip([i["item_id"] for i in standardized], match_keys([i["context"] for i in standardized])))
    for conflict in conflicting_clusters(standardized, rows):
        assert len({keys[i] for i in conflict["item_ids"]}) == len(conflict["item_ids"]), conflict
