"""Recall and precision of the corpus scan: items planted in a small corpus (jsonl with nested
fields, a json list, parquet, txt) verbatim, in traditional script, with other punctuation and
spacing, and in the middle of long documents are found with share 1.0 and evidence that points at
the document and the character where the copy starts; half copies give the share the n-gram
arithmetic predicts; near misses (same opening, then other text) are not flagged."""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.contamination.corpora import DEFAULT_NGRAM, DEFAULT_THRESHOLD, CorpusSpec
from pipeline.contamination.engines import scan_corpus
from pipeline.contamination.index import build_index
from pipeline.contamination.ngrams import keyed
from pipeline.contamination.overlap import overlap_rows
from pipeline.script import convert

N = DEFAULT_NGRAM
FIELDS = ["title", "paragraphs", "notes.text"]

# Classical (public-domain) passages, one per planted item: no two share a 13-character run.
PASSAGES = [
    "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？",
    "道可道，非常道；名可名，非常名。无名天地之始，有名万物之母。故常无欲，以观其妙；常有欲，以观其徼。",
    "北冥有鱼，其名为鲲。鲲之大，不知其几千里也；化而为鸟，其名为鹏。鹏之背，不知其几千里也。",
    "晋太元中，武陵人捕鱼为业。缘溪行，忘路之远近。忽逢桃花林，夹岸数百步，中无杂树，芳草鲜美，落英缤纷。",
    "永和九年，岁在癸丑，暮春之初，会于会稽山阴之兰亭，修禊事也。群贤毕至，少长咸集。此地有崇山峻岭，茂林修竹。",
    "壬戌之秋，七月既望，苏子与客泛舟游于赤壁之下。清风徐来，水波不兴。举酒属客，诵明月之诗，歌窈窕之章。",
    "古之学者必有师。师者，所以传道受业解惑也。人非生而知之者，孰能无惑？惑而不从师，其为惑也，终不解矣。",
    "山不在高，有仙则名。水不在深，有龙则灵。斯是陋室，惟吾德馨。苔痕上阶绿，草色入帘青。谈笑有鸿儒，往来无白丁。",
    "水陆草木之花，可爱者甚蕃。晋陶渊明独爱菊。自李唐来，世人甚爱牡丹。予独爱莲之出淤泥而不染，濯清涟而不妖。",
    "环滁皆山也。其西南诸峰，林壑尤美，望之蔚然而深秀者，琅琊也。山行六七里，渐闻水声潺潺而泻出于两峰之间者，酿泉也。",
    "君子曰：学不可以已。青，取之于蓝，而青于蓝；冰，水为之，而寒于水。木直中绳，輮以为轮，其曲中规。",
    "先帝创业未半而中道崩殂，今天下三分，益州疲弊，此诚危急存亡之秋也。然侍卫之臣不懈于内，忠志之士忘身于外者。",
    "庆历四年春，滕子京谪守巴陵郡。越明年，政通人和，百废具兴，乃重修岳阳楼，增其旧制，刻唐贤今人诗赋于其上。",
    "豫章故郡，洪都新府。星分翼轸，地接衡庐。襟三江而带五湖，控蛮荆而引瓯越。物华天宝，龙光射牛斗之墟。",
    "夫天地者，万物之逆旅也；光阴者，百代之过客也。而浮生若梦，为欢几何？古人秉烛夜游，良有以也。",
    "天时不如地利，地利不如人和。三里之城，七里之郭，环而攻之而不胜。夫环而攻之，必有得天时者矣。",
    "鱼，我所欲也；熊掌，亦我所欲也。二者不可得兼，舍鱼而取熊掌者也。生，亦我所欲也；义，亦我所欲也。",
    "臣密言：臣以险衅，夙遭闵凶。生孩六月，慈父见背；行年四岁，舅夺母志。祖母刘愍臣孤弱，躬亲抚养。",
    "永州之野产异蛇，黑质而白章，触草木尽死；以啮人，无御之者。然得而腊之以为饵，可以已大风、挛踠、瘘疠，去死肌，杀三虫。",
    "世有伯乐，然后有千里马。千里马常有，而伯乐不常有。故虽有名马，祗辱于奴隶人之手，骈死于槽枥之间，不以千里称也。",
    "大道之行也，天下为公，选贤与能，讲信修睦。故人不独亲其亲，不独子其子，使老有所终，壮有所用，幼有所长。",
    "予尝求古仁人之心，或异二者之为，何哉？不以物喜，不以己悲；居庙堂之高则忧其民，处江湖之远则忧其君。",
]
KINDS = ("verbatim", "traditional", "punctuation", "middle")
FORMATS = ("jsonl", "json", "parquet", "txt")
FULL = [(kind, fmt) for kind in KINDS for fmt in FORMATS]      # passages 0..15, one copy each
HALF = {"half-jsonl": (16, "jsonl"), "half-txt": (17, "txt")}
NEAR = {"near-12": (18, 12, "json"), "near-20": (19, 20, "parquet")}   # passage, shared key characters, file

# An MCQ whose context, question and right option (B) are planted; another whose question and a
# distractor (C) are planted (a distractor is not the label); a translation whose reference alone is
# planted. Questions, options and the translation are written for these tests.
MCQ_RIGHT = {
    "item_id": "mcq-right", "format": "mcq_single", "context": PASSAGES[21],
    "question": "上文中“不以物喜，不以己悲”一句所表达的人生态度，下列理解最恰当的一项是",
    "choices": ["作者认为人应当随着外物的得失而时喜时悲，一切顺其自然",
                "作者主张不因外物的好坏和自己的得失而或喜或悲，心境豁达",
                "作者劝人远离朝廷，隐居在江湖之中，从此不问世事的安危",
                "作者感叹古代的仁人已经不在，今天的人再也无法效仿他们"],
    "answer": "B", "references": []}
MCQ_DISTRACTOR = {
    "item_id": "mcq-distractor", "format": "mcq_single", "context": None,
    "question": "古人常用“温故而知新”来勉励求学的人，下列对这句话含义的解释中，最恰当的一项是",
    "choices": ["复习学过的知识时能够得到新的体会和收获，这样就可以做老师了",
                "只有彻底抛弃旧的学问，才能学到真正新颖的知识和道理",
                "温暖的旧居让人想起往事，于是明白了新的人生道理和方向",
                "旧的知识早已过时，学习时应当只关注那些最新出现的学说"],
    "answer": "A", "references": []}
TRANSLATION = {
    "item_id": "translation", "format": "translation", "context": None, "question": PASSAGES[20],
    "choices": [], "answer": None,
    "references": ["在大道施行的时候，天下是人们所共有的，大家推选品德高尚、才能出众的人来治理，人人讲求诚信，"
                   "培养和睦的关系。所以人们不只把自己的亲人当作亲人，不只把自己的子女当作子女，"
                   "使老年人能安度晚年，壮年人能为社会效力，孩子们能健康成长。"]}
TOO_SHORT = {"item_id": "too-short", "format": "open_qa", "context": None, "question": "床前明月光，疑是地上霜。",
             "choices": [], "answer": "李白", "references": []}
PUNCTUATION_SWAPS = ["", " ", "、", "\n", "!", " -- ", "。。"]


def _item(item_id: str, question: str, **extra) -> dict:
    return {"item_id": item_id, "benchmark": "mine", "task": "recall", "format": "open_qa", "context": None,
            "question": question, "choices": [], "answer": "古文", "references": []} | extra


def _key_len(text: str) -> int:
    return len(keyed([text]).codes)


def _prefix_with_key(text: str, chars: int) -> str:
    """The shortest start of `text` whose key holds exactly `chars` characters."""
    for end in range(len(text) + 1):
        if _key_len(text[:end]) == chars:
            return text[:end]
    raise AssertionError(f"{text!r} has no prefix with {chars} key characters")


def _filler(rng: random.Random, chars: int) -> str:
    """Unrelated text: random CJK ideographs (no 13-character run of them is in any item)."""
    return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(chars))


def _respell(text: str, newlines: bool) -> str:
    """Every punctuation mark removed or replaced, spaces (and line breaks) added every few characters."""
    swaps = [s for s in PUNCTUATION_SWAPS if newlines or "\n" not in s]
    out, marks = [], 0
    for i, ch in enumerate(text):
        if unicodedata.category(ch).startswith("P"):
            out.append(swaps[marks % len(swaps)])
            marks += 1
        else:
            out.append(ch + (" " if i % 4 == 3 else ""))
    return "".join(out).strip()


def _doc_text(record: dict) -> str:
    """A document's text as the corpus defines it: its fields joined by newlines, lists flattened."""
    parts = [record["title"], *record["paragraphs"], *(n["text"] for n in record["notes"])]
    return "\n".join(p for p in parts if p)


def _record(doc_id: str, paragraphs: list[str], notes: list[str] = ()) -> dict:
    return {"id": doc_id, "title": f"文集{doc_id}", "paragraphs": paragraphs, "notes": [{"text": t} for t in notes]}


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The corpus, the items, the scan's rows by item id, and where each copy was planted."""
    root = tmp_path_factory.mktemp("recall")
    corpus = root / "corpus"
    corpus.mkdir()
    rng = random.Random(20240611)
    docs: dict[str, list] = {fmt: [] for fmt in FORMATS}     # records, or lines for txt
    where: dict[str, tuple[str, str]] = {}                    # item id -> (format, planted text)
    items = []

    def plant(item_id: str, fmt: str, text: str, *, before: str = "", after: str = "", note: bool = False) -> None:
        where[item_id] = (fmt, text)
        if fmt == "txt":
            docs["txt"].append(before + text + after)
            return
        record_id = f"{fmt}-{len(docs[fmt]):03d}"
        paragraphs = [_filler(rng, 200), before + text + after, _filler(rng, 150)]
        if note:   # in a nested field (notes.text), after the paragraphs
            record = _record(record_id, [_filler(rng, 300)], [_filler(rng, 40), before + text + after])
        else:
            record = _record(record_id, paragraphs)
        docs[fmt].append(record)

    for p, (kind, fmt) in enumerate(FULL):
        item_id = f"{kind}-{fmt}"
        items.append(_item(item_id, PASSAGES[p]))
        if kind == "verbatim":
            plant(item_id, fmt, PASSAGES[p])
        elif kind == "traditional":
            plant(item_id, fmt, convert(PASSAGES[p], "s2t"))
        elif kind == "punctuation":
            plant(item_id, fmt, _respell(PASSAGES[p], newlines=fmt != "txt"))   # a txt line is a document
        else:   # thousands of unrelated characters before and after
            plant(item_id, fmt, PASSAGES[p], before=_filler(rng, 3000), after=_filler(rng, 2500))
    for item_id, (p, fmt) in HALF.items():
        items.append(_item(item_id, PASSAGES[p]))
        plant(item_id, fmt, _prefix_with_key(PASSAGES[p], _key_len(PASSAGES[p]) // 2))
    for item_id, (p, shared, fmt) in NEAR.items():
        items.append(_item(item_id, PASSAGES[p]))
        start = _prefix_with_key(PASSAGES[p], shared)
        other = "然而此后所记之事皆与原文无关，只是另起一段新的议论，说些别的道理罢了。"
        assert keyed([other]).codes[0] != keyed([PASSAGES[p]]).codes[shared]
        plant(item_id, fmt, start + other)
    items += [MCQ_RIGHT | {"benchmark": "mine", "task": "recall"}, MCQ_DISTRACTOR | {"benchmark": "mine", "task": "recall"},
              TRANSLATION | {"benchmark": "mine", "task": "recall"}, TOO_SHORT | {"benchmark": "mine", "task": "recall"},
              _item("clean", PASSAGES[21][::-1])]
    plant("mcq-right", "jsonl", MCQ_RIGHT["context"] + "\n" + MCQ_RIGHT["question"] + "\n" + MCQ_RIGHT["choices"][1])
    plant("mcq-distractor", "json", MCQ_DISTRACTOR["question"] + " " + MCQ_DISTRACTOR["choices"][2])
    plant("translation", "jsonl", TRANSLATION["references"][0], note=True)
    plant("too-short", "txt", TOO_SHORT["question"])
    # documents that hold nothing of any item
    for fmt in FORMATS:
        for _ in range(5):
            if fmt == "txt":
                docs["txt"].append(_filler(rng, 400))
            else:
                docs[fmt].append(_record(f"{fmt}-{len(docs[fmt]):03d}", [_filler(rng, 500), _filler(rng, 80)]))
        rng.shuffle(docs[fmt])

    paths = {fmt: str(corpus / f"corpus.{fmt}") for fmt in FORMATS}
    Path(paths["jsonl"]).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in docs["jsonl"]),
                                    encoding="utf-8")
    Path(paths["json"]).write_text(json.dumps(docs["json"], ensure_ascii=False, indent=1), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(docs["parquet"]), paths["parquet"])
    Path(paths["txt"]).write_text("\n".join(docs["txt"]) + "\n", encoding="utf-8")

    spec = CorpusSpec(paths=[str(corpus)], fields=FIELDS, id_field="id", version="1")
    index = build_index(items, N)
    scan = scan_corpus(spec, "recall", index, root / "cache", log=lambda line: None)
    rows = {row["item_id"]: row for row in overlap_rows(index, scan, "recall", spec)}
    assert len(rows) == len(items)
    return {"rows": rows, "where": where, "docs": docs, "paths": paths, "scan": scan, "index": index,
            "spec": spec, "items": {item["item_id"]: item for item in items}}


def _expected_evidence(planted, item_id: str) -> tuple[str, str, int, str]:
    """(file, document id, offset, planted text) of the one document an item was planted in."""
    fmt, text = planted["where"][item_id]
    if fmt == "txt":
        (line,) = [line for line in planted["docs"]["txt"] if text in line]
        doc = f"corpus.txt@{hashlib.sha1(line.encode()).hexdigest()[:12]}"
        return planted["paths"]["txt"], doc, line.index(text), text
    (record,) = [r for r in planted["docs"][fmt] if text in _doc_text(r)]
    return planted["paths"][fmt], record["id"], _doc_text(record).index(text), text


def _assert_evidence(row: dict, field: str, planted, item_id: str) -> None:
    path, doc, offset, text = _expected_evidence(planted, item_id)
    assert row[f"{field}_file"] == path
    assert row[f"{field}_doc"] == doc
    assert row[f"{field}_offset"] == offset, f"evidence offset {row[f'{field}_offset']}, planted at {offset}"
    snippet = row[f"{field}_snippet"]
    assert snippet and (text.startswith(snippet) if len(snippet) <= len(text) else snippet.startswith(text)), \
        f"snippet {snippet!r} does not start with the planted text {text[:20]!r}"


@pytest.mark.parametrize(("kind", "fmt"), FULL)
def test_full_copies_are_found_with_evidence(planted, kind, fmt):
    row = planted["rows"][f"{kind}-{fmt}"]
    assert row["status"] == "checked"
    assert row["input_ngrams"] == _key_len(planted["items"][f"{kind}-{fmt}"]["question"]) - N + 1
    assert row["input_matched"] == row["input_ngrams"]
    assert row["input_share"] == 1.0
    assert row["input_longest"] == _key_len(planted["items"][f"{kind}-{fmt}"]["question"])
    assert row["contaminated"] is True
    assert row["level"] == "item" and row["input_flagged"]
    assert row["label_ngrams"] == 0 and row["label_share"] is None   # the answer is shorter than n
    _assert_evidence(row, "input", planted, f"{kind}-{fmt}")


def test_every_format_was_read(planted):
    scan = planted["scan"]
    assert scan.quarantine == []
    assert sorted(scan.files) == sorted(planted["paths"].values())
    for fmt, path in planted["paths"].items():
        stats = scan.files[path]
        assert stats.documents == len(planted["docs"][fmt]), fmt
        assert stats.bad_rows == 0 and stats.invalid_utf8 == 0
    assert scan.files[planted["paths"]["jsonl"]].fields_found["notes.text"] == len(planted["docs"]["jsonl"])


@pytest.mark.parametrize("item_id", sorted(HALF))
def test_half_copies_give_the_predicted_share(planted, item_id):
    row = planted["rows"][item_id]
    question = planted["items"][item_id]["question"]
    whole, half = _key_len(question), _key_len(question) // 2
    # The half copy holds the n-grams that lie wholly in its first `half` key characters.
    expected = (half - N + 1) / (whole - N + 1)
    assert row["input_ngrams"] == whole - N + 1
    assert row["input_matched"] == half - N + 1
    assert row["input_share"] == expected
    assert row["input_longest"] == half
    _assert_evidence(row, "input", planted, item_id)
    # With the default threshold 0.5 a half copy is flagged only when its share reaches 0.5; a copy
    # of exactly half the key never does: (L/2 - n + 1) / (L - n + 1) < 1/2 for every n > 1. A
    # threshold at its share flags it (the rule is share >= threshold).
    assert DEFAULT_THRESHOLD == 0.5 and expected < 0.5
    assert row["threshold"] == 0.5 and row["contaminated"] is False and row["level"] == "clean"
    lower = planted["spec"].model_copy(update={"threshold": expected})
    (flagged,) = [r for r in overlap_rows(planted["index"], planted["scan"], "recall", lower) if r["item_id"] == item_id]
    assert flagged["contaminated"] is True and flagged["level"] == "item"


def test_near_miss_with_a_shared_opening_shorter_than_n_matches_nothing(planted):
    row = planted["rows"]["near-12"]
    assert NEAR["near-12"][1] < N
    assert row["status"] == "checked"
    assert row["input_matched"] == 0 and row["input_share"] == 0.0 and row["input_longest"] == 0
    assert row["input_doc"] is None and row["input_offset"] is None
    assert row["contaminated"] is False and row["level"] == "clean"


def test_near_miss_with_a_longer_opening_is_not_flagged(planted):
    row = planted["rows"]["near-20"]
    shared = NEAR["near-20"][1]
    whole = _key_len(planted["items"]["near-20"]["question"])
    assert row["input_matched"] == shared - N + 1
    assert row["input_share"] == (shared - N + 1) / (whole - N + 1) < DEFAULT_THRESHOLD
    assert row["contaminated"] is False
    _assert_evidence(row, "input", planted, "near-20")


def test_an_item_never_planted_is_clean(planted):
    row = planted["rows"]["clean"]
    assert row["status"] == "checked" and row["input_matched"] == 0 and row["contaminated"] is False


def test_an_item_shorter_than_n_is_too_short_not_clean(planted):
    row = planted["rows"]["too-short"]
    assert _key_len(TOO_SHORT["question"]) < N   # and it is in the corpus, verbatim
    assert row["status"] == "too_short"
    assert row["contaminated"] is None and row["level"] == "too_short"
    assert row["input_ngrams"] == row["label_ngrams"] == 0
    assert row["input_share"] is None and row["label_share"] is None


def test_mcq_label_is_the_right_option_text(planted):
    row = planted["rows"]["mcq-right"]
    right = MCQ_RIGHT["choices"][1]
    # the label field is option B's text only: neither the letter nor the distractors
    assert row["label_ngrams"] == _key_len(right) - N + 1
    # the input: context, question and every option
    assert row["input_ngrams"] == sum(_key_len(t) - N + 1 for t in [MCQ_RIGHT["context"], MCQ_RIGHT["question"],
                                                                     *MCQ_RIGHT["choices"]])
    assert row["label_share"] == 1.0
    # question and right option together, without the others: the item with its answer
    assert row["contaminated"] is True and row["level"] == "item_with_answer"
    assert row["answer_file"] == _expected_evidence(planted, "mcq-right")[0]
    path, doc, offset, text = _expected_evidence(planted, "mcq-right")
    assert row["label_doc"] == doc and row["label_file"] == path
    assert row["label_offset"] == offset + text.index(right)
    assert row["label_snippet"].startswith(right[:len(row["label_snippet"])])


def test_a_planted_distractor_is_not_label_contamination(planted):
    row = planted["rows"]["mcq-distractor"]
    assert row["label_ngrams"] == _key_len(MCQ_DISTRACTOR["choices"][0]) - N + 1
    assert row["label_matched"] == 0 and row["label_share"] == 0.0
    assert row["input_matched"] == sum(_key_len(t) - N + 1 for t in [MCQ_DISTRACTOR["question"],
                                                                      MCQ_DISTRACTOR["choices"][2]])
    # question and one distractor: the question's wording with an option (two parts), below the
    # threshold of the whole input (four options), and not with the right one: clean
    assert row["contaminated"] is False and row["level"] == "clean"


def test_translation_reference_planted_alone_is_label_contamination(planted):
    row = planted["rows"]["translation"]
    reference = TRANSLATION["references"][0]
    assert _key_len(reference) > 100
    assert row["label_ngrams"] == _key_len(reference) - N + 1
    assert row["label_share"] == 1.0 and row["label_longest"] == _key_len(reference)
    assert row["input_matched"] == 0
    assert row["contaminated"] is True and row["level"] == "item" and row["label_flagged"]
    _assert_evidence(row, "label", planted, "translation")
