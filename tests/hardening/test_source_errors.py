"""A source that cannot be used as a whole is one line, not rows: a broken AC-EVAL
subject_mapping.json (it quarantined every AC-EVAL row and the run exited 0), and a source that
yields no rows at all (the run went on with nothing to ask). `wenheng run` refuses the first
before any stage; the second fails the run with one line, unless its entry says `allow_empty`."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from conftest import ROOT, write_yaml

from pipeline import cli
from pipeline.config import SourceSpec
from pipeline.ingest import parse_source
from pipeline.sources.accounting import SourceError

CORPUS = Path(__file__).parent / "corpus" / "aceval"
WENMIND = ROOT / "data" / "samples" / "wenmind" / "WenMind_sample.json"
MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n"


@pytest.mark.parametrize("case, reason", [
    ("mapping_broken_json", "subject_mapping.json is not valid JSON (JSONDecodeError: "),
    ("mapping_not_utf8", "subject_mapping.json is not UTF-8 text (byte "),
    ("mapping_not_object", "subject_mapping.json is an array; expected an object subject -> "),
])
def test_a_broken_subject_mapping_is_one_source_error(case, reason):
    with pytest.raises(SourceError) as raised:
        parse_source(SourceSpec("aceval", CORPUS / case, "corpus", evaluate=("dev",)))
    message = str(raised.value)
    assert message.startswith(f"aceval: path: {CORPUS / case / 'subject_mapping.json'}") and reason in message
    assert "\n" not in message


def _run(tmp_path: Path, monkeypatch, sources: str, *args: str) -> tuple[int, str, str]:
    for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"), ("WENHENG_CACHE", "cache"),
                      ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CORRECTIONS", "corrections"),
                      ("WENHENG_CORPORA", "corpora.yaml")]:
        monkeypatch.setenv(name, str(tmp_path / sub))
    files = {"sources": write_yaml(tmp_path / "sources.yaml", sources),
             "models": write_yaml(tmp_path / "models.yaml", MODELS)}
    for name, path in files.items():   # `run` exports them: set here so they are undone after the test
        monkeypatch.setenv(f"WENHENG_{name.upper()}", str(path))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["run", "--no-report", "--sources", str(files["sources"]), "--models", str(files["models"]),
                         *args])
    return code, out.getvalue(), err.getvalue()


def test_wenheng_run_refuses_a_broken_subject_mapping_before_any_stage(tmp_path, monkeypatch):
    path = CORPUS / "mapping_broken_json"
    code, out, err = _run(tmp_path, monkeypatch, f"benchmarks:\n  aceval: {{path: '{path}', version: v, "
                                                 "evaluate: [dev]}\n")
    (line,) = err.strip().splitlines()
    assert code == 2 and "prepare" not in out and "Traceback" not in out + err
    assert "sources.yaml: benchmarks.aceval.path: " in line and "subject_mapping.json is not valid JSON" in line


def test_a_source_without_rows_fails_the_run_in_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "fuxi"
    empty.mkdir()
    (empty / "test.jsonl").write_text("", encoding="utf-8")   # in the layout, but no row
    sources = (f"benchmarks:\n  fuxi: {{path: '{empty}', version: v}}\n"
               f"  wenmind: {{path: '{WENMIND}', version: v}}\n")
    code, out, err = _run(tmp_path, monkeypatch, sources, "--select", "key:raw_items")
    assert code == 1 and "Traceback" not in out + err
    said = [line for line in out.splitlines() if "yields no rows" in line]
    assert said and all(f"SourceError: fuxi: {empty.as_posix()} yields no rows" in line for line in said)
    assert "set allow_empty: true on its sources entry" in said[0]
    assert "raw_items [wenmind] items=14" in out          # the other benchmark still builds

    allowed = sources.replace("version: v}", "version: v, allow_empty: true}", 1)
    code, out, err = _run(tmp_path, monkeypatch, allowed, "--select", "key:raw_items")
    assert code == 0 and "raw_items [fuxi] items=0" in out, out + err


def test_a_source_whose_rows_were_all_quarantined_fails_its_prepare_in_one_line(tmp_path, monkeypatch):
    """Every row bad: the run went on with nothing to ask and exited 0. Now the items step fails
    with one line (its quarantine rows are still written, to read why), unless `allow_empty`."""
    bad = tmp_path / "fuxi"
    bad.mkdir()
    (bad / "test.jsonl").write_text('{"id": "a"}\nnot json\n', encoding="utf-8")
    sources = (f"benchmarks:\n  fuxi: {{path: '{bad}', version: v}}\n"
               f"  wenmind: {{path: '{WENMIND}', version: v}}\n")
    code, out, err = _run(tmp_path, monkeypatch, sources, "--select", "group:sources or group:items")
    assert code == 1 and "Traceback" not in out + err
    said = [line for line in (out + err).splitlines() if "were quarantined" in line]
    assert said and all("fuxi: all 2 of its rows were quarantined, no item is left (first: test.jsonl:line 1: " in line
                        for line in said), out + err
    assert "set allow_empty: true on its sources entry" in said[0]
    assert "items [wenmind]" in out                        # the other benchmark still builds
    assert (tmp_path / "lake" / "quarantine" / "fuxi.parquet").is_file()

    allowed = sources.replace("version: v}", "version: v, allow_empty: true}", 1)
    code, out, err = _run(tmp_path, monkeypatch, allowed, "--select", "group:sources or group:items")
    assert code == 0 and "were quarantined" not in out + err, out + err
