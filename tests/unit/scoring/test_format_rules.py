"""Fùxì CG / CiG format rules on real classical couplets and ci, with the shipped 格律 tables only
(pipeline/scoring/gelv_tables/), never the upstream projects they were built from."""

from __future__ import annotations

import pytest
from conftest import ROOT

from pipeline.benchmarks import card
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.scoring import gelv
from pipeline.scoring.format_rules import check_ci, check_couplet, clean_ci, clean_couplet, pattern_from_rules
from pipeline.scoring.rules import score_response

# 李白《忆秦娥·箫声咽》: 入声 rhymes, 词林正韵 第十八部
YI_QIN_E = "箫声咽，秦娥梦断秦楼月。秦楼月，年年柳色，灞陵伤别。乐游原上清秋节，咸阳古道音尘绝。音尘绝，西风残照，汉家陵阙。"
# 李清照《如梦令》 (two of them)
RU_MENG_LING = "昨夜雨疏风骤，浓睡不消残酒。试问卷帘人，却道海棠依旧。知否，知否？应是绿肥红瘦。"
RU_MENG_LING_2 = "常记溪亭日暮，沉醉不知归路。兴尽晚回舟，误入藕花深处。争渡，争渡，惊起一滩鸥鹭。"
# 白居易《忆江南》 and 温庭筠《望江南·梳洗罢》 (one tune, three names)
YI_JIANG_NAN = "江南好，风景旧曾谙。日出江花红胜火，春来江水绿如蓝。能不忆江南？"
WANG_JIANG_NAN = "梳洗罢，独倚望江楼。过尽千帆皆不是，斜晖脉脉水悠悠。肠断白蘋洲。"
# 苏轼《浣溪沙·游蕲水清泉寺》; 晏殊《浣溪沙》
HUAN_XI_SHA = "山下兰芽短浸溪，松间沙路净无泥，萧萧暮雨子规啼。谁道人生无再少？门前流水尚能西！休将白发唱黄鸡。"
HUAN_XI_SHA_YAN_SHU = "一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？无可奈何花落去，似曾相识燕归来。小园香径独徘徊。"
# 李煜: 浪淘沙令 (commonly just 浪淘沙) and 相见欢
LANG_TAO_SHA = ("帘外雨潺潺，春意阑珊。罗衾不耐五更寒。梦里不知身是客，一晌贪欢。"
                "独自莫凭栏，无限江山。别时容易见时难。流水落花春去也，天上人间。")
XIANG_JIAN_HUAN = "无言独上西楼，月如钩。寂寞梧桐深院锁清秋。剪不断，理还乱，是离愁。别是一般滋味在心头。"
# 陆游《卜算子·咏梅》; 温庭筠《菩萨蛮》 (仄 and 平 rhymes change twice)
BU_SUAN_ZI = "驿外断桥边，寂寞开无主。已是黄昏独自愁，更著风和雨。无意苦争春，一任群芳妒。零落成泥碾作尘，只有香如故。"
PU_SA_MAN = "小山重叠金明灭，鬓云欲度香腮雪。懒起画蛾眉，弄妆梳洗迟。照花前后镜，花面交相映。新帖绣罗襦，双双金鹧鸪。"

# A Han character the tables do not know (U+4E65)
UNKNOWN = "\u4e65"


@pytest.mark.parametrize("first, second", [
    ("两个黄鹂鸣翠柳", "一行白鹭上青天"),                                   # 杜甫
    ("海内存知己", "天涯若比邻"),                                           # 王勃
    ("宝剑锋从磨砺出", "梅花香自苦寒来"),
    ("风声雨声读书声，声声入耳", "家事国事天下事，事事关心"),                 # 顾宪成
    ("海纳百川，有容乃大", "壁立千仞，无欲则刚"),                           # 林则徐
    ("绿水本无忧，因风皱面", "青山原不老，为雪白头"),
    ("有志者，事竟成，破釜沉舟，百二秦关终属楚",
     "苦心人，天不负，卧薪尝胆，三千越甲可吞吴"),                          # 蒲松龄
    ("天增岁月人增寿", "春满乾坤福满门"),                                   # 春联
    ("一帆风顺年年好", "万事如意步步高"),                                   # 春联
    ("雨", "风"),                                                           # 声律启蒙: 雨对风
], ids=lambda text: text[:4])
def test_classical_couplets_pass(first, second):
    result = check_couplet(first, second)
    assert result["strict"] == result["lenient"] == 1, result
    assert result["checks"] == {"shape": True, "tones": True} and result["mismatches"] == []
    assert result["first_line_ends"] == "仄"


def test_couplet_failures():
    wrong_length = check_couplet("两个黄鹂鸣翠柳", "一行白鹭上天")
    assert wrong_length["strict"] == wrong_length["lenient"] == 0
    assert wrong_length["lengths"] == [6] and wrong_length["expected"] == [7]
    assert check_couplet("风声雨声读书声，声声入耳", "家事国事天下事事事关心")["lenient"] == 0   # one clause, not two

    # ends in 仄 like a first line: the shape holds, the ending tone does not
    upper_ending = check_couplet("两个黄鹂鸣翠柳", "一行白鹭过江北")
    assert upper_ending["strict"] == 0 and upper_ending["lenient"] == 1
    assert upper_ending["mismatches"] == [{"pos": 6, "char": "北", "want": "平", "got": "仄", "rule": "ending"}]

    # an inner clause end with the first line's tone (川 / 寻 both 平)
    inner = check_couplet("海纳百川，有容乃大", "壁立千寻，无欲则刚")
    assert inner["strict"] == 0 and inner["lenient"] == 1 and inner["mismatches"][0]["pos"] == 3

    both = check_couplet("海纳百川，有容乃大", "壁立千寻，无欲则勇")
    assert both["strict"] == both["lenient"] == 0 and both["faults"] == 2

    # a copy of the first line is no answer
    copy = check_couplet("两个黄鹂鸣翠柳", "两个黄鹂鸣翠柳")
    assert copy["strict"] == copy["lenient"] == 0 and copy["copy_of_first_line"]


def test_entering_tone_is_ze_whatever_mandarin_says():
    # 国 白 竹 一 are 入声 (仄), though Mandarin reads them in its first and second tones
    assert {gelv.tone(ch) for ch in "国白竹一"} == {"仄"}
    assert check_couplet("春回大地", "福满家国")["strict"] == 0


def test_polyphones_fit_either_tone():
    assert gelv.tone("看") == gelv.tone("思") == gelv.tone("空") == "多"
    assert gelv.tone_fits("看", "平") and gelv.tone_fits("看", "仄")
    assert check_couplet("春眠不觉晓", "花影任君看")["strict"] == 1     # 看: 平 (kān) or 仄 (kàn)
    assert check_couplet("春眠不觉晓", "花影任君赏")["strict"] == 0     # 赏: 仄 only
    # a polyphone ending the first line's inner clause asks nothing of the second line's
    assert check_couplet("春风看，秋月白", "夏雨去，冬云飞")["strict"] == 1


def test_unknown_characters_fit_and_are_counted():
    assert gelv.tone(UNKNOWN) is None
    result = check_couplet("两个黄鹂鸣翠柳", "一行白鹭上青" + UNKNOWN)
    assert result["strict"] == 1 and result["unknown"] == 1 and result["unknown_chars"] == UNKNOWN
    ci = check_ci(RU_MENG_LING.replace("酒", UNKNOWN), "如梦令")   # a rhyme position
    assert ci["strict"] == 1 and ci["unknown"] == 1


def test_couplet_response_cleaning():
    assert clean_couplet("下联：一行白鹭上青天") == "一行白鹭上青天"
    assert clean_couplet("“一行白鹭上青天”") == "一行白鹭上青天"
    assert clean_couplet("上联：两个黄鹂鸣翠柳\n下联：一行白鹭上青天\n") == "一行白鹭上青天"
    assert clean_couplet("  好的，下联是：一行白鹭上青天") == "一行白鹭上青天"
    assert check_couplet("上联：两个黄鹂鸣翠柳", "下联：“一行白鹭上青天”")["strict"] == 1


@pytest.mark.parametrize("cipai, text", [
    ("忆秦娥", YI_QIN_E),
    ("秦楼月", YI_QIN_E),                  # an alias
    ("如梦令", RU_MENG_LING),
    ("如梦令", RU_MENG_LING_2),
    ("忆江南", YI_JIANG_NAN),
    ("望江南", YI_JIANG_NAN),              # aliases of 忆江南
    ("江南好", YI_JIANG_NAN),
    ("浣溪沙", HUAN_XI_SHA),
    ("浪淘沙", LANG_TAO_SHA),              # the 浪淘沙令 form answers to 浪淘沙
    ("相见欢", XIANG_JIAN_HUAN),
    ("卜算子", BU_SUAN_ZI),
    ("菩萨蛮", PU_SA_MAN),
], ids=lambda text: text[:4])
def test_classical_ci_pass_their_tune(cipai, text):
    result = check_ci(text, cipai)
    assert result["strict"] == result["lenient"] == 1, result
    assert result["checks"] == {"shape": True, "tones": True, "rhymes": True} and result["source"] == "tables"


def test_a_ci_fails_another_tune():
    for other in ("如梦令", "浣溪沙", "忆江南"):
        result = check_ci(YI_QIN_E, other)
        assert result["strict"] == result["lenient"] == 0 and not result["checks"]["shape"]
    assert check_ci(RU_MENG_LING, "忆秦娥")["strict"] == 0


def test_tune_names_in_traditional_script_and_with_titles():
    traditional = "簫聲咽，秦娥夢斷秦樓月。秦樓月，年年柳色，灞陵傷別。樂遊原上清秋節，咸陽古道音塵絕。音塵絕，西風殘照，漢家陵闕。"
    assert check_ci(traditional, "憶秦娥")["strict"] == 1
    assert check_ci(YI_QIN_E, "《忆秦娥·箫声咽》")["strict"] == 1
    assert gelv.find_cipai("没有这个词牌") is None


def test_ci_response_cleaning():
    assert clean_ci("《如梦令·昨夜雨疏风骤》\n" + RU_MENG_LING) == RU_MENG_LING
    assert clean_ci("如梦令\n\n" + RU_MENG_LING, ("如梦令",)) == RU_MENG_LING
    assert clean_ci("词牌：如梦令\n题目：雨后\n" + RU_MENG_LING) == RU_MENG_LING
    # the halves of a ci on lines of their own
    assert check_ci("忆秦娥·箫声咽\n\n" + YI_QIN_E.replace("灞陵伤别。", "灞陵伤别。\n\n"), "忆秦娥")["strict"] == 1


def test_pause_breaks_are_optional_other_breaks_are_not():
    # 相见欢: 寂寞梧桐深院(读)锁清秋 may be punctuated at the pause, but not elsewhere
    assert check_ci(XIANG_JIAN_HUAN.replace("深院锁清秋", "深院，锁清秋"), "相见欢")["strict"] == 1
    assert check_ci(XIANG_JIAN_HUAN.replace("寂寞梧桐深院", "寂寞梧桐，深院"), "相见欢")["lenient"] == 0
    # 如梦令's 知否，知否 are two clauses: run together they are one
    assert check_ci(RU_MENG_LING.replace("知否，知否？", "知否知否？"), "如梦令")["lenient"] == 0


def test_strict_and_lenient_on_a_mangled_ci():
    one_tone = HUAN_XI_SHA.replace("净无泥", "清无泥")              # 净 (仄) -> 清 (平) at a fixed 仄
    result = check_ci(one_tone, "浣溪沙")
    assert result["strict"] == 0 and result["lenient"] == 1 and result["faults"] == 1
    assert result["checks"] == {"shape": True, "tones": False, "rhymes": True}
    assert result["mismatches"] == [{"pos": 11, "char": "清", "want": "仄", "got": "平", "rule": "tone"}]

    two_tones = one_tone.replace("子规啼", "飞规啼")
    assert check_ci(two_tones, "浣溪沙")["lenient"] == 0

    off_rhyme = HUAN_XI_SHA.replace("唱黄鸡", "唱黄莺")            # 莺: 平 but 第十一部, not 第三部
    result = check_ci(off_rhyme, "浣溪沙")
    assert result["strict"] == 0 and result["lenient"] == 1
    assert result["checks"] == {"shape": True, "tones": True, "rhymes": False}
    assert result["mismatches"][0]["char"] == "莺" and result["mismatches"][0]["want"] == "词林正韵第3部"

    # 入声 rhymes (第十八部) do not take a 上去 rhyme: 墓 is 仄 but 第四部
    result = check_ci(YI_QIN_E.replace("汉家陵阙", "汉家陵墓"), "忆秦娥")
    assert result["strict"] == 0 and result["lenient"] == 1 and result["checks"]["tones"]


def test_famous_ci_that_stray_from_the_strict_rules():
    # 晏殊 rhymes 来 (咍, 第五部) with 杯 回 徊 (灰, 第三部): one 平水韵 rhyme, two 词林正韵 部
    result = check_ci(HUAN_XI_SHA_YAN_SHU, "浣溪沙")
    assert result["strict"] == 0 and result["lenient"] == 1
    assert [m["char"] for m in result["mismatches"]] == ["来"]
    # 温庭筠's 脉 (仄) where the 钦定词谱 pattern of 忆江南 fixes 平
    result = check_ci(WANG_JIANG_NAN, "望江南")
    assert result["strict"] == 0 and result["lenient"] == 1 and result["mismatches"][0]["char"] == "脉"


def test_rhyme_groups_may_mix_ping_and_ze_of_one_bu():
    # 西江月 rhymes 平 and 仄 of one 部 (苏轼: 霄 骄 桥 平, 草 晓 仄 — 第八部)
    xi_jiang_yue = ("照野弥弥浅浪，横空隐隐层霄。障泥未解玉骢骄，我欲醉眠芳草。"
                    "可惜一溪风月，莫教踏碎琼瑶。解鞍欹枕绿杨桥，杜宇一声春晓。")
    result = check_ci(xi_jiang_yue, "西江月")
    assert result["strict"] == 1, result


def test_unknown_tune_uses_the_items_own_pattern():
    assert isinstance(check_ci(YI_QIN_E, "没有这个词牌"), str)
    rules = {"cipai": "自度曲", "lines": [3, 5], "tones": ["平平仄", "中仄仄平平"], "rhymes": [2], "rhyme_tone": "平"}
    pattern = pattern_from_rules(rules)
    assert pattern.lines == ("平平仄", "中仄仄平平") and pattern.rhymes == ((7,),)
    assert check_ci("江南好，风景旧曾谙", "自度曲", pattern)["strict"] == 1
    assert check_ci("江南好，风景旧曾见", "自度曲", pattern)["strict"] == 0   # 见: 仄 where 平 rhymes


def _item(task, question, answer, rules):
    return {"benchmark": "fuxi", "task": task, "format": "generation", "question": question, "answer": answer,
            "choices": [], "metadata": {"rules": rules}}


def test_scorers_are_routed_and_fill_the_score_row():
    assert card("fuxi").scorer_for("CG", "generation") == "couplet_rules"
    assert card("fuxi").scorer_for("CiG", "generation") == "ci_rules"
    couplet = _item("CG", "两个黄鹂鸣翠柳", "一行白鹭上青天", {"type": "couplet", "clause_lengths": [7], "ending_tone": "平"})
    row = score_response(couplet, "下联：一行白鹭过江北")
    assert row["scorer"].startswith("couplet_rules@") and row["score"] == 0.0 and row["reason"] is None
    assert row["extracted"] == "一行白鹭过江北"
    assert row["details"]["strict"] == 0 and row["details"]["lenient"] == 1
    ci = _item("CiG", "词牌：忆秦娥 题目：秋思", YI_QIN_E, {"type": "ci", "cipai": "忆秦娥"})
    row = score_response(ci, YI_QIN_E)
    assert row["scorer"].startswith("ci_rules@") and row["score"] == 1.0 and row["details"]["lenient"] == 1
    # the tune from the input when the rules do not name it
    ci["metadata"] = {}
    assert score_response(ci, YI_QIN_E)["score"] == 1.0
    ci["question"] = "题目：秋思"
    assert score_response(ci, YI_QIN_E)["reason"] == "the item names no cipai"


def test_sample_golds_pass_strict():
    """The oracle answers the gold: every CG / CiG sample must pass the strict rules."""
    result = parse_source(SourceSpec("fuxi", ROOT / "data" / "samples" / "fuxi", "sample"))
    items = [i for i in result.items if i["task"] in ("CG", "CiG")]
    assert len(items) == 6
    for item in items:
        row = score_response(item, item["answer"])
        assert row["score"] == 1.0, (item["item_id"], row["details"])


def test_ci_part_labels_and_bare_titles_are_dropped():
    halves = "上阕：\n" + YI_QIN_E[:25] + "\n下阕：\n" + YI_QIN_E[25:]
    assert check_ci("忆秦娥 秋思\n" + halves, "忆秦娥")["strict"] == 1
    assert check_ci(YI_QIN_E + "\n注：此词写秋景。", "忆秦娥")["strict"] == 0   # a commentary breaks the shape


def test_an_answer_with_an_english_preamble_is_scored():
    """"Sure, here is the poem:" before the ci raised IndexError (a first line without a Han
    character) and failed Fùxì's scores step; the preamble has no clause, so the ci is checked."""
    assert clean_ci("Sure") == "Sure"
    ci = _item("CiG", "词牌：忆秦娥 题目：秋思", YI_QIN_E, {"type": "ci", "cipai": "忆秦娥"})
    assert score_response(ci, "Sure, here is the poem:\n" + YI_QIN_E)["score"] == 1.0
    assert score_response(ci, "Sure")["score"] == 0.0
