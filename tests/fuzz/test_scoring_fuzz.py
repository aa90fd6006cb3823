"""No response crashes scoring: every rule scorer (pipeline.scoring.rules.SCORERS), every extractor
(pipeline/scoring/extract.py), format rule (format_rules.py, gelv.py) and labeling rule
(labeling.py) is fed text a model could send back: arbitrary Unicode, nothing, whitespace, control
and format characters, punctuation only, mixed scripts, 10,000+ characters, and realistic answers
built from each item's gold ("Sure, here is the poem:" before a ci, a gold with noise in it).
Items are the real ones: the bundled samples of every benchmark, parsed by their own adapters.

The property: nothing raises, and a scorer's row is a score in [0, 1] with no reason, or no score
with a reason ("unscored with a reason", e.g. "needs the LLM judge"), and can be stored
(schema.SCORES). Responses are read back from parquet before they are scored, so they are valid
UTF-8: no lone surrogates here (the sources' own checks quarantine those, pipeline/sources/text.py).

Budget (tests/fuzz/fuzz_budget.py). The `ci` profile (the default) runs 200 examples per test,
seeded: every run tries the same examples, after those saved in the committed example database
(tests/fuzz/examples, read-only when CI=true); a failure once found is also pinned below with
@example. A big run (random examples, ≥10,000 per test; a failure prints the example to pin):

    WENHENG_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest tests/fuzz
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import cache
from typing import Any

import pytest
from conftest import ROOT
from fuzz_budget import FUZZ, seeded  # noqa: F401 - seeded: the autouse fixture
from hypothesis import example, given
from hypothesis import strategies as st

from pipeline import benchmarks, schema
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.schema import OPTION_LETTERS
from pipeline.scoring import extract, format_rules, gelv, labeling
from pipeline.scoring.rules import SCORERS, score_response, scorer_name

# --- responses ----------------------------------------------------------------------------------

_TEXT_CHARS = st.characters(exclude_categories=["Cs"])   # any code point but lone surrogates
_WHITESPACE = " \t\n\r\x0b\x0c\u3000\u00a0\u2028\u2029\u200b\ufeff"
_PUNCTUATION = "，。、；：？！「」『』《》〈〉（）【】…—·～“”‘’,.;:?!()[]{}<>\"'-*#_/\\|@&%$^`~"
_MIXED = list("ABCDEFGHabcd0123456789答案是选项正确错误不对一二三上下联阕片词牌名题目平仄韵"
              "梅花春風雨山水月江南好αβγабвгअआइあいうアイウ한글🙂①②③ⅠⅡ𠀀𪚥") + ["**", "\n", "：", "## "]

ARBITRARY = st.text(_TEXT_CHARS, max_size=300)
WHITESPACE = st.text(st.sampled_from(_WHITESPACE), max_size=40)
CONTROL = st.text(st.characters(categories=["Cc", "Cf", "Co", "Cn", "Zl", "Zp"]), max_size=80)
PUNCTUATION = st.one_of(st.text(st.sampled_from(_PUNCTUATION), max_size=80),
                        st.text(st.characters(categories=["P", "S"]), max_size=80))
MIXED = st.lists(st.sampled_from(_MIXED), max_size=120).map("".join)
# 10,000 characters and more: a short piece repeated (a model looping), or a long drawn prefix
LONG = st.builds(lambda piece, n: piece * (10_000 // len(piece) + n),
                 st.one_of(st.text(_TEXT_CHARS, min_size=1, max_size=40), MIXED.filter(bool)),
                 st.integers(1, 50))
ANY_TEXT = st.one_of(st.just(""), ARBITRARY, WHITESPACE, CONTROL, PUNCTUATION, MIXED, LONG)


@st.composite
def realistic(draw, item: dict[str, Any]) -> str:
    """An answer as models write them, around the item's gold: a preamble, a label, a commentary,
    the gold cut, repeated, or with characters dropped in."""
    gold = item.get("answer") or ""
    letters = OPTION_LETTERS[:max(len(item.get("choices") or []), 4)]
    noise = draw(st.one_of(MIXED, PUNCTUATION, WHITESPACE))
    at = draw(st.integers(0, len(gold)))
    picks = draw(st.lists(st.sampled_from(letters), max_size=6))
    return draw(st.sampled_from([
        gold, f"Sure, here is the poem:\n{gold}", "Sure", f"答案：{gold}", f"下联：{gold}", f"**{gold}**",
        f"{gold}\n\n解析：{noise}", gold[:at] + noise + gold[at:], gold[:at], gold * 3, noise,
        "、".join(picks), "".join(picks), f"答案是{''.join(picks)}，{noise}", f"《{noise}》\n{gold}",
        f"上阕：{gold[:at]}\n下阕：{gold[at:]}", f"词牌：{noise}\n{gold}", f"{item.get('question') or ''}{noise}",
    ]))


def response_for(item: dict[str, Any]) -> st.SearchStrategy[str]:
    return st.one_of(ANY_TEXT, realistic(item))


# --- items: the bundled samples, by scorer ------------------------------------------------------


@cache
def sample_items() -> tuple[dict[str, Any], ...]:
    items = []
    for name in benchmarks.names():
        spec = SourceSpec(name, ROOT / "data" / "samples" / name, "sample")
        if name == "wenmind":
            spec = SourceSpec(name, spec.path / "WenMind_sample.json", "sample")
        items += parse_source(spec).items
    return tuple(items)


@cache
def items_by_scorer() -> dict[str, list[dict[str, Any]]]:
    """Scorer name -> the sample items routed to it (with a gold answer), plus hand-made items
    for scorers no sample card routes to."""
    by_scorer: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in sample_items():
        if item.get("answer"):
            by_scorer[scorer_name(item)].append(item)
    for name, item in _SYNTHETIC.items():
        by_scorer.setdefault(name, [item])
    return dict(by_scorer)


def _item(benchmark: str, task: str, fmt: str, answer: str, **extra: Any) -> dict[str, Any]:
    return {"item_id": f"{benchmark}/test/{task}/fuzz", "benchmark": benchmark, "task": task, "format": fmt,
            "question": extra.pop("question", "问"), "answer": answer, "choices": extra.pop("choices", []),
            "references": extra.pop("references", []), "metadata": extra.pop("metadata", {}), **extra}


_SYNTHETIC = {
    "bleu": _item("fuxi", "ACT", "translation", "学而时习之，不亦说乎？"),
    "label": _item("wenmind", "classification", "classification", "负面",
                   metadata={"labels": ["正面", "负面", "中性", "隐含正面"]}),
    "option_multi": _item("wenmind", "mcq_multi", "mcq_multi", "A、C", choices=["甲", "乙", "丙", "丁"],
                          question="下列理解不正确的两项是"),
}


def check_row(row: dict[str, Any]) -> None:
    """A score in [0, 1] and no reason, or no score and a reason; storable as a scores row."""
    assert set(row) == {"scorer", "score", "reason", "extracted", "judge_model", "details"}, row
    if row["score"] is None:
        assert isinstance(row["reason"], str) and row["reason"].strip(), row
    else:
        assert isinstance(row["score"], float) and not math.isnan(row["score"]) and 0.0 <= row["score"] <= 1.0, row
        assert row["reason"] is None, row
    assert row["extracted"] is None or isinstance(row["extracted"], str)
    key = {"item_id": "x", "benchmark": "b", "variant": "original", "setting": "s", "model": "m", "kind": "rule"}
    schema.to_frame([key | row], schema.SCORES)


# --- scorers ------------------------------------------------------------------------------------


def test_every_scorer_has_items_to_fuzz():
    assert set(items_by_scorer()) >= set(SCORERS), sorted(set(SCORERS) - set(items_by_scorer()))


@pytest.mark.parametrize("name", sorted(SCORERS))
@FUZZ
@given(data=st.data())
def test_a_scorer_never_raises(name, data):
    item = data.draw(st.sampled_from(items_by_scorer()[name]), label="item")
    text = data.draw(response_for(item), label="response")
    row = score_response(item, text)   # routed by the item's card: to this scorer
    assert row["scorer"].startswith(f"{name}@"), row
    check_row(row)


@FUZZ
@given(data=st.data())
def test_any_gold_scores_or_says_why(data):
    """Golds come from the sources: arbitrary ones (a corrected gold, an odd upstream row) too."""
    item = dict(data.draw(st.sampled_from(sample_items()), label="item"))
    item["answer"] = data.draw(st.one_of(st.none(), ANY_TEXT), label="gold")
    text = data.draw(st.one_of(st.none(), response_for(item)), label="response")
    check_row(score_response(item, text, None if text is not None else "timeout"))


# --- extractors ---------------------------------------------------------------------------------


@FUZZ
@given(text=ANY_TEXT, n=st.integers(0, len(OPTION_LETTERS)))
@example(text="Sure", n=4)
def test_extract_aceval(text, n):
    got = extract.extract_aceval(text, n)
    allowed = OPTION_LETTERS[:max(n, 4)]
    assert got in allowed or got in (extract.NO_ANSWER, extract.AMBIGUOUS, extract.UNMATCHED, extract.EMPTY)


@FUZZ
@given(text=ANY_TEXT, question=ANY_TEXT, n=st.integers(0, len(OPTION_LETTERS)), wrong=st.booleans())
def test_extract_letters(text, question, n, wrong):
    assert extract.extract_letters(text, n, wrong) <= set(OPTION_LETTERS[:max(n, 1)])
    assert isinstance(extract.asks_for_incorrect(question, [text]), bool)


@FUZZ
@given(text=ANY_TEXT, labels=st.lists(st.one_of(st.sampled_from(["正面", "负面", "中性", "隐含正面"]), ARBITRARY),
                                      max_size=5))
def test_extract_label(text, labels):
    assert extract.extract_label(text, labels) in {None, *labels}


@FUZZ
@given(text=ANY_TEXT, gold=st.one_of(ANY_TEXT, st.sampled_from(["（1）黄河入海流（2）更上一层楼", "①春②秋", "空1：甲；空2：乙"])))
def test_fill_in_blanks(text, gold):
    hits = extract.blank_hits(text, gold)
    assert len(hits) == len(extract.split_blanks(gold)) and all(isinstance(h, bool) for h in hits)
    assert isinstance(extract.normalise(text), str)


# --- format rules -------------------------------------------------------------------------------

_CIPAI = ["忆秦娥", "如梦令", "浣溪沙", "望江南", "《浪淘沙令·帘外雨潺潺》", "菩萨蛮", "卜算子", "没有这个词牌", "", "·"]


@FUZZ
@given(text=ANY_TEXT, names=st.lists(st.one_of(st.sampled_from(_CIPAI), ARBITRARY), max_size=3).map(tuple))
@example(text="Sure", names=())
@example(text="Sure, here is the poem:\n江南好", names=("望江南",))
def test_clean_responses(text, names):
    assert isinstance(format_rules.clean_ci(text, names), str)
    assert isinstance(format_rules.clean_couplet(text), str)


@FUZZ
@given(first=st.one_of(st.sampled_from(["两个黄鹂鸣翠柳", "风声雨声读书声，声声入耳", "雨"]), ANY_TEXT),
       text=ANY_TEXT, ending=st.sampled_from(["平", "仄", None]))
def test_check_couplet(first, text, ending):
    result = format_rules.check_couplet(first, text, ending)
    assert result["strict"] in (0, 1) and result["lenient"] in (0, 1) and result["strict"] <= result["lenient"]


_TONES = st.sampled_from("平仄中")


@st.composite
def ci_rules(draw) -> dict[str, Any]:
    """An item's own ci pattern as the Fùxì adapter accepts it (pipeline/benchmarks/fuxi/adapter.py)."""
    lines = draw(st.lists(st.integers(1, 9), min_size=1, max_size=8))
    rules: dict[str, Any] = {"cipai": draw(st.one_of(st.sampled_from(_CIPAI[:-2]), MIXED.filter(str.strip))),
                             "lines": lines,
                             "rhymes": draw(st.lists(st.integers(1, len(lines)), min_size=1, unique=True)),
                             "rhyme_tone": draw(st.sampled_from(["平", "仄"]))}
    if draw(st.booleans()):
        rules["tones"] = [draw(st.text(_TONES, min_size=n, max_size=n)) for n in lines]
    return rules


@FUZZ
@given(rules=ci_rules(), text=ANY_TEXT)
@example(rules={"cipai": "望江南", "lines": [3, 5], "rhymes": [2], "rhyme_tone": "平"}, text="Sure")
def test_check_ci(rules, text):
    pattern = format_rules.pattern_from_rules(rules)
    assert pattern is not None and len(pattern.pattern) == sum(rules["lines"])
    result = format_rules.check_ci(text, rules["cipai"], pattern)
    assert isinstance(result, dict) and result["strict"] <= result["lenient"]


@FUZZ
@given(name=st.one_of(st.sampled_from(_CIPAI), ANY_TEXT), text=ANY_TEXT)
def test_check_ci_of_any_tune(name, text):
    result = format_rules.check_ci(text, name)
    assert isinstance(result, str) or result["strict"] in (0, 1)
    found = format_rules.cipai_of({"question": f"词牌：{name}", "metadata": {"rules": {"cipai": text}}})
    assert found is None or isinstance(found, str)
    assert gelv.find_cipai(name) is None or gelv.find_cipai(name).variants
    for ch in text[:50]:
        assert gelv.tone(ch) in (None, "平", "仄", "多")


# --- labeling -----------------------------------------------------------------------------------

_MARKUP = {"PER": ["《", "》"], "LOC": ["【", "】"], "BOOK": ["「", "」"]}


# golds as the sources hold them (a passage: the longest real field is some 3,100 characters); a
# 10,000-character gold against a 10,000-character answer makes difflib's alignment take minutes
GOLD_PASSAGE = st.one_of(st.sampled_from(["学而时习之，不亦说乎？", "《孔子》曰：「学」于【鲁】。"]), ARBITRARY, WHITESPACE,
                         CONTROL, PUNCTUATION, MIXED)


@FUZZ
@given(gold=GOLD_PASSAGE, text=ANY_TEXT)
def test_labeling_f1(gold, text):
    for counts in (labeling.punctuation_f1(gold, text), labeling.entity_f1(gold, text, _MARKUP)):
        assert 0.0 <= counts["f1"] <= 1.0 and min(counts["tp"], counts["fp"], counts["fn"]) >= 0
