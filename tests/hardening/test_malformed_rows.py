"""Bad rows stay rows: every case of the malformed-input corpus (corpus/cases.yaml, one folder per
case in a benchmark's own layout) gives its bad row as a quarantine row with file, locator and a
reason naming the problem, keeps every valid row of the same file as an item, reconciles per file,
and can be stored (schema.to_frame). One small pipeline run shows that a lone surrogate in one
benchmark's file no longer stops the others."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, write_yaml

from pipeline import benchmarks, schema
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.sources.accounting import MERGED_ROWS, rows_accounted
from pipeline.sources.text import MAX_FIELD_CHARS

CORPUS = Path(__file__).parent / "corpus"
CASES = yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8"))
FORMATS = {"wenmind": "WenMind JSON", "aceval": "AC-EVAL CSV / mapping", "fuxi": "Fùxì JSONL", "cpdue": "CP-DUE JSONL"}


def test_the_corpus_covers_every_format():
    assert len(CASES) >= 40
    assert len({c["case"] for c in CASES}) == len(CASES)
    by_benchmark = Counter(c["benchmark"] for c in CASES)
    assert set(by_benchmark) == set(benchmarks.names())
    wyweb_files = {Path(f).suffix for c in CASES if c["benchmark"] == "wyweb" for f in c["rows"]}
    assert wyweb_files == {".tsv", ".json", ".jsonl"}
    assert any("subject_mapping.json" in b["reason"] for c in CASES for b in c["bad"])
    for case in CASES:
        assert (CORPUS / case["case"]).is_dir(), case["case"]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_a_bad_row_is_a_quarantine_row_and_nothing_else_is_lost(case):
    result = parse_source(SourceSpec(case["benchmark"], CORPUS / case["case"], "corpus"))
    # the bad rows: each one a quarantine row of its own, with file, locator and the reason
    quarantined = {(q["source_file"], q["source_locator"]): q["reason"] for q in result.quarantine}
    for bad in case["bad"]:
        key = (bad["file"], bad["locator"])
        assert key in quarantined, f"{key} is not a quarantine row: {sorted(quarantined)}"
        assert bad["reason"] in quarantined[key], (key, quarantined[key])
    assert all(q["source_file"] and q["source_locator"] and q["reason"] for q in result.quarantine)
    assert not any(q["source_locator"] in ("file", "path") for q in result.quarantine), "a row, never the file"
    # every valid row in the same file is an item; raw counts count rows, per file
    items = Counter(i["source_file"] for i in result.items)
    assert dict(items) == {f: n for f, n in case["items"].items() if n}
    assert dict(result.raw_counts) == case["rows"]
    assert len(result.quarantine) == sum(case["rows"].values()) - len(result.items) - sum(
        len(i["metadata"].get(MERGED_ROWS) or ()) for i in result.items)
    assert rows_accounted(result.rows()) == result.raw_counts and not result.incomplete
    # and everything can be stored: items and quarantine rows in one Arrow table
    frame = schema.to_frame(result.rows(), schema.RAW_ROWS)
    assert len(frame) == len(result.items) + len(result.quarantine)
    assert rows_accounted(schema.records(frame)) == result.raw_counts


def test_a_file_that_cannot_be_read_at_all_is_one_row_counted_as_one(tmp_path):
    """The one case for a file-level row: the file is not UTF-8 / not JSON / not an array."""
    (tmp_path / "WenMind_a.json").write_text('{"id": 1}', encoding="utf-8")
    (tmp_path / "WenMind_b.json").write_text('[{"id": 1,', encoding="utf-8")
    result = parse_source(SourceSpec("wenmind", tmp_path, "v"))
    assert [(q["source_file"], q["source_locator"]) for q in result.quarantine] == [
        ("WenMind_a.json", "file"), ("WenMind_b.json", "file")]
    assert [q["reason"].split(":")[0] for q in result.quarantine] == [
        "expected a JSON array of objects, not an object", "not valid JSON"]
    assert dict(result.raw_counts) == {"WenMind_a.json": 1, "WenMind_b.json": 1} and not result.incomplete


def test_the_field_limit_is_one_documented_constant():
    readme = (ROOT / "pipeline" / "sources" / "README.md").read_text(encoding="utf-8")
    assert f"{MAX_FIELD_CHARS:,}" in readme and "MAX_FIELD_CHARS" in readme


def test_a_lone_surrogate_in_one_benchmark_does_not_stop_the_others(workdir, monkeypatch):
    """Before, `"\\ud800"` in one WenMind row made schema.to_frame raise and no benchmark was built.
    Now the row is quarantined and every benchmark builds through the graph (baseline engine)."""
    from pipeline.runner import run_pipeline

    wenmind = CORPUS / "wenmind" / "lone_surrogate_question" / "WenMind_case.json"
    samples = ROOT / "data" / "samples"
    entries = {"wenmind": wenmind, "aceval": samples / "aceval", "wyweb": samples / "wyweb",
               "fuxi": samples / "fuxi", "cpdue": samples / "cpdue"}
    sources = write_yaml(workdir / "sources.yaml", "benchmarks:\n" + "".join(
        f"  {name}: {{path: '{path}', version: t}}\n" for name, path in entries.items()))
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml",
                                                        "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
    names = list(benchmarks.names())
    summary = run_pipeline(names, ["oracle"], selection="group:sources or group:items or key:warehouse",
                           log=lambda _: None)
    assert summary.ok
    import duckdb

    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        built = dict(con.execute("SELECT benchmark, count(*) FROM items GROUP BY 1").fetchall())
        quarantined = con.execute("SELECT source_file, source_locator, reason FROM quarantine").fetchall()
    assert set(built) == set(names) and built["wenmind"] == 2
    assert quarantined == [("WenMind_case.json", "1", "lone surrogate U+D800 in question (not valid Unicode text)")]


def test_a_50_mb_row_is_quarantined_as_an_excerpt_and_the_warehouse_publishes(workdir, monkeypatch):
    """A 50 MB row used to be kept whole in `raw`: the lake held it, and the warehouse build (its
    DuckDB memory_limit four times the lake's size) failed every publish with OutOfMemoryException.
    Now the row keeps its first 4 KB, its length and its sha256, and the run publishes."""
    import hashlib

    import duckdb

    from pipeline.runner import run_pipeline
    from pipeline.sources.text import RAW_EXCERPT_BYTES

    source = workdir / "fuxi"
    source.mkdir()
    lines = (ROOT / "data" / "samples" / "fuxi" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    # 50 MB that parquet compresses to almost nothing, so the lake stays small and with it the
    # build's memory_limit (100 MB): the row used to be loaded whole all the same
    big = '{"id": "big-1", "task": "CG", "input": "' + "鹅，鹅，鹅，曲项向天歌。" * 1_400_000 + '"}'
    (source / "test.jsonl").write_text("\n".join([*lines, big]) + "\n", encoding="utf-8")
    sources = write_yaml(workdir / "sources.yaml", f"benchmarks:\n  fuxi: {{path: '{source}', version: t}}\n")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml",
                                                        "models:\n  oracle: {engine: baseline, strategy: oracle}\n")))
    summary = run_pipeline(["fuxi"], ["oracle"], selection="group:sources or group:items or key:warehouse",
                           log=lambda _: None)
    assert summary.ok, summary.failures
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        (raw, reason), = con.execute("SELECT raw, reason FROM quarantine WHERE source_locator = ?",
                                     [f"line {len(lines) + 1}"]).fetchall()
        items = con.execute("SELECT count(*) FROM items").fetchone()[0]
    assert items == len([line for line in lines if line.strip()]) and "over the limit" in reason
    assert len(raw.encode("utf-8")) < RAW_EXCERPT_BYTES + 300 and raw.startswith(big[:1000])
    assert f"{len(big):,} characters" in raw and hashlib.sha256(big.encode()).hexdigest() in raw
