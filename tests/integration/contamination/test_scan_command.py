"""`wenheng contamination scan` as a user runs it (a subprocess): a planted traditional-script copy
of a sample item is found, shows in corpus_overlap and moves the clean-vs-all paper tables; the Ray
engine, launched by the asset through Dagster Pipes, writes the same rows and keeps the terminal
quiet; a remembered corpus whose files vanished is one line, not a failure; what the scan read
(documents, bad lines, empty files) is printed; mistakes are one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, write_yaml

from pipeline.script import convert

SAMPLES = ROOT / "data" / "samples"
MODELS = ("models:\n  random: {engine: baseline, strategy: random, seed: 0}\n"
          "  oracle: {engine: baseline, strategy: oracle}\n")
PLANTED = "wenmind/test/classical_chinese_to_modern_chinese/7"
FILLER = "山高水長，雲深不知處。松下問童子，言師採藥去。" * 40   # our own filler text, unrelated to any item


def _sample_item(item_id: str) -> dict:
    index = item_id.rsplit("/", 1)[1]
    return next(it for it in json.loads((SAMPLES / "wenmind" / "WenMind_sample.json").read_text(encoding="utf-8"))
                if str(it["id"]) == index)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("scan")
    sources = write_yaml(tmp / "sources.yaml", (
        "benchmarks:\n"
        f"  wenmind: {{path: {SAMPLES / 'wenmind' / 'WenMind_sample.json'}, version: t}}\n"
        f"  aceval: {{path: {SAMPLES / 'aceval'}, version: t, evaluate: [dev]}}\n"))
    home = tmp / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "WENHENG_LAKE": str(tmp / "lake"), "WENHENG_WAREHOUSE": str(tmp / "wh.duckdb"),
           "WENHENG_CACHE": str(tmp / "cache"), "DAGSTER_HOME": str(home), "WENHENG_SOURCES": str(sources),
           "WENHENG_MODELS": str(write_yaml(tmp / "models.yaml", MODELS)),
           "WENHENG_CORPORA": str(tmp / "corpora.yaml"), "PYTHONUNBUFFERED": "1", "TMP_ROOT": str(tmp)}
    env.pop("WENHENG_LIMIT", None)
    done = wenheng(env, "run", "--no-report", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return env


@pytest.fixture(scope="module")
def corpus(env) -> Path:
    """Three jsonl files: the planted item (its question and answer, in traditional script, with
    other punctuation) in the middle of a long page; a near miss (the item's opening, then other
    text); unrelated pages."""
    item = _sample_item(PLANTED)
    folder = Path(env["TMP_ROOT"]) / "corpus"
    folder.mkdir()
    planted = convert(item["question"].replace("：", " ").replace("\n", "  "), "s2t") + " 譯文 " \
        + convert(item["answer"], "s2t")
    (folder / "a.jsonl").write_text(json.dumps({"text": FILLER + planted + FILLER}, ensure_ascii=False) + "\n",
                                    encoding="utf-8")
    near = item["question"][:10] + "日出而作，日入而息，鑿井而飲，耕田而食，帝力於我何有哉"
    (folder / "b.jsonl").write_text(json.dumps({"text": near}, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "c.jsonl").write_text("".join(json.dumps({"text": FILLER[i:i + 300]}, ensure_ascii=False) + "\n"
                                            for i in range(0, 3000, 300)), encoding="utf-8")
    return folder


def wenheng(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_scan_finds_the_planted_traditional_copy_and_the_clean_tables_leave_it_out(env, corpus):
    done = wenheng(env, "contamination", "scan", str(corpus), "--name", "planted", "--version", "t1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    with duckdb.connect(env["WENHENG_WAREHOUSE"], read_only=True) as con:
        rows = con.execute("SELECT item_id, level, input_share, label_share, input_doc, input_snippet FROM corpus_overlap "
                           "WHERE corpus = 'planted' AND contaminated").fetchall()
        assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(PLANTED, "item_with_answer", 1.0, 1.0)]
        assert rows[0][4].startswith("a.jsonl@") and rows[0][5].startswith(convert(_sample_item(PLANTED)["question"][:6], "s2t"))
        # the near miss shares only the opening: no item is flagged for it
        total, checked = con.execute("SELECT count(*), count(*) FILTER (WHERE status = 'checked') FROM corpus_overlap "
                                     "WHERE corpus = 'planted'").fetchone()
        assert total == con.execute("SELECT count(*) FROM items").fetchone()[0] and checked > 0
        # every paper table on the clean items: the rows covering the planted item have one item fewer
        effect = con.execute("""SELECT table_name, row_label, n_items_all, n_items_clean FROM contamination_effect
            WHERE corpus = 'planted' AND model = 'oracle' AND benchmark = 'wenmind'""").fetchall()
        overall = [r for r in effect if r[0] == "overall"]
        assert overall and all(r[3] == r[2] - 1 for r in overall)
        assert any(r[3] == r[2] for r in effect)   # rows without the planted item keep every item
    # the report the command printed says the same
    assert "planted" in done.stdout and PLANTED in done.stdout


def test_ray_engine_through_pipes_gives_the_local_rows(env, corpus):
    pytest.importorskip("ray", reason="the ray engine needs the [ray] extra")
    lake = Path(env["WENHENG_LAKE"])
    done = wenheng(env, "contamination", "scan", str(corpus), "--name", "planted-ray", "--version", "t1")
    assert done.returncode == 0, done.stdout + done.stderr
    local = pq.read_table(lake / "corpus_overlap" / "planted-ray.parquet").to_pylist()
    shutil.rmtree(Path(env["WENHENG_CACHE"]) / "contamination" / "planted-ray")   # so Ray reads every file
    done = wenheng(env, "contamination", "scan", "--name", "planted-ray", "--engine", "ray", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert pq.read_table(lake / "corpus_overlap" / "planted-ray.parquet").to_pylist() == local
    # without -v, neither Ray's Python warnings nor its C++ core's log lines reach the terminal
    noise = [line for line in done.stderr.splitlines() if "WARNING" in line or ".cc:" in line or "Warning" in line]
    assert noise == [], done.stderr


def test_a_vanished_remembered_corpus_is_one_line_and_the_reading_is_printed(env, corpus):
    remembered = Path(env["WENHENG_CACHE"]) / "corpora.scanned.yaml"
    before = remembered.read_bytes() if remembered.is_file() else None
    try:
        _vanished_corpus_and_reading(env, corpus, remembered)
    finally:   # the other tests see the remembered corpora as they were
        remembered.unlink(missing_ok=True)
        if before is not None:
            remembered.write_bytes(before)


def _vanished_corpus_and_reading(env, corpus, remembered: Path) -> None:
    from pipeline.contamination.corpora import CorpusSpec, save_scanned

    tmp = Path(env["TMP_ROOT"])
    gone = tmp / "scratch.jsonl"
    save_scanned(remembered, "scratch", CorpusSpec(paths=[str(gone)], fields=["text"], version="t"))   # since deleted
    folder = tmp / "with-empty"
    folder.mkdir()
    shutil.copy(corpus / "b.jsonl", folder / "b.jsonl")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "c.jsonl").write_text((corpus / "c.jsonl").read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    done = wenheng(env, "contamination", "scan", str(folder), "--name", "readout", "--version", "t1")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "scratch" in line]
    assert len(said) == 1 and str(gone) in said[0] and "Traceback" not in done.stderr, done.stderr
    out = done.stdout + done.stderr
    assert "readout: 5 documents read from 3 files, 1 bad lines skipped, 1 empty files" in out, out
    assert f"empty file (no document): {folder / 'empty.jsonl'}" in out
    done = wenheng(env, "run", "--no-report", timeout=300)   # a later run is not failed by it either
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("args, message", [
    (["scan", "/nonexistent/corpus.jsonl", "--name", "x"], "does not exist"),
    (["scan", "{corpus}", "--name", "x", "--field", "body"], "field body appears in none"),
    (["scan", "{corpus}", "--name", "x", "--ngram", "3"], "--ngram"),
    (["scan", "--name", "nosuch"], "no corpus 'nosuch'"),
    (["scan", "--ngram", "9"], "--ngram describes files given as PATHs"),
    (["report", "--corpus", "nosuch"], "no scan of corpus 'nosuch'"),
    (["scan", "{corpus}", "--name", "a/b"], "--name: the name may hold"),
    (["scan", "foo://x/y.jsonl", "--name", "x"], "unknown protocol 'foo'"),
    (["scan", "{corpus}", "--name", "x", "--sources", "/nonexistent/sources.yaml"], "--sources"),
])
def test_mistakes_are_one_line_and_exit_2_before_any_work(env, corpus, args, message):
    done = wenheng(env, "contamination", *[a.format(corpus=corpus) for a in args], timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr, done.stderr
