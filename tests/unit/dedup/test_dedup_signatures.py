"""Signatures reused by content give the clusters and contamination cluster() gives, without
rehashing unchanged keys."""

from __future__ import annotations

import dataclasses
import random

import pyarrow as pa
import pytest
from conftest import upstream

from pipeline.config import SourceSpec
from pipeline.dedup import SIGNATURES_SCHEMA, DedupParams, cluster, item_signatures
from pipeline.dedup.signatures import clusters_from_signatures, contamination_from_signatures
from pipeline.ingest import parse_source
from pipeline.schema import answer_hash, content_hash, records, to_frame
from pipeline.standardize import standardize

# Classical (public-domain) sentences and made-up stems.
PASSAGES = [
    "先天下之忧而忧后天下之乐而乐欤噫微斯人吾谁与归时六年九月十五日",
    "落霞与孤鹜齐飞秋水共长天一色渔舟唱晚响穷彭蠡之滨雁阵惊寒声断衡阳之浦",
    "天时不如地利地利不如人和三里之城七里之郭环而攻之而不胜夫环而攻之必有得天时者矣",
    "学而时习之不亦说乎有朋自远方来不亦乐乎人不知而不愠不亦君子乎曾子曰吾日三省吾身",
    "北冥有鱼其名为鲲鲲之大不知其几千里也化而为鸟其名为鹏鹏之背不知其几千里也",
    "臣本布衣躬耕于南阳苟全性命于乱世不求闻达于诸侯先帝不以臣卑鄙猥自枉屈三顾臣于草庐之中",
]


def _item(item_id, question, benchmark, task, answer="A", choices=(), context=None):
    item = {"item_id": item_id, "benchmark": benchmark, "task": task, "context": context, "question": question,
            "choices": list(choices), "answer": answer, "references": []}
    return item | {"content_hash": content_hash(item), "answer_hash": answer_hash(item)}


def _corpus(seed: int = 0) -> list[dict]:
    """Three benchmarks: templated tasks, near and exact copies, a conflicting copy, one text in
    two tasks, shared passages across benchmarks, short keys and an item with no text."""
    rng = random.Random(seed)
    items = []
    for b, bench in enumerate(("alpha", "beta", "gamma")):
        for t, task in enumerate(("translate", "name")):
            stem = "请把下面的文言文翻译成现代汉语" if task == "translate" else "下面这段话出自哪部作品"
            for n, passage in enumerate(PASSAGES):
                text = passage[b + t:] + "".join(rng.choice(passage) for _ in range(3 * (n % 3)))
                items.append(_item(f"{bench}/{task}/{n}", stem + text, bench, task, answer="ABCD"[n % 4]))
            edited = list(PASSAGES[t])
            edited[5] = "之"
            items.append(_item(f"{bench}/{task}/near", stem + "".join(edited)[b + t:], bench, task))
            items.append(dict(items[-3], item_id=f"{bench}/{task}/exact"))
        items.append(dict(items[-1], item_id=f"{bench}/name/conflict", answer="D", answer_hash="other"))
        items.append(_item(f"{bench}/short/0", "子曰", bench, "short", choices=["甲", "乙"]))
        items.append(_item(f"{bench}/empty/0", "。。", bench, "empty"))
    return items


def _signed(items, params=None):
    """Signatures made one benchmark at a time, as the partitioned assets make them."""
    rows, params = [], params or DedupParams()
    for bench in dict.fromkeys(it["benchmark"] for it in items):
        rows += item_signatures([it for it in items if it["benchmark"] == bench], params)[0]
    return rows


def test_clusters_and_contamination_equal_cluster():
    items = _corpus()
    rows = _signed(items)
    expected_clusters, expected_contamination = cluster(items)
    assert expected_clusters and expected_contamination  # the corpus has both
    assert any(r["exact_duplicate"] for r in expected_clusters)
    assert clusters_from_signatures(items, rows) == expected_clusters
    assert contamination_from_signatures(items, rows) == expected_contamination
    for bench in ("alpha", "beta", "gamma"):
        own = [it for it in items if it["benchmark"] == bench]
        assert clusters_from_signatures(own, rows) == cluster(own)[0] == [
            r for r in expected_clusters if r["benchmark"] == bench]


def test_other_params_give_the_same_as_cluster_with_them():
    items = _corpus(1)
    params = DedupParams(threshold=0.7, contamination_threshold=0.4, num_perm=128, ngram=4)
    rows = _signed(items, params)
    assert clusters_from_signatures(items, rows, params) == cluster(items, params)[0]
    assert contamination_from_signatures(items, rows, params) == cluster(items, params)[1]


def test_unchanged_keys_are_reused_and_changed_ones_hashed():
    items = _corpus()
    first, counts = item_signatures(items)
    assert counts["reused"] == 0 and counts["computed"] == sum(1 for r in first if r["key"])
    assert all((r["minhash"] is None) == (r["key"] == "") for r in first)
    again, counts = item_signatures(items, previous=first)
    assert again == first and counts == {"reused": counts["reused"], "computed": 0}
    changed = [dict(it) for it in items]
    changed[0]["question"] += "其新增之句也"
    rows, counts = item_signatures(changed, previous=first)
    assert counts["computed"] == 1 and rows[1:] == first[1:] and rows[0]["key_hash"] != first[0]["key_hash"]
    assert rows == item_signatures(changed)[0]
    assert clusters_from_signatures(changed, rows) == cluster(changed)[0]


def test_rows_survive_arrow_and_other_params_are_never_reused():
    items = _corpus()
    rows = item_signatures(items)[0]
    stored = pa.Table.from_pylist(rows, schema=SIGNATURES_SCHEMA).to_pylist()
    assert stored == rows
    assert records(to_frame(rows, SIGNATURES_SCHEMA)) == rows  # as the lake stores and reads tables
    assert item_signatures(items, previous=stored)[1]["computed"] == 0
    other = dataclasses.replace(DedupParams(), seed=2)
    assert item_signatures(items, other, previous=stored)[1]["reused"] == 0
    with pytest.raises(ValueError, match="other dedup parameters"):
        clusters_from_signatures(items, stored, other)
    with pytest.raises(ValueError, match="no signature row"):
        contamination_from_signatures(items, stored[1:])


def test_real_files_give_what_cluster_gives():
    raw = []
    for name, parts in [("wenmind", ("wenmind", "WenMind_ver1.json")), ("aceval", ("aceval",)),
                        ("wyweb", ("wyweb",))]:
        raw += parse_source(SourceSpec(name, upstream(*parts), "public")).items
    items, _ = standardize(raw)
    rows = _signed(items)
    clusters, contamination = cluster(items)
    assert contamination_from_signatures(items, rows) == contamination
    assert clusters_from_signatures(items, rows) == clusters
    for bench in ("wenmind", "aceval", "wyweb"):
        own = [it for it in items if it["benchmark"] == bench]
        assert clusters_from_signatures(own, rows) == [r for r in clusters if r["benchmark"] == bench]


def test_an_item_without_text_last_in_its_batch():
    items = [_item(f"a/t/{n}", "下面这段话出自哪部作品" + p, "a", "t") for n, p in enumerate(PASSAGES)]
    items.append(_item("a/t/empty", "下面这段话出自哪部作品", "a", "t"))  # nothing but the template
    items.append(_item("a/t/none", "。", "a", "t"))
    rows, _ = item_signatures(items)
    assert rows[-1]["key"] == "" and rows[-1]["minhash"] is None
    assert clusters_from_signatures(items, rows) == cluster(items)[0]


def test_columns_as_the_lake_stores_them_and_slim_records():
    """Signatures as an Arrow table or a pandas frame (read column by column) give what the rows
    give; contamination needs only the items' ids, benchmarks, tasks and hashes."""
    items = _corpus(2)
    rows = _signed(items)
    table = pa.Table.from_pylist(rows, schema=SIGNATURES_SCHEMA)
    expected_clusters, expected_contamination = cluster(items)
    slim = [{k: it[k] for k in ("item_id", "benchmark", "task", "content_hash", "answer_hash")} for it in items]
    for stored in (table, table.to_pandas()):
        assert contamination_from_signatures(items, stored) == expected_contamination
        assert contamination_from_signatures(slim, stored) == expected_contamination
        assert clusters_from_signatures(items, stored) == expected_clusters
    with pytest.raises(ValueError, match="no signature row"):
        contamination_from_signatures(slim, table.slice(1))
    # a row no item asks for may hold anything, wherever it is
    stray = dict(rows[0], item_id="elsewhere/t/0", minhash=b"\x01\x02\x03")
    for mixed in ([stray, *rows], [*rows[:3], stray, *rows[3:]]):
        assert contamination_from_signatures(slim, pa.Table.from_pylist(mixed, schema=SIGNATURES_SCHEMA)) == \
            expected_contamination
    # a MinHash cut short, or missing, is refused like a key hash made with other parameters
    signed = next(n for n, row in enumerate(rows) if row["minhash"] is not None)
    for broken in (rows[signed]["minhash"][:-4], None):
        bad = pa.Table.from_pylist([*rows[:signed], dict(rows[signed], minhash=broken), *rows[signed + 1:]],
                                   schema=SIGNATURES_SCHEMA)
        with pytest.raises(ValueError, match=f"{rows[signed]['item_id']} was made with other dedup parameters"):
            contamination_from_signatures(slim, bad)
        with pytest.raises(ValueError, match="other dedup parameters"):
            clusters_from_signatures(items, bad.to_pylist())
