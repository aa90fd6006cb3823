"""The local engine (in this process, and a process pool over byte ranges) and Ray give identical
matches, file stats, quarantine and overlap rows for one mixed corpus: jsonl, json, txt and
parquet files, a jsonl with bad lines and bytes that are not UTF-8, and a corrupt file; the same
passages planted in several files and documents, so which occurrence is the evidence matters."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.contamination import engines, local_engine
from pipeline.contamination.corpora import CorpusSpec, shard_paths
from pipeline.contamination.index import build_index
from pipeline.contamination.overlap import overlap_rows
from pipeline.script import convert

N = 13
RANGE_BYTES = 4096

# Classical (public-domain) passages.
PASSAGES = [
    "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？",
    "北冥有鱼，其名为鲲。鲲之大，不知其几千里也；化而为鸟，其名为鹏。鹏之背，不知其几千里也。",
    "晋太元中，武陵人捕鱼为业。缘溪行，忘路之远近。忽逢桃花林，夹岸数百步，中无杂树，芳草鲜美，落英缤纷。",
    "山不在高，有仙则名。水不在深，有龙则灵。斯是陋室，惟吾德馨。苔痕上阶绿，草色入帘青。谈笑有鸿儒，往来无白丁。",
    "庆历四年春，滕子京谪守巴陵郡。越明年，政通人和，百废具兴，乃重修岳阳楼，增其旧制，刻唐贤今人诗赋于其上。",
    "夫天地者，万物之逆旅也；光阴者，百代之过客也。而浮生若梦，为欢几何？古人秉烛夜游，良有以也。",
    "天时不如地利，地利不如人和。三里之城，七里之郭，环而攻之而不胜。夫环而攻之，必有得天时者矣。",
    "世有伯乐，然后有千里马。千里马常有，而伯乐不常有。故虽有名马，祗辱于奴隶人之手，骈死于槽枥之间，不以千里称也。",
]


def _items() -> list[dict]:
    items = [{"item_id": f"q{i}", "benchmark": "mine", "task": "engines", "format": "open_qa", "context": None,
              "question": text, "choices": [], "answer": "古文", "references": []} for i, text in enumerate(PASSAGES)]
    items.append({"item_id": "mcq", "benchmark": "mine", "task": "engines", "format": "mcq_single", "context": None,
                  "question": "下列各句中，与“温故而知新，可以为师矣”意思最接近、用法也最相似的一项是",
                  "choices": ["学习旧知识时常常能够生出新的见解来", "读书应当只求新奇而不必回顾从前所学",
                              "做老师的人必须先要熟悉所有新的学问", "旧的东西没有用处，应该全部丢弃不要"],
                  "answer": "A", "references": []})
    items.append({"item_id": "short", "benchmark": "mine", "task": "engines", "format": "open_qa", "context": None,
                  "question": "举头望明月", "choices": [], "answer": "李白", "references": []})
    return items


def _filler(rng: random.Random, chars: int) -> str:
    return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(chars))


def _write_corpus(folder: Path) -> None:
    """Planted copies spread over files and over the byte ranges of the big jsonl file."""
    rng = random.Random(7)
    folder.mkdir()
    mcq = _items()[-2]
    lines = []
    for i in range(60):   # ~40 kB: split into ~10 ranges of RANGE_BYTES
        paragraphs = [_filler(rng, 150)]
        if i % 9 == 4:
            p = PASSAGES[(i // 9) % len(PASSAGES)]
            paragraphs.append(_filler(rng, 30) + (p if i % 2 else convert(p, "s2t")) + _filler(rng, 20))
        if i == 40:
            paragraphs.append(mcq["question"] + mcq["choices"][0])
        if i == 55:   # a second copy, in a later byte range: the first document stays the evidence
            paragraphs.append(PASSAGES[0])
        lines.append(json.dumps({"id": f"big-{i:03d}", "title": f"卷{i}", "paragraphs": paragraphs,
                                 "meta": {"notes": [{"text": _filler(rng, 20)}]}}, ensure_ascii=False))
    (folder / "a_big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    json_docs = [{"id": f"list-{i}", "title": "合集", "paragraphs": [_filler(rng, 100), PASSAGES[i][:25]],
                  "meta": {"notes": [{"text": PASSAGES[i + 3]}]}} for i in range(3)]
    (folder / "b_list.json").write_text(json.dumps(json_docs, ensure_ascii=False), encoding="utf-8")
    (folder / "c_lines.txt").write_text(
        "\n".join([_filler(rng, 300), PASSAGES[1] + PASSAGES[2], "", _filler(rng, 100) + PASSAGES[6], "举头望明月"]) + "\n",
        encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(
        [{"id": f"pq-{i}", "title": "表", "paragraphs": [_filler(rng, 200), PASSAGES[i % len(PASSAGES)]],
          "meta": {"notes": [{"text": "无"}]}} for i in range(0, 8, 3)]), folder / "d_table.parquet")
    # bad lines (not JSON, not an object) and bytes that are not UTF-8 around a planted passage
    mixed = (b'{"id": "m-1", "title": "\xff\xfe", "paragraphs": ["' + PASSAGES[7].encode() + b'"]}\n'
             + b"this is not json\n[1, 2, 3]\n"
             + json.dumps({"id": "m-2", "paragraphs": [PASSAGES[0]]}, ensure_ascii=False).encode() + b"\n")
    (folder / "e_mixed.jsonl").write_bytes(mixed)
    (folder / "f_corrupt.jsonl").write_bytes(b'{"id": "c", "paragraphs": ["x"]}\n' + bytes(range(256)) * 40)


@pytest.fixture(scope="module")
def ray_module():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[data]'); the Ray engine is optional")
    engines.ray_session(None, 2)
    try:
        yield ray
    finally:
        ray.shutdown()


def _scan(spec, index, cache: Path, **kwargs):
    scan = engines.scan_corpus(spec, "mixed", index, cache, log=lambda line: None, **kwargs)
    rows = overlap_rows(index, scan, "mixed", spec)
    return {"matches": scan.matches.to_pylist(),
            "files": {path: stats.to_dict() for path, stats in scan.files.items()},
            "quarantine": sorted(scan.quarantine, key=lambda q: q["path"]),
            "rows": rows, "scanned": scan.scanned}


def test_local_pool_and_ray_give_identical_results(tmp_path, monkeypatch, ray_module):
    _write_corpus(tmp_path / "corpus")
    spec = CorpusSpec(paths=[str(tmp_path / "corpus")], fields=["title", "paragraphs", "meta.notes.text"],
                      id_field="id", version="1")
    index = build_index(_items(), N)

    serial = _scan(spec, index, tmp_path / "serial")

    with monkeypatch.context() as m:
        m.setattr(local_engine, "POOL_MIN_BYTES", 0)
        m.setattr(local_engine, "RANGE_BYTES", RANGE_BYTES)
        big = str(tmp_path / "corpus" / "a_big.jsonl")
        assert len(local_engine._tasks(big, engines.Reading.of(spec))) >= 5, "the big jsonl file is not split"
        pool = _scan(spec, index, tmp_path / "pool", workers=2)

    ray = _scan(spec, index, tmp_path / "ray", engine="ray", workers=2)

    files = shard_paths(spec)
    corrupt = str(tmp_path / "corpus" / "f_corrupt.jsonl")
    # the serial result is what the others must equal: check it is a meaningful one
    assert [q["path"] for q in serial["quarantine"]] == [corrupt]
    assert "not text" in serial["quarantine"][0]["reason"]
    assert sorted(serial["files"]) == sorted(set(files) - {corrupt})
    mixed = serial["files"][str(tmp_path / "corpus" / "e_mixed.jsonl")]
    assert mixed["bad_rows"] == 2 and mixed["invalid_utf8"] == 2 and mixed["documents"] == 2
    rows = {r["item_id"]: r for r in serial["rows"]}
    # of all copies, the evidence is the smallest (file, document, offset)
    assert (rows["q0"]["input_file"], rows["q0"]["input_doc"]) == (str(tmp_path / "corpus" / "a_big.jsonl"), "big-004")
    assert rows["q0"]["input_snippet"].startswith(convert(PASSAGES[0], "s2t")[:10])
    assert (rows["q7"]["input_file"], rows["q7"]["input_doc"]) == (str(tmp_path / "corpus" / "e_mixed.jsonl"), "m-1")
    flagged = {r["item_id"] for r in serial["rows"] if r["contaminated"]}
    assert flagged == {f"q{i}" for i in range(len(PASSAGES))} | {"mcq"}
    assert rows["short"]["status"] == "too_short"

    for name, other in (("local pool", pool), ("ray", ray)):
        assert other["quarantine"] == serial["quarantine"], f"{name}: quarantine differs"
        assert other["files"] == serial["files"], f"{name}: file stats differ"
        assert other["matches"] == serial["matches"], f"{name}: matches differ"
        assert other["rows"] == serial["rows"], f"{name}: overlap rows differ"

