"""Dedup and script logic, without Dagster."""

from __future__ import annotations

import random

import numpy as np
import opencc
import pytest
from datasketch import LeanMinHash, MinHash, MinHashLSH

from pipeline.dedup import DedupParams, analyse, cluster, conflicting_clusters, evaluation_items
from pipeline.dedup.keys import match_keys, strip_templates
from pipeline.dedup.minhash import (
    _fold32,
    _permutations,
    candidate_pairs,
    lsh_bands,
    shingle_hashes,
    signatures,
    verified_pairs,
)
from pipeline.schema import answer_hash, content_hash
from pipeline.script import VARIANT_CONFIGS, convert, detect_script, make_variant

# Made-up and classical (public-domain) sentences, long enough for 5-gram keys.
PASSAGES = [
    "先天下之忧而忧后天下之乐而乐欤噫微斯人吾谁与归时六年九月十五日",
    "落霞与孤鹜齐飞秋水共长天一色渔舟唱晚响穷彭蠡之滨雁阵惊寒声断衡阳之浦",
    "天时不如地利地利不如人和三里之城七里之郭环而攻之而不胜夫环而攻之必有得天时者矣",
    "学而时习之不亦说乎有朋自远方来不亦乐乎人不知而不愠不亦君子乎曾子曰吾日三省吾身",
    "北冥有鱼其名为鲲鲲之大不知其几千里也化而为鸟其名为鹏鹏之背不知其几千里也",
    "臣本布衣躬耕于南阳苟全性命于乱世不求闻达于诸侯先帝不以臣卑鄙猥自枉屈三顾臣于草庐之中",
    "予观夫巴陵胜状在洞庭一湖衔远山吞长江浩浩汤汤横无际涯朝晖夕阴气象万千此则岳阳楼之大观也",
    "庆历四年春滕子京谪守巴陵郡越明年政通人和百废具兴乃重修岳阳楼增其旧制刻唐贤今人诗赋于其上",
]


def _item(item_id, question, benchmark="wenmind", answer="A", choices=(), task=None, context=None):
    item = {"item_id": item_id, "benchmark": benchmark, "task": task, "context": context, "question": question,
            "choices": list(choices), "answer": answer, "references": []}
    return item | {"content_hash": content_hash(item), "answer_hash": answer_hash(item)}


def _clusters(rows):
    found = {}
    for r in rows:
        found.setdefault(r["cluster_id"], set()).add(r["item_id"])
    return sorted(sorted(members) for members in found.values())


# --- match keys ------------------------------------------------------------------------------

def match_key(text):
    return match_keys([text])[0]


def test_match_key_ignores_script_space_and_punctuation():
    assert match_key("學而時習之， 不亦說乎？") == match_key("学而时习之不亦说乎")


def test_match_key_applies_nfkc_and_converts_by_character():
    assert match_key("ＡＢＣ１２３，“學”") == "abc123学"
    assert match_key("乾隆") == match_key("干隆")   # one mapping per character, whatever the phrase
    assert match_key("cafe\u0301") == match_key("café")  # composed by NFKC on the per-text path


def test_bulk_keys_equal_one_by_one():
    texts = ["學而時習之，不亦說乎？", "", "①②", "cafe\u0301 ＡＢＣ", "line one\nline two", "〓〓天地"]
    assert match_keys(texts) == [match_key(t) for t in texts]


# --- templates -------------------------------------------------------------------------------

def test_templates_are_learnt_per_task_and_stripped():
    items = [_item(f"t/{i}", f"把文言文翻译为白话文：\n{p[:12]}", task="c2m") for i, p in enumerate(PASSAGES)]
    items += [_item(f"o/{i}", f"下面成语出自哪里\n{p[:4]}", task="idiom") for i, p in enumerate(PASSAGES)]
    keys = analyse(items).keys
    assert keys[:len(PASSAGES)] == [p[:12] for p in PASSAGES]
    assert keys[len(PASSAGES):] == [p[:4] for p in PASSAGES]


def test_a_group_of_identical_items_keeps_its_key():
    keys = strip_templates(["温故而知新"] * 5, ["g"] * 5, DedupParams())
    assert keys == ["温故而知新"] * 5


def test_templated_distinct_items_are_not_merged():
    # Short content under a long shared stem: without template stripping these look alike.
    wenmind = [_item(f"w/{i}", f"请将下面的古诗词内容翻译成白话文。\n古诗词内容：{p[:8]}", task="poem")
               for i, p in enumerate(PASSAGES)]
    stem = "下列句子翻译错误的一项是（）"
    aceval = [_item(f"a/{i}", stem, benchmark="aceval", task="translation", answer=None,
                    choices=[PASSAGES[i][:9], PASSAGES[i][9:18], PASSAGES[(i + 1) % 8][:9], PASSAGES[(i + 2) % 8][5:14]])
              for i in range(len(PASSAGES))]
    rows, contamination = cluster(wenmind + aceval)
    assert rows == [] and contamination == []


def test_templated_items_with_the_same_content_are_merged():
    items = [_item(f"w/{i}", f"把文言文翻译为白话文：\n{p}", task="c2m") for i, p in enumerate(PASSAGES)]
    items.append(_item("w/copy", f"把文言文翻译为白话文：{PASSAGES[2]}。", task="c2m"))
    rows, _ = cluster(items)
    assert _clusters(rows) == [["w/2", "w/copy"]]


# --- near duplicates, clusters, contamination --------------------------------------------

def test_traditional_and_simplified_forms_cluster_together():
    items = [_item("a/1", "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？"),
             _item("a/2", "學而時習之，不亦說乎？有朋自遠方來，不亦樂乎？"),
             _item("a/3", "天时不如地利，地利不如人和。城非不高也，池非不深也。")]
    rows, contamination = cluster(items)
    assert {r["item_id"] for r in rows} == {"a/1", "a/2"}
    assert [r["is_representative"] for r in sorted(rows, key=lambda r: r["item_id"])] == [True, False]
    assert not contamination


def test_near_duplicates_found_and_distinct_items_kept_apart():
    base = PASSAGES[0]
    items = [_item("x/1", base), _item("x/2", base[:-1] + "日也"),  # one character more
             _item("x/3", PASSAGES[1])]
    rows, _ = cluster(items, DedupParams(threshold=0.8))
    assert {r["item_id"] for r in rows} == {"x/1", "x/2"}
    assert all(0.8 <= r["max_jaccard"] < 1.0 for r in rows)


def test_known_near_duplicate_pairs_are_found():
    # ~120-character texts; a copy with a character changed (and one in traditional form), and a
    # copy with a title added: J >= 0.9.
    def text(i):
        return (PASSAGES[i] + PASSAGES[(i + 1) % 8][::-1] + PASSAGES[(i + 3) % 8][1::2]
                + PASSAGES[(i + 5) % 8][::-2])

    items = [_item(f"n/{i}", text(i), task="t") for i in range(len(PASSAGES))]
    items.append(_item("n/edit", text(3).replace("乐", "樂").replace("君子", "君之"), task="t"))
    items.append(_item("n/plus", "出师表" + text(5), task="t"))
    rows, _ = cluster(items)
    assert _clusters(rows) == [["n/3", "n/edit"], ["n/5", "n/plus"]]


def test_exact_duplicates_flagged_and_conflicting_gold_listed():
    q = "给下面对联拟定一个横批：\n五湖四海皆春色  万水千山尽得辉"
    items = [_item("h/1", q, answer="万象更新"), _item("h/2", q, answer="万象更新"),
             _item("h/3", q, answer="家庭幸福"), _item("h/4", PASSAGES[0], answer="x")]
    rows, _ = cluster(items)
    assert _clusters(rows) == [["h/1", "h/2", "h/3"]]
    assert {r["item_id"] for r in rows if r["exact_duplicate"]} == {"h/1", "h/2"}
    assert conflicting_clusters(items, rows) == [
        {"cluster_id": "h/1", "benchmark": "wenmind", "item_ids": ["h/1", "h/2", "h/3"]}]


def test_policy_flag_keeps_everything_and_drop_keeps_one_copy_and_conflicts():
    q = "给下面对联拟定一个横批：\n五湖四海皆春色  万水千山尽得辉"
    items = [_item("h/1", q, answer="万象更新"), _item("h/2", q, answer="万象更新"),
             _item("h/3", q, answer="家庭幸福"), _item("h/4", PASSAGES[0], answer="x"),
             _item("y/1", q, benchmark="wyweb", answer="万象更新")]
    rows, contamination = cluster(items)
    assert evaluation_items(items, rows) == items
    kept = [it["item_id"] for it in evaluation_items(items, rows, "drop")]
    assert kept == ["h/1", "h/3", "h/4", "y/1"]   # h/3 differs in gold: kept for review; y/1: other benchmark
    assert {(c["item_a"], c["item_b"]) for c in contamination} == {("h/1", "y/1"), ("h/2", "y/1"), ("h/3", "y/1")}
    with pytest.raises(ValueError, match="policy"):
        evaluation_items(items, rows, "merge")


def test_cross_benchmark_pairs_are_contamination_not_drops():
    q = "知之为知之，不知为不知，是知也。"
    items = [_item("wenmind/1", q), _item("wyweb/1", q, benchmark="wyweb")]
    rows, contamination = cluster(items)
    assert rows == []  # clusters stay inside one benchmark
    assert analyse(items).contamination == [(0, 1, 1.0)]
    assert contamination == [{"benchmark_a": "wenmind", "item_a": "wenmind/1", "benchmark_b": "wyweb",
                              "item_b": "wyweb/1", "similarity": 1.0}]


def test_shared_passage_is_contamination_across_benchmarks_but_not_a_duplicate_within():
    passage = PASSAGES[6] + PASSAGES[7]
    a = _item("aceval/1", f"{passage}\n对文意理解正确的一项是", benchmark="aceval", task="s",
              choices=["滕子京被贬到巴陵郡", "岳阳楼初建于庆历四年", "巴陵郡政事荒废", "洞庭湖在岳阳楼之北"])
    b = _item("wyweb/1", "下列说法不正确的一项是", benchmark="wyweb", task="rc", context=passage,
              choices=["重修岳阳楼是在庆历五年", "滕子京是被贬官的", "作者亲自登楼", "岳阳楼旧制已毁"])
    c = _item("aceval/2", f"{passage}\n作者写作此文的用意是", benchmark="aceval", task="s",
              choices=["劝勉友人", "描绘风景", "记录史实", "抒发忧思"])
    rows, contamination = cluster([a, b, c])
    assert rows == []  # one passage, different questions: not duplicates
    assert {(r["item_a"], r["item_b"]) for r in contamination} == {("aceval/1", "wyweb/1"), ("aceval/2", "wyweb/1")}
    assert all(0.5 <= r["similarity"] < 0.9 for r in contamination)


def test_same_text_in_two_tasks_of_one_benchmark_is_not_a_duplicate():
    poem = PASSAGES[4]
    items = [_item(f"e/{i}", f"请将下面的古诗词内容翻译成英文：\n{p}", task="english") for i, p in enumerate(PASSAGES)]
    items += [_item(f"t/{i}", f"根据下面的古诗词内容，给出相应的题目和作者。\n古诗词内容：{p}", task="title")
              for i, p in enumerate(PASSAGES)]
    items.append(_item("x/1", poem, benchmark="wyweb", task="rc"))
    rows, contamination = cluster(items)
    assert rows == []
    assert {(r["item_a"], r["item_b"]) for r in contamination} == {("e/4", "x/1"), ("t/4", "x/1")}


def test_same_input_same_clusters_in_any_order():
    rng = random.Random(3)
    items = [_item(f"d/{i:02d}", PASSAGES[i % 8] * 2 + ("" if i < 8 else "附记" * (i % 3)), task="t")
             for i in range(24)]
    first, second = cluster(items), cluster(items)
    assert first == second
    shuffled = items[:]
    rng.shuffle(shuffled)
    assert _clusters(cluster(shuffled)[0]) == _clusters(first[0])
    assert len(_clusters(first[0])) == 8


# --- MinHash and LSH are datasketch's --------------------------------------------------------

def test_signatures_equal_datasketch_minhash():
    params = DedupParams()
    keys = [p * k for k, p in enumerate(PASSAGES, start=1)] + ["短", "短文"]
    hashes, offsets = shingle_hashes(keys, params)
    sigs = signatures(hashes, offsets, params)
    for i in range(len(keys)):
        expected = MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=int)
        expected.update_batch(_fold32(hashes[offsets[i]:offsets[i + 1]]).tolist())
        assert np.array_equal(sigs[i], expected.hashvalues)


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (256, 42), (16, 0)])
def test_permutations_equal_datasketch(num_perm, seed):
    a, b = MinHash(num_perm=num_perm, seed=seed).permutations
    mine_a, mine_b = _permutations(num_perm, seed)
    assert mine_a.dtype == a.dtype and mine_b.dtype == b.dtype
    assert np.array_equal(mine_a.ravel(), a) and np.array_equal(mine_b.ravel(), b)


def test_candidate_pairs_equal_a_minhash_lsh_index():
    params = DedupParams()
    rng = random.Random(5)
    keys = []
    for p in PASSAGES:
        for edits in range(6):
            chars = list(p * 2)
            for pos in rng.sample(range(len(chars)), edits * 3):
                chars[pos] = "之"
            keys.append("".join(chars))
    hashes, offsets = shingle_hashes(keys, params)
    sigs = signatures(hashes, offsets, params)
    lsh = MinHashLSH(num_perm=params.num_perm,
                     params=lsh_bands(params.lsh_threshold, params.num_perm, params.lsh_recall))
    minhashes = [LeanMinHash(seed=params.seed, hashvalues=sig, scheme="affine32") for sig in sigs]
    for i, m in enumerate(minhashes):
        lsh.insert(i, m)
    queried = {(min(i, j), max(i, j)) for i, m in enumerate(minhashes) for j in lsh.query(m) if i != j}
    assert {tuple(p) for p in candidate_pairs(sigs, range(len(keys)), params).tolist()} == queried
    exact = verified_pairs(hashes, offsets, candidate_pairs(sigs, range(len(keys)), params), 0.0)
    for i, j, sim in exact:
        a, b = set(hashes[offsets[i]:offsets[i + 1]].tolist()), set(hashes[offsets[j]:offsets[j + 1]].tolist())
        assert sim == pytest.approx(len(a & b) / len(a | b))


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
@pytest.mark.parametrize("num_perm", [64, 128])
def test_lsh_bands_reach_the_recall_target(threshold, num_perm):
    bands, rows = lsh_bands(threshold, num_perm, 0.99)
    assert bands * rows <= num_perm
    assert 1 - (1 - threshold ** rows) ** bands >= 0.99


# --- script ----------------------------------------------------------------------------------

def test_official_opencc_binding_is_installed():
    # opencc-python-reimplemented installs the same module name and lacks CONFIGS.
    assert hasattr(opencc, "CONFIGS") and "s2twp.json" in opencc.CONFIGS


def test_detect_script():
    assert detect_script("学而时习之，不亦说乎") == "simplified"
    assert detect_script("學而時習之，不亦說乎") == "traditional"
    assert detect_script("天地山水") == "neutral"
    assert detect_script("学而时习之，學而時習之") == "mixed"
    for config in ("s2t", "s2tw", "s2hk"):  # every traditional standard reads as traditional
        assert detect_script(convert("为了着想，里面的线很长，学而时习之，不亦说乎", config)) == "traditional"


def test_variants_convert_every_text_field_and_keep_the_original():
    item = _item("v/1", "學而時習之", choices=["說話", "悅"]) | {"answer": "說"}
    simplified = make_variant(item, "simplified")
    assert simplified["question"] == "学而时习之" and simplified["choices"] == ["说话", "悦"]
    assert simplified["answer"] == "说"
    assert make_variant(item, "original")["question"] == "學而時習之"
    assert make_variant(simplified | {"benchmark": "x"}, "traditional")["question"] == "學而時習之"


def test_regional_traditional_variants():
    item = _item("v/2", "为了着想，里面说话")
    assert make_variant(item, "traditional")["question"] == "爲了着想，裏面說話"
    assert make_variant(item, "traditional_tw")["question"] == "為了著想，裡面說話"
    assert make_variant(item, "traditional_hk")["question"] == "為了着想，裏面説話"
    assert make_variant(item, "traditional", config="s2twp")["question"] == "為了著想，裡面說話"
    assert set(VARIANT_CONFIGS) >= {"original", "simplified", "traditional", "traditional_tw", "traditional_hk"}
    with pytest.raises(ValueError, match="variant"):
        make_variant(item, "klingon")


def test_cpdue_best_and_worst_about_the_same_poems_are_no_gold_conflict():
    """CP-DUE's OQ asks "best" and "worst" about the same three poems: near-copies with different
    golds by design. consistent_gold compares only the items that ask the same part."""
    from conftest import ROOT

    from pipeline.config import SourceSpec
    from pipeline.dedup.policy import asked_part
    from pipeline.ingest import parse_source
    from pipeline.standardize import standardize

    raw = parse_source(SourceSpec("cpdue", ROOT / "data" / "samples" / "cpdue", "sample")).items
    items, _ = standardize(raw)
    rows, _ = cluster(items)
    oq = {it["item_id"] for it in items if it["task"] == "OQ"}
    clustered = {r["item_id"] for r in rows}
    assert len(oq & clustered) >= 2, "the sample's best/worst pairs should cluster as near-copies"
    assert conflicting_clusters(items, rows) == []
    # the same items without their part would be a conflict: the rule, not the data, makes it pass
    bare = [{**it, "metadata": "{}"} for it in items]
    assert conflicting_clusters(bare, rows)
    # and two items asking the same part with different golds still are one
    best = [it for it in items if it["item_id"] in oq & clustered and asked_part(it) == "best"]
    twin = {**best[0], "item_id": best[0]["item_id"] + "-copy", "answer": "B" if best[0]["answer"] != "B" else "C",
            "answer_hash": None}
    twin_rows = rows + [{**next(r for r in rows if r["item_id"] == best[0]["item_id"]), "item_id": twin["item_id"]}]
    assert conflicting_clusters([*items, twin], twin_rows)
