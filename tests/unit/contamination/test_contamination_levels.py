"""The verdict's levels on a small corpus written for it: a quotation of an item's passage is
source_only, a copy of its own wording is item, its question with its answer item_with_answer; the
benchmark's template wording and passages shared by several items are never the item's own; a
multiple-choice item's options quoted from different documents are not a copy of it; a reference
corpus turns what it holds into source. The texts are wenheng's own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.engines import scan_corpus
from pipeline.contamination.index import SOURCE, SPECIFIC, TEMPLATE, TEMPLATE_MIN_ITEMS, build_index
from pipeline.contamination.overlap import CONTAMINATED, overlap_rows
from pipeline.contamination.passages import classical, question_passages

N = 13
PASSAGE = "山中多古木，春来花满径，溪水绕舍而流，主人每晨起扫叶煮茶，客至则相与论文，日暮乃散"
QUESTION = "文中主人每日清晨所做的两件事情分别是什么，这表现了他怎样的生活态度"
ANSWER = "主人清晨起来扫落叶并且煮茶，表现出他闲适淡泊而又自得其乐的隐居生活态度"
STEM = "下列诗句中所描写的景物和季节与其他三项不相同的一项是哪一个选项呢"
OPTIONS = ["孤舟系在寒江畔而北风吹雪满前山", "野塘春水绿如蓝而新燕衔泥过小桥",
           "落叶满阶无人扫而秋声萧瑟入窗来", "荷花映日红千里而蝉鸣高柳午阴浓"]
OTHER_OPTIONS = ["远山含黛而近水含烟晓来雨过天初晴", "杏花村外酒旗斜而牧童骑牛唱晚归",
                 "霜叶红于二月花而寒鸦数点落平沙", "梅枝横斜映清浅而暗香浮动月黄昏"]
TEMPLATE_STEM = "请把下面这段文言文翻译成现代汉语并注意其中实词和虚词的准确意思："
QUOTED_LINE = "古道西来马蹄疾而长亭送别柳丝垂"


def item(item_id: str, question: str, answer: str = "", context: str | None = None, **extra) -> dict:
    return {"item_id": item_id, "benchmark": "mine", "task": "t", "format": "open_qa", "context": context,
            "question": question, "choices": [], "answer": answer, "references": []} | extra


ITEMS = [
    item("quoted", QUESTION, ANSWER, context=PASSAGE),
    item("copied", "庭前老梅一株，岁寒而花愈繁，主人爱之，每雪后必携酒独坐其下终日不去，问主人为何独爱此梅",
         "因为梅花耐寒而愈开愈盛，象征坚贞不屈的品格，主人借梅自励"),
    item("answered", "那位老渔翁为什么每天傍晚都要在江边独自垂钓直到月亮升起才回家去呢",
         "老渔翁并不在意能否钓到鱼，而是喜爱江上月色的清幽，借垂钓来寄托超然物外的心境"),
    item("mcq-spread", STEM, "B", format="mcq_single", choices=OPTIONS),
    item("mcq-copied", "以下几句写景的诗句当中哪一句所写的时令与其余各句明显不同呢", "C", format="mcq_single", choices=OTHER_OPTIONS),
    item("quotes-a-line", f"{QUOTED_LINE}，这两句诗中的柳丝这一意象通常用来表达什么样的情感", "依依惜别之情"),
    *(item(f"template-{k}", TEMPLATE_STEM, answer)    # the same stem, answers too short for an n-gram
      for k, answer in enumerate(["甲", "乙", "丙", "丁"][:TEMPLATE_MIN_ITEMS])),
    item("shared-1", PASSAGE[:30] + "一句中扫字的意思是什么呢请简要回答", "打扫"),
    item("shared-2", PASSAGE[:30] + "一句中论文二字在这里应当怎样理解", "讨论文章"),
]
DOCS = [
    {"id": "poem-page", "text": f"读书笔记：{PASSAGE}。此文清雅可诵。"},                       # quotes "quoted"
    {"id": "copy", "text": "练习题：" + ITEMS[1]["question"]},                                   # "copied", no answer
    {"id": "qa", "text": f"问：{ITEMS[2]['question']}\n答：{ITEMS[2]['answer']}"},               # with the answer
    *({"id": f"anthology-{k}", "text": f"诗选其{k}：{o}。"} for k, o in enumerate(OPTIONS)),     # options apart
    {"id": "exam", "text": "期中测验\n" + ITEMS[4]["question"] + "\n"
                           + "\n".join(f"{'ABCD'[k]}．{o}" for k, o in enumerate(ITEMS[4]["choices"]))},
    {"id": "poetry", "text": f"送别诗一首：{QUOTED_LINE}，此情谁与共。"},                       # the quoted line
    {"id": "templates", "text": TEMPLATE_STEM * 3},
]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("levels")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    reference = root / "reference.jsonl"
    reference.write_text(json.dumps({"id": "r", "text": f"古人诗云：{QUOTED_LINE}。"}, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    spec = CorpusSpec(paths=[str(corpus)], fields=["text"], id_field="id", version="1")
    ref = CorpusSpec(paths=[str(reference)], fields=["text"], id_field="id", version="1", reference=True)
    index = build_index(ITEMS, N)
    scan = scan_corpus(spec, "levels", index, root / "cache", log=lambda line: None)
    held = scan_corpus(ref, "ref", index, root / "cache", log=lambda line: None).matches["hash"].to_numpy()
    return {"index": index,
            "rows": {r["item_id"]: r for r in overlap_rows(index, scan, "levels", spec)},
            "with_reference": {r["item_id"]: r for r in overlap_rows(index, scan, "levels", spec, reference=held)}}


def kinds_of(index, item_id: str) -> set[int]:
    i = [it["item_id"] for it in index.items].index(item_id)
    return set(index.gram_kind[index.gram_item == i].tolist())


def test_kinds_template_shared_passage_context_and_own_wording(scanned):
    index = scanned["index"]
    assert kinds_of(index, "template-0") == {TEMPLATE}          # the stem four items share, and no more
    assert SOURCE in kinds_of(index, "shared-1") and SPECIFIC in kinds_of(index, "shared-1")
    assert kinds_of(index, "quoted") == {SOURCE, SPECIFIC}      # its context, and its question and answer
    # template n-grams are never looked up in a corpus
    template = index.gram_hash[index.gram_kind == TEMPLATE]
    assert len(template) and not np.isin(template, index.hashes).any()


def test_a_quotation_of_the_passage_is_source_only(scanned):
    row = scanned["rows"]["quoted"]
    assert row["level"] == "source_only" and row["contaminated"] is False
    assert row["source_share"] == 1.0 and row["specific_matched"] == 0
    assert row["source_doc"] == "poem-page"


def test_a_copy_of_the_question_is_item_and_with_its_answer_item_with_answer(scanned):
    copied, answered = scanned["rows"]["copied"], scanned["rows"]["answered"]
    assert copied["level"] == "item" and copied["input_flagged"] and copied["input_document_share"] == 1.0
    assert copied["specific_doc"] == "copy" and copied["answer_doc"] is None
    assert answered["level"] == "item_with_answer" and answered["answer_doc"] == "qa"
    assert {copied["level"], answered["level"]} <= set(CONTAMINATED)


def test_options_quoted_in_different_documents_are_not_a_copy_of_the_question(scanned):
    spread, copied = scanned["rows"]["mcq-spread"], scanned["rows"]["mcq-copied"]
    assert spread["input_specific_matched"] > 0 and spread["input_document_share"] < 0.5
    assert spread["level"] == "clean" and spread["contaminated"] is False
    assert copied["level"] == "item" and copied["specific_doc"] == "exam"
    assert spread["label_document_share"] is None     # a multiple-choice label is one of the options


def test_template_only_items_have_no_verdict(scanned):
    row = scanned["rows"]["template-1"]
    assert row["level"] == "too_short" and row["status"] == "too_short" and row["contaminated"] is None
    assert row["template_ngrams"] > 0 and row["specific_ngrams"] == 0


def test_a_reference_corpus_makes_what_it_holds_source(scanned):
    alone, referenced = scanned["rows"]["quotes-a-line"], scanned["with_reference"]["quotes-a-line"]
    assert alone["specific_matched"] > 0
    assert referenced["source_matched"] == alone["specific_matched"]
    assert referenced["specific_ngrams"] == alone["specific_ngrams"] - referenced["source_ngrams"]
    assert not referenced["contaminated"]
    # what the reference does not hold stays as it was
    assert scanned["with_reference"]["copied"]["level"] == "item"


@pytest.mark.parametrize(("question", "passage"), [
    ("把文言文翻译为白话文：\n" + PASSAGE, PASSAGE),
    ("题目：山居\n作者：某人\n内容：" + PASSAGE + "\n请对这首作品进行赏析。", PASSAGE),
    ("文言文阅读理解。\n" + PASSAGE + "\n主人每天早上做什么？", PASSAGE),
    (PASSAGE + "。上面句子中“扫”的意思是：\nA、打扫  B、扫视", PASSAGE),
    ("“" + QUOTED_LINE + "”一句表达了什么？", QUOTED_LINE),
    (PASSAGE + "\n问题：主人每天早上做什么？", PASSAGE),
])
def test_question_layouts_give_their_passage(question, passage):
    assert any(passage in found for found in question_passages(question))   # punctuation aside


def test_option_lines_and_the_last_question_are_not_passage():
    found = question_passages("阅读下面的文字。\n" + PASSAGE + "\n主人每天早上做什么？\nA、煮茶\nB、读书")
    assert PASSAGE in found and not any("主人每天早上" in f or f.startswith("A、") for f in found)


def test_a_card_can_name_tasks_whose_question_or_answer_is_classical():
    passages = classical(questions=frozenset({"q"}), answers=frozenset({"a"}))
    assert passages(item("x", QUOTED_LINE, task="q")) == [QUOTED_LINE]
    assert passages(item("y", "背诵这首诗", PASSAGE, task="a")) == [PASSAGE]
    assert passages(item("z", "背诵这首诗", PASSAGE, task="other")) == []
