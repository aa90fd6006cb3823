"""The item n-gram index stored per benchmark (the `item_ngrams` lake table) and read back for a
scan is the index of all the benchmarks' items at once: the same n-grams, kinds and looked-up
hashes, and the same verdicts on a corpus. The texts are wenheng's own."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from pipeline import schema
from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.engines import scan_corpus
from pipeline.contamination.index import build_index, index_table, merged
from pipeline.contamination.overlap import overlap_rows
from tests.unit.contamination.test_contamination_levels import DOCS, ITEMS, N, item

# a second benchmark that shares the first's template stem: a stem is template only within its own
# benchmark (three items of it here, below the cutoff), so the split must count per benchmark
OTHER = [item(f"other-{k}", "请把下面这段文言文翻译成现代汉语并注意其中实词和虚词的准确意思：", answer,
              benchmark="theirs") for k, answer in enumerate(["子曰学而时习之不亦说乎有朋自远方来不亦乐乎",
                                                              "温故而知新可以为师矣", ""])]
TOO_SHORT = [item("short", "何谓仁", "爱人", benchmark="theirs")]


def _round_trip(benchmarks: list[list[dict]], n: int = N):
    tables = [pa.Table.from_pandas(index_table(build_index(items, n)).to_pandas(), schema=schema.ITEM_NGRAMS)
              for items in benchmarks]
    return merged(tables, n)


def _runs_of_part(index) -> np.ndarray:
    """Per n-gram: whether it continues the previous one's part (what a run of matches follows)."""
    same = np.zeros(len(index.gram_part), dtype=bool)
    same[1:] = (index.gram_part[1:] == index.gram_part[:-1]) & (index.gram_pos[1:] == index.gram_pos[:-1] + 1)
    return same


def test_merged_tables_equal_the_index_of_all_items():
    whole = build_index(ITEMS + OTHER + TOO_SHORT, N)
    stored = _round_trip([ITEMS, OTHER + TOO_SHORT])
    assert stored.items == whole.items and stored.digest == whole.digest
    assert np.array_equal(stored.hashes, whole.hashes)
    for name in ("unit_item", "unit_field", "gram_unit", "gram_hash", "gram_kind", "gram_option"):
        assert np.array_equal(getattr(stored, name), getattr(whole, name)), name
    assert np.array_equal(_runs_of_part(stored), _runs_of_part(whole))
    # the pieces name the same groups of n-grams (numbered otherwise)
    _, whole_piece = np.unique(whole.gram_piece, return_inverse=True)
    _, stored_piece = np.unique(stored.gram_piece, return_inverse=True)
    assert np.array_equal(whole_piece, stored_piece)


def test_a_scan_reads_the_same_verdicts_from_the_stored_index(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    docs = [*DOCS, {"id": "lesson", "text": "课文：" + OTHER[0]["answer"]}]
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    spec = CorpusSpec(paths=[str(corpus)], fields=["text"], id_field="id", version="1")
    rows = {}
    for name, index in (("whole", build_index(ITEMS + OTHER + TOO_SHORT, N)),
                        ("stored", _round_trip([ITEMS, OTHER + TOO_SHORT]))):
        scan = scan_corpus(spec, "c", index, tmp_path / name, log=lambda line: None)
        rows[name] = overlap_rows(index, scan, "c", spec)
    assert rows["stored"] == rows["whole"]
    levels = {r["item_id"]: r["level"] for r in rows["stored"]}
    assert levels["short"] == "too_short" and levels["copied"] == "item"


def test_only_the_rows_of_the_asked_size_are_read():
    both = pa.concat_tables([index_table(build_index(ITEMS, N)), index_table(build_index(ITEMS, 8))])
    assert merged([both], 8).digest == build_index(ITEMS, 8).digest
    assert merged([both], N).digest == build_index(ITEMS, N).digest
    assert len(merged([both], 21).items) == 0
