"""Dedup and script logic, without Dagster."""

from __future__ import annotations

from pipeline.dedup import DedupParams, cluster, match_key
from pipeline.schema import answer_hash, content_hash
from pipeline.script import detect_script, make_variant


def _item(item_id, question, benchmark="wenmind", answer="A", choices=()):
    item = {"item_id": item_id, "benchmark": benchmark, "context": None, "question": question,
            "choices": list(choices), "answer": answer, "references": []}
    return item | {"content_hash": content_hash(item), "answer_hash": answer_hash(item)}


def test_match_key_ignores_script_space_and_punctuation():
    assert match_key("學而時習之， 不亦說乎？") == match_key("学而时习之不亦说乎")


def test_traditional_and_simplified_forms_cluster_together():
    items = [_item("a/1", "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？"),
             _item("a/2", "學而時習之，不亦說乎？有朋自遠方來，不亦樂乎？"),
             _item("a/3", "天时不如地利，地利不如人和。城非不高也，池非不深也。")]
    rows, contamination = cluster(items)
    assert {r["item_id"] for r in rows} == {"a/1", "a/2"}
    assert [r["is_representative"] for r in sorted(rows, key=lambda r: r["item_id"])] == [True, False]
    assert not contamination


def test_near_duplicates_found_and_distinct_items_kept_apart():
    base = "先天下之忧而忧后天下之乐而乐欤噫微斯人吾谁与归时六年九月十五日"
    items = [_item("x/1", base), _item("x/2", base[:-1] + "日也"),  # one character differs
             _item("x/3", "落霞与孤鹜齐飞秋水共长天一色渔舟唱晚响穷彭蠡之滨雁阵惊寒声断衡阳之浦")]
    rows, _ = cluster(items, DedupParams(threshold=0.8))
    assert {r["item_id"] for r in rows} == {"x/1", "x/2"}
    assert all(0.8 <= r["max_jaccard"] < 1.0 for r in rows)


def test_cross_benchmark_pairs_are_contamination_not_drops():
    q = "知之为知之，不知为不知，是知也。"
    rows, contamination = cluster([_item("wenmind/1", q), _item("wyweb/1", q, benchmark="wyweb")])
    assert all(r["is_representative"] for r in rows)  # each benchmark keeps its own copy
    assert contamination == [{"benchmark_a": "wenmind", "item_a": "wenmind/1", "benchmark_b": "wyweb",
                              "item_b": "wyweb/1", "similarity": 1.0}]


def test_same_input_same_clusters():
    items = [_item(f"d/{i}", "温故而知新可以为师矣" * 3 + str(i % 3)) for i in range(12)]
    assert cluster(items) == cluster(items)


def test_detect_script():
    assert detect_script("学而时习之，不亦说乎") == "simplified"
    assert detect_script("學而時習之，不亦說乎") == "traditional"
    assert detect_script("天地山水") == "neutral"
    assert detect_script("学而时习之，學而時習之") == "mixed"


def test_variants_convert_every_text_field_and_keep_the_original():
    item = _item("v/1", "學而時習之", choices=["說話", "悅"]) | {"answer": "說"}
    simplified = make_variant(item, "simplified")
    assert simplified["question"] == "学而时习之" and simplified["choices"] == ["说话", "悦"]
    assert simplified["answer"] == "说"
    assert make_variant(item, "original")["question"] == "學而時習之"
    assert make_variant(simplified | {"benchmark": "x"}, "traditional")["question"] == "學而時習之"
