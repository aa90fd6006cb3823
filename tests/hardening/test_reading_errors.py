"""Inputs that change or vanish under a reader say so: a benchmark file rewritten while it is read
(a torn read) fails its source in one line instead of going on with part of the file (or with no
row at all); a corpus URL that answers HTTP 404 (or another status) is quarantined with that
status as its reason, not only "cannot be read"; a corpus whose documents lack its `id_field` is
said in one warning line (their ids are made from their text) instead of silently accepted."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest
from conftest import ROOT

from pipeline.config import SourceSpec
from pipeline.contamination import engines, fields
from pipeline.contamination.corpora import CorpusSpec
from pipeline.contamination.index import build_index
from pipeline.ingest import parse_source
from pipeline.sources import text
from pipeline.sources.accounting import SourceError

SAMPLES = ROOT / "data" / "samples"
PASSAGE = "北冥有鱼，其名为鲲。鲲之大，不知其几千里也；化而为鸟，其名为鹏。"
ITEMS = [{"item_id": "q0", "benchmark": "mine", "task": "t", "format": "open_qa", "context": None,
          "question": PASSAGE, "choices": [], "answer": "古文", "references": []}]


# ---- a torn read -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "file", "rewrite"), [
    ("fuxi", "test.jsonl", b""),                               # truncated to nothing while read
    ("cpdue", "test.jsonl", b'{"id": "x"}\n'),                 # rewritten shorter
    ("wenmind", "WenMind_sample.json", b"[]"),
    ("aceval", "dev/translation.csv", b",Question,A,B,C,D,Answer\n"),
    ("wyweb", "punc/dev.tsv", b"x\ty\n" * 400),                # grown
])
def test_a_source_file_rewritten_while_read_fails_in_one_line(tmp_path, monkeypatch, name, file, rewrite):
    root = Path(shutil.copytree(SAMPLES / name, tmp_path / name))
    target = root / file

    def torn(f) -> bytes:
        head = f.read(64)
        if Path(f.name) == target:
            target.write_bytes(rewrite)   # in place: the open file is the one rewritten
        return head + f.read()

    monkeypatch.setattr(text, "_read", torn)
    with pytest.raises(SourceError) as raised:
        parse_source(SourceSpec(name, root, "v"))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{name}: {target} changed while it was read"), message
    assert "run again once it is written" in message
    monkeypatch.undo()
    target.write_bytes((SAMPLES / name / file).read_bytes())
    assert parse_source(SourceSpec(name, root, "v")).items   # read again, whole: no error


def test_a_file_read_whole_is_not_a_torn_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\r\n' * 1000)
    assert text.read_text(path) == '{"a": 1}\n' * 1000


# ---- a corpus URL that answers an HTTP error ---------------------------------------------------

@pytest.fixture
def server():
    """A local HTTP server: /ok.jsonl holds a document, /gone.jsonl is 404, /secret.jsonl is 403."""
    body = (json.dumps({"text": PASSAGE}, ensure_ascii=False) + "\n").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):   # noqa: N802 - the http.server protocol
            status = {"/ok.jsonl": 200, "/secret.jsonl": 403}.get(self.path.split("?")[0], 404)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body) if status == 200 else 0))
            self.end_headers()
            if status == 200 and self.command == "GET":
                self.wfile.write(body)

        do_HEAD = do_GET

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_corpus_url_that_is_not_found_says_http_404(tmp_path, server):
    spec = CorpusSpec(paths=[f"{server}/ok.jsonl", f"{server}/gone.jsonl", f"{server}/secret.jsonl"],
                      format="jsonl", fields=["text"], version="1")
    scan = engines.scan_corpus(spec, "web", build_index(ITEMS, 13), tmp_path / "cache", log=lambda line: None)
    reasons = {q["path"].rsplit("/", 1)[-1]: q["reason"] for q in scan.quarantine}
    assert set(reasons) == {"gone.jsonl", "secret.jsonl"}, reasons
    assert reasons["gone.jsonl"] == "cannot be read: not found (HTTP 404)"
    assert reasons["secret.jsonl"].startswith("cannot be read: HTTP 403"), reasons
    assert all("\n" not in reason for reason in reasons.values())
    assert list(scan.files) == [f"{server}/ok.jsonl"] and scan.matches.num_rows


def test_an_unreadable_reason_is_one_line():
    assert engines.unreadable("/x/a.jsonl", FileNotFoundError(2, "No such file")) == "cannot be read: not found"
    assert engines.unreadable("s3://b/a.jsonl", PermissionError("denied\nby policy")) == (
        "cannot be read: PermissionError: denied by policy")


# ---- documents without the id_field ------------------------------------------------------------

def _corpus(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_an_id_field_no_document_holds_is_one_warning_line(tmp_path):
    path = _corpus(tmp_path, [{"text": PASSAGE, "uid": 1}, {"text": "其二", "uid": 2}])
    warned: list[str] = []
    fields.check_fields(CorpusSpec(paths=[str(path)], fields=["text"], id_field="id", version="1"), "web",
                        warn=warned.append)
    (line,) = warned
    assert line.startswith("corpora.web: id_field id is missing from 2 of the 2 first documents probed")
    assert "their keys: text, uid" in line and "<file>@<sha1 of their text>" in line


def test_an_id_field_some_documents_lack_is_one_warning_line(tmp_path):
    path = _corpus(tmp_path, [{"text": PASSAGE, "id": "a"}, {"text": "其二"}, {"text": "其三", "id": None}])
    warned: list[str] = []
    fields.check_fields(CorpusSpec(paths=[str(path)], fields=["text"], id_field="id", version="1"), "web",
                        warn=warned.append)
    assert len(warned) == 1 and "is missing from 2 of the 3 first documents" in warned[0]


def test_an_id_field_every_document_holds_says_nothing(tmp_path):
    path = _corpus(tmp_path, [{"text": PASSAGE, "meta": {"id": "a"}}])
    fields.check_fields(CorpusSpec(paths=[str(path)], fields=["text"], id_field="meta.id", version="1"), "web",
                        warn=pytest.fail)
