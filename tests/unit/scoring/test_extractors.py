"""Answer extraction on realistic model outputs, table by table (pipeline/scoring/extract.py), and
the WenMind scorers on the real file: the oracle scores 1 and the random baseline stays at chance."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import pytest
from conftest import upstream

from pipeline.config import SourceSpec
from pipeline.engines import Request
from pipeline.engines.baseline import BaselineEngine
from pipeline.ingest import parse_source
from pipeline.schema import OPTION_LETTERS
from pipeline.scoring.extract import (
    AMBIGUOUS,
    EMPTY,
    NO_ANSWER,
    UNMATCHED,
    asks_for_incorrect,
    blank_hits,
    extract_aceval,
    extract_label,
    extract_letters,
    split_blanks,
)
from pipeline.scoring.rules import score_response

# (response, number of options, the stem asks for the wrong statements, expected letters)
MULTI_CASES = [
    ("AC", 5, False, "AC"),
    ("A、C", 5, False, "AC"),
    ("A C", 5, False, "AC"),
    ("A,C", 5, False, "AC"),
    ("A，C", 5, False, "AC"),
    ("AC两项", 5, False, "AC"),
    ("答案是A和C。B项错误", 5, False, "AC"),
    ("**A、C**", 5, False, "AC"),
    ("答案：**AC**", 5, False, "AC"),
    ("Ａ、Ｃ", 5, False, "AC"),
    ("正确答案：ＡＣ", 5, False, "AC"),
    ("The answer is A and C.", 5, False, "AC"),
    ("I think this MCQ needs CoT, so: A, C", 5, False, "AC"),
    ("OK，A good question. 答案：C、E", 5, False, "CE"),
    ("Answer: AC", 5, False, "AC"),
    ("排除B，选A、C", 5, False, "AC"),
    ("B不对，A和C对", 5, False, "AC"),
    ("不选B。答案是AC", 5, False, "AC"),
    ("最终答案：(A)(C)", 5, False, "AC"),
    ("最终答案：【A】【C】", 5, False, "AC"),
    ("", 5, False, ""),
    ("无法确定正确选项。", 5, False, ""),
    ("抱歉，我无法回答这个问题。", 5, False, ""),
    ("A", 5, False, "A"),
    ("答案是A、B", 5, False, "AB"),
    ("我最初认为答案是A、B，但B项有误，所以最终答案是A、C。", 5, False, "AC"),
    ("选项A与选项C正确，选项B、D、E错误。", 5, False, "AC"),
    ("A项正确。B项错误。C项正确。D项错误。E项错误。", 5, False, "AC"),
    ("分析：\nA. 描写准确，正确。\nB. 颔联理解有误，错误。\nC. 说法正确。\nD. 错误。\nE. 错误。\n", 5, False, "AC"),
    ("故选AC。", 5, False, "AC"),
    ("本题应选A、C两项。", 5, False, "AC"),
    ("答案：A；C", 5, False, "AC"),
    ("选择：A/C", 5, False, "AC"),
    ("正确的是A和C，B、D、E说法都不对。", 5, False, "AC"),
    ("不正确的是B、D、E，所以正确的是A、C。", 5, False, "AC"),
    ("答案不是B，而是A和C。", 5, False, "AC"),
    ("A和C都符合题意。", 5, False, "AC"),
    ("ACE", 5, False, "ACE"),
    ("答案：B、D\n解析：A项正确，C项正确。", 5, False, "BD"),
    ("Option A and option C are correct.", 5, False, "AC"),
    ("ABC这三个选项中，A和C正确，B错", 5, False, "AC"),
    ("我选BD，因为A、C、E的说法都正确。", 5, False, "BD"),
    ("BD", 5, False, "BD"),
    ("答案是A、C、D。等等，D项有误，应排除D。", 5, False, "AC"),
    ("Ｂ項錯誤，答案為ＡＣ", 5, False, "AC"),
    ("F", 5, False, ""),
    ("答案是AF", 5, False, ""),
    ("答案是AF", 6, False, "AF"),
    ("ABCDE都不对", 5, False, ""),
    ("让我们逐项分析。\n- **A项**：描写细腻，正确。\n- **B项**：错误，原诗并无此意。\n- **C项**：正确。\n综上，答案为**A、C**。", 5, False, "AC"),
    # WenMind's own multiple-answer stems ask for the two wrong statements
    ("B、D", 5, True, "BD"),
    ("不正确的两项是B和D。", 5, True, "BD"),
    ("A项正确。B项错误，“擘钗”并非讽刺。C项正确。D项错误。E项正确。", 5, True, "BD"),
    ("答案：BD\nA项说法正确；B项说法错误；C项正确；D项错误；E项正确。", 5, True, "BD"),
    ("正确的是A、C、E，故不正确的是B、D。", 5, True, "BD"),
    ("B项错误，D项错误。", 5, True, "BD"),
    ("B项、D项表述不恰当。", 5, True, "BD"),
    ("A和C说法正确，排除。答案为B、D。", 5, True, "BD"),
    ("选BD。A项正确，C项正确，E项正确。", 5, True, "BD"),
    ("AC", 5, True, "AC"),
    ("B项：化用典故，借古讽今，理解错误。\nD项：写思乡之情，说法有误。", 5, True, "BD"),
    ("我认为只有D不正确。", 5, True, "D"),
    ("不恰当的两项：Ｂ、Ｅ", 5, True, "BE"),
    ("选项A与选项C正确", 5, True, ""),
    ("B项符合题意，D项也符合题意。", 5, True, "BD"),
    ("A选项说法没问题，B选项有误，C选项没问题，D选项错误，E选项正确。", 5, True, "BD"),
    ("A √ B × C √ D × E √", 5, True, "BD"),
    ("A、B、C、D、E五个选项中，B和D不正确。", 5, True, "BD"),
]

WENMIND_LABELS = ["中性", "正面", "负面", "隐含正面", "隐含负面"]
COLLECTIONS = ["佛藏", "史藏", "诗藏", "集藏", "子藏", "易藏", "艺藏", "医藏", "道藏", "儒藏"]
# (response, labels, expected label or None)
LABEL_CASES = [
    ("隐含正面", WENMIND_LABELS, "隐含正面"),
    ("正面", WENMIND_LABELS, "正面"),
    ("中性", WENMIND_LABELS, "中性"),
    ("负面", WENMIND_LABELS, "负面"),
    ("正面。", WENMIND_LABELS, "正面"),
    ("不是正面，而是隐含负面", WENMIND_LABELS, "隐含负面"),
    ("隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("**隐含正面**", WENMIND_LABELS, "隐含正面"),
    ("答案：中性", WENMIND_LABELS, "中性"),
    ("答案：**正面**", WENMIND_LABELS, "正面"),
    ("**情感分类：** 隐含正面", WENMIND_LABELS, "隐含正面"),
    ("这首诗的情感是隐含正面。虽然诗中出现了“伤情”这样的负面词语，但整体积极。", WENMIND_LABELS, "隐含正面"),
    ("请从“负面”、“隐含负面”、“中性”、“隐含正面”、“正面”中选择。我的选择是：隐含正面", WENMIND_LABELS, "隐含正面"),
    ("并非负面，也并非隐含负面，应为中性。", WENMIND_LABELS, "中性"),
    ("情感倾向：隱含負面", WENMIND_LABELS, "隐含负面"),
    ("積極向上，屬於正面。", WENMIND_LABELS, "正面"),
    ("这首诗表达了隐含正面的情感，虽然有负面的意象。", WENMIND_LABELS, "隐含正面"),
    ("无法判断这首诗的情感。", WENMIND_LABELS, None),
    ("", WENMIND_LABELS, None),
    ("抱歉，我不能回答。", WENMIND_LABELS, None),
    ("Positive", WENMIND_LABELS, None),
    ("这首诗的情感不是负面的。", WENMIND_LABELS, None),
    ("诗人借景抒情，表面写景，实则流露出思乡之愁，属于隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("这首诗情感基调明快，应归为正面。", WENMIND_LABELS, "正面"),
    ("首先，诗中没有明显的负面情绪；其次，诗人对未来充满期待。综上所述，答案是隐含正面。", WENMIND_LABELS, "隐含正面"),
    ("正面？不，诗人只是借欢乐场景反衬自己的落寞，答案应为隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("这首诗不属于正面，我认为是中性。", WENMIND_LABELS, "中性"),
    ("隐含正面\n\n理由：诗中虽有离别之意，但并无负面情绪，诗人寄托了美好祝愿。", WENMIND_LABELS, "隐含正面"),
    ("我觉得是隐含负面而非负面，因为作者没有直接表达悲伤。", WENMIND_LABELS, "隐含负面"),
    ("情感：正面（诗人赞美了春光）", WENMIND_LABELS, "正面"),
    ("这首诗整体上是负面的。", WENMIND_LABELS, "负面"),
    ("说是正面的说法不对，应该是隐含正面。", WENMIND_LABELS, "隐含正面"),
    ("1. 分析：诗人写月夜思乡。\n2. 情感判断：隐含负面", WENMIND_LABELS, "隐含负面"),
    ("该诗的情感更接近中性，并非隐含正面。", WENMIND_LABELS, "中性"),
    ("Answer: 隐含正面", WENMIND_LABELS, "隐含正面"),
    ("选择“负面”。", WENMIND_LABELS, "负面"),
    ("诗中既有欢乐也有惆怅，但惆怅是主调，所以我选隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("从字面看像是负面，但细读可知是隐含正面。", WENMIND_LABELS, "隐含正面"),
    ("答案：隐含正面。所以诗中的负面意象只是陪衬。", WENMIND_LABELS, "隐含正面"),
    ("该诗流露出诗人壮志难酬的苦闷，为隐含负面；而不是中性。", WENMIND_LABELS, "隐含负面"),
    ("隐含负面（负面程度较轻）", WENMIND_LABELS, "隐含负面"),
    ("中性偏负面，最终判断为隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("不是负面，不是隐含负面，不是中性，也不是正面，而是隐含正面。", WENMIND_LABELS, "隐含正面"),
    ("难道不是正面的吗？诗人分明在赞美家乡。", WENMIND_LABELS, "正面"),
    ("<think>诗人写边塞苦寒，又暗含报国之志……</think>\n隐含正面", WENMIND_LABELS, "隐含正面"),
    ("虽然诗中有几分愁绪，但**隐含正面**才是主调，负面的成分很少。", WENMIND_LABELS, "隐含正面"),
    ("情感倾向：中性。诗人只是客观描写景物，既无正面的赞美，也无负面的哀伤。", WENMIND_LABELS, "中性"),
    ("这首诗的情感倾向偏向负面，但并不强烈，所以是隐含负面。", WENMIND_LABELS, "隐含负面"),
    ("这段文字出自佛经，属于佛藏，而非道藏。", COLLECTIONS, "佛藏"),
    ("不是史藏，是子藏。", COLLECTIONS, "子藏"),
]

# (gold, response, (blanks hit, blanks)); the item score is hit / blanks
FILL_CASES = [
    ("黄河入海流。", "黄河入海流", (1, 1)),
    ("黄河入海流。", "答案：黃河入海流", (1, 1)),
    ("黄河入海流。", "黄河入海", (0, 1)),
    ("会当凌绝顶，一览众山小。", "会当凌绝顶，一览众山小。", (2, 2)),
    ("会当凌绝顶，一览众山小。", "第一空：会当凌绝顶\n第二空：一览众山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "（1）会当凌绝顶（2）一览众山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "①会当凌绝顶 ②一览众山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "空1：会当凌绝顶；空2：一览众山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "第1空：会当凌绝顶，第2空：一览众山少", (1, 2)),
    ("会当凌绝顶，一览众山小。", "會當凌絕頂，一覽衆山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "答案：会当凌绝顶，一揽众山小", (1, 2)),
    ("会当凌绝顶，一览众山小。", "这两句出自杜甫《望岳》，诗人登临泰山，抒发壮志。所以应填：会当凌绝顶，一览众山小。", (2, 2)),
    ("会当凌绝顶，一览众山小。", "会当临绝顶，一览众山小", (1, 2)),
    ("会当凌绝顶，一览众山小。", "第一空：一览众山小\n第二空：会当凌绝顶", (0, 2)),
    ("会当凌绝顶，一览众山小。", "", (0, 2)),
    ("会当凌绝顶，一览众山小。", "______，______。", (0, 2)),
    ("会当凌绝顶，一览众山小。", "抱歉，我不记得这两句诗。", (0, 2)),
    ("会当凌绝顶，一览众山小。", "《望岳》中“会当凌绝顶，一览众山小”两句写出了诗人的雄心。", (2, 2)),
    ("会当凌绝顶，一览众山小。", "**会当凌绝顶，一览众山小**", (2, 2)),
    ("会当凌绝顶，一览众山小。", "会当凌绝顶　一览众山小", (2, 2)),
    ("会当凌绝顶，一览众山小。", "Answer: 会当凌绝顶", (1, 2)),
    ("（1）之（2）乎", "（1）之（2）乎", (2, 2)),
    ("（1）之（2）乎", "（1）乎（2）之", (0, 2)),
    ("（1）之（2）乎", "之乎", (2, 2)),
    ("（1）之（2）乎", "第一空：之，第二空：也", (1, 2)),
    ("①千山鸟飞绝②万径人踪灭", "千山鸟飞绝，万径人踪灭", (2, 2)),
    ("空1：举头望明月 空2：低头思故乡", "举头望明月，低头思故乡", (2, 2)),
    ("空1：举头望明月 空2：低头思故乡", "举头望明月，低头思家乡", (1, 2)),
    ("大漠孤烟直\n长河落日圆", "大漠孤烟直，长河落日圆", (2, 2)),
    ("先天下之忧而忧；后天下之乐而乐", "先天下之忧而忧", (1, 2)),
    ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少？", (4, 4)),
    ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "春眠不觉晓，处处闻啼鸟。", (2, 4)),
    ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "1. 春眠不觉晓\n2. 处处闻啼鸟\n3. 夜来风雨声\n4. 花落知多少", (4, 4)),
    ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。", "春眠不觉晓处处闻啼鸟夜来风雨声花落知几多", (3, 4)),
    ("但愿人长久，千里共婵娟。", "但愿人长久，千里共婵娟", (2, 2)),
    ("但愿人长久，千里共婵娟。", "但願人長久，千里共嬋娟", (2, 2)),
    ("但愿人长久，千里共婵娟。", "<think>这是苏轼的中秋词。</think>但愿人长久，千里共婵娟。", (2, 2)),
    ("海内存知己，天涯若比邻。", "第一空填“海内存知己”，第二空填“天涯若比邻”。", (2, 2)),
    ("海内存知己，天涯若比邻。", "海内有知己，天涯若比邻", (1, 2)),
    ("之", "之", (1, 1)),
    ("之", "乎", (0, 1)),
    ("", "随便写点什么", (0, 0)),
]

# (response, number of options, expected): AC-EVAL's own extraction, pinned as it behaves today
ACEVAL_CASES = [
    ("C", 4, "C"),
    ("答案是B。因为A和C都不对", 4, "B"),
    ("选项A正确，选项B正确", 4, AMBIGUOUS),
    ("甲和乙都有道理", 4, UNMATCHED),
    ("", 4, EMPTY),
    ("   \n ", 4, UNMATCHED),
    ("B", 4, "B"),
    ("答案：D", 4, "D"),
    ("答案为（C）", 4, "C"),
    ("正确答案是A。", 4, "A"),
    ("**B**", 4, "B"),
    ("Ｃ", 4, UNMATCHED),
    ("答案是Ｃ", 4, UNMATCHED),
    ("B. 学而时习之", 4, "B"),
    ("根据题意，正确的选项是D", 4, "D"),
    ("A项错误，B项错误，C项错误，所以选D", 4, "D"),
    ("综上所述，本题选C。", 4, "C"),
    ("抱歉，我无法回答这个问题。", 4, NO_ANSWER),
    ("无法确定正确答案", 4, NO_ANSWER),
    ("所有选项都是正确的", 4, NO_ANSWER),
    ("没有正确的选项", 4, NO_ANSWER),
    ("A和B都对，答案是A", 4, "A"),
    ("The answer is B", 4, "B"),
    ("I think A", 4, "A"),
    ("选择B", 4, "B"),
    ("我选C，因为D不对", 4, "C"),
    ("答案：E", 5, "E"),
    ("答案：E", 4, UNMATCHED),
    ("E", 4, UNMATCHED),
    ("答案是F", 6, "F"),
    ("答案：B\n解析：A项错在……", 4, "B"),
    ("分析：\nA. 错误\nB. 正确\nC. 错误\nD. 错误\n故选B", 4, "B"),
    ("B是正确的", 4, "B"),
    ("（B）", 4, "B"),
    ("我认为应该选A或者B", 4, "A"),
    ("答案应该是D。", 4, "D"),
    ("##综上所述，答案为A", 4, "A"),
    ("CD", 4, UNMATCHED),
    ("答案是AB", 4, "A"),
    ("正确答案：C。A、B、D均不符合题意。", 4, "C"),
    ("让我们逐步分析。A说法片面，B时代不符，D与史实相反，C正确。所以答案是C。", 4, "C"),
    ("ABCD", 4, UNMATCHED),
]


@pytest.mark.parametrize(("response", "n_options", "asks_wrong", "expected"), MULTI_CASES)
def test_multi_answer_extraction(response, n_options, asks_wrong, expected):
    assert "".join(sorted(extract_letters(response, n_options, asks_wrong))) == expected


@pytest.mark.parametrize(("response", "labels", "expected"), LABEL_CASES)
def test_label_extraction(response, labels, expected):
    assert extract_label(response, labels) == expected


@pytest.mark.parametrize(("gold", "response", "expected"), FILL_CASES)
def test_fill_in_blanks(gold, response, expected):
    hits = blank_hits(response, gold)
    assert (sum(hits), len(hits)) == expected
    row = score_response({"benchmark": "wenmind", "task": "t", "format": "fill_blank", "answer": gold,
                          "choices": [], "metadata": {}}, response)
    if gold:
        assert row["score"] == pytest.approx(expected[0] / expected[1])
        assert row["details"] == {"blanks": expected[1], "hit": expected[0]}


@pytest.mark.parametrize(("response", "n_options", "expected"), ACEVAL_CASES)
def test_aceval_extraction_is_pinned(response, n_options, expected):
    assert extract_aceval(response, n_options) == expected


def test_tables_are_large_enough():
    assert min(len(MULTI_CASES), len(LABEL_CASES), len(FILL_CASES), len(ACEVAL_CASES)) >= 40


def test_multi_answer_scores_follow_the_paper():
    item = {"benchmark": "wenmind", "task": "t", "format": "mcq_multi", "answer": "A、C",
            "choices": ["甲", "乙", "丙", "丁", "戊"], "metadata": {}}
    scores = {t: score_response(item, t)["score"] for t in ("AC", "答案是A和C。B项错误", "A", "A、B", "ABC", "", "无法作答")}
    assert scores == {"AC": 1.0, "答案是A和C。B项错误": 1.0, "A": 0.5, "A、B": 0.0, "ABC": 0.0, "": 0.0, "无法作答": 0.0}
    wrong_stem = item | {"question": "下列对本诗的理解，不正确的两项是 A．甲 B．乙 C．丙 D．丁 E．戊", "answer": "B、D"}
    assert asks_for_incorrect(wrong_stem["question"], wrong_stem["choices"])
    assert score_response(wrong_stem, "A项正确。B项错误。C项正确。D项错误。E项正确。")["score"] == 1.0
    assert score_response(wrong_stem, "B项错误，其余正确。")["score"] == 0.5


def test_blank_splitting():
    assert split_blanks("（1）之（2）乎") == ["之", "乎"]
    assert split_blanks("第一空：甲乙\n第二空：丙丁") == ["甲乙", "丙丁"]
    assert split_blanks("大漠孤烟直，长河落日圆。") == ["大漠孤烟直", "长河落日圆"]
    assert split_blanks("。") == []


# --- the real WenMind file ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def wenmind_items():
    path = upstream("wenmind", "WenMind_ver1.json")
    items = parse_source(SourceSpec("wenmind", path, "ver1")).items
    by_format = defaultdict(list)
    for item in items:
        by_format[item["format"]].append(item)
    assert {f: len(by_format[f]) for f in ("mcq_multi", "classification", "fill_blank")} == {
        "mcq_multi": 13, "classification": 200, "fill_blank": 30}
    return by_format


def test_oracle_scores_one_on_real_wenmind(wenmind_items):
    for fmt in ("mcq_multi", "classification", "fill_blank"):
        for item in wenmind_items[fmt]:
            assert score_response(item, item["answer"])["score"] == 1.0, item["item_id"]


def test_real_multi_answer_stems_and_judged_responses(wenmind_items):
    for item in wenmind_items["mcq_multi"]:
        assert asks_for_incorrect(item["question"], item["choices"]), item["item_id"]
        gold = set(item["answer"].split("、"))
        letters = OPTION_LETTERS[:len(item["choices"])]
        judged = "".join(f"{x}项{'错误' if x in gold else '正确'}。" for x in letters)
        for response in (judged, f"不正确的两项是{'和'.join(sorted(gold))}。", f"**{''.join(sorted(gold))}**"):
            assert score_response(item, response)["score"] == 1.0, (item["item_id"], response)


def test_random_baseline_stays_at_chance_on_real_wenmind(wenmind_items):
    # Every answer the random baseline can give, equally likely: the mean score is chance exactly.
    for item in wenmind_items["mcq_multi"]:
        letters = OPTION_LETTERS[:len(item["choices"])]
        gold = set(item["answer"].split("、"))
        mean = Fraction(sum(Fraction(score_response(item, x)["score"]) for x in letters), len(letters))
        assert mean == Fraction(len(gold), len(letters)) / 2, item["item_id"]  # one right letter earns 0.5
    for item in wenmind_items["classification"]:
        labels = item["metadata"]["labels"]
        assert sum(score_response(item, lab)["score"] for lab in labels) == 1.0, item["item_id"]
    # the baseline itself: fill-in answers are the gold's characters shuffled, which find no blank
    items = wenmind_items["fill_blank"] + wenmind_items["classification"] + wenmind_items["mcq_multi"]
    engine = BaselineEngine("random", seed=0)
    requests = [Request(cache_key=item["item_id"], messages=(), max_tokens=8,
                        choices=tuple(OPTION_LETTERS[:len(item["choices"])]),
                        labels=tuple(item["metadata"].get("labels", ()))) for item in items]
    engine.use_golds({item["item_id"]: item["answer"] for item in items})
    scores = defaultdict(list)
    for item, completion in zip(items, engine.generate(requests)):
        scores[item["format"]].append(score_response(item, completion.text)["score"])
    assert sum(scores["fill_blank"]) / len(scores["fill_blank"]) < 0.05
    assert 0.1 < sum(scores["classification"]) / len(scores["classification"]) < 0.3  # chance 0.2
    assert len(scores["mcq_multi"]) == 13

