"""`url` sources: downloaded once from a loopback HTTP server, verified, cached and re-used."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, write_yaml

from pipeline.config import ConfigError, load_sources
from pipeline.ingest import parse_source
from pipeline.sources.fetch import ChecksumMismatch, FetchError, materialize

WENMIND = (ROOT / "data" / "samples" / "wenmind" / "WenMind_sample.json").read_bytes()


def _zip_of(folder: Path, prefix: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()


class Server:
    """Serves `files` (name -> bytes) on 127.0.0.1 and counts the requests it gets."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.requests = files, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WENHENG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _sources(tmp_path: Path, text: str) -> Path:
    return write_yaml(tmp_path / "sources.yaml", text)


def test_download_once_verify_and_reuse(tmp_path, cache):
    sha = hashlib.sha256(WENMIND).hexdigest()
    with Server({"WenMind_ver1.json": WENMIND}) as server:
        sources = _sources(tmp_path, f"benchmarks:\n  wenmind:\n    url: {server.url('WenMind_ver1.json')}\n"
                                     f"    sha256: {sha}\n    version: v1\n")
        spec = load_sources(sources)["wenmind"]
        assert not server.requests and spec.path == cache / "downloads" / sha / "WenMind_ver1.json"
        first = parse_source(spec)
        assert len(server.requests) == 1 and len(first.items) == 14 and not first.quarantine
        assert first.items[0]["source_version"] == "v1"
        again = parse_source(load_sources(sources)["wenmind"])    # a second load: served from the cache
        assert len(server.requests) == 1
        assert [i["item_id"] for i in again.items] == [i["item_id"] for i in first.items]
        assert [p.name for p in (cache / "downloads" / sha).iterdir()] == ["WenMind_ver1.json"]


def test_checksum_mismatch_is_an_error_and_nothing_is_kept(tmp_path, cache):
    wrong = hashlib.sha256(b"something else").hexdigest()
    with Server({"WenMind_ver1.json": WENMIND}) as server:
        sources = _sources(tmp_path, f"benchmarks:\n  wenmind:\n    url: {server.url('WenMind_ver1.json')}\n"
                                     f"    sha256: {wrong}\n")
        spec = load_sources(sources)["wenmind"]
        with pytest.raises(ChecksumMismatch, match="expects " + wrong):
            parse_source(spec)
        with pytest.raises(ChecksumMismatch):          # never cached: asked again, refused again
            materialize(spec)
        assert len(server.requests) == 2
        assert not any(p.is_file() for p in (cache / "downloads").rglob("*"))


def test_archive_is_unpacked_once_and_subpath_parsed(tmp_path, cache):
    archive = _zip_of(ROOT / "data" / "samples" / "wyweb", "WYWEB-main/data/tasks")
    sha = hashlib.sha256(archive).hexdigest()
    with Server({"WYWEB-main.zip": archive}) as server:
        sources = _sources(tmp_path, f"benchmarks:\n  wyweb:\n    url: {server.url('WYWEB-main.zip')}\n"
                                     f"    sha256: {sha}\n    subpath: WYWEB-main/data/tasks\n    version: s\n"
                                     "    splits: [dev]\n")
        result = parse_source(load_sources(sources)["wyweb"])
        local = parse_source(load_sources(ROOT / "data" / "sources.yaml")["wyweb"])
        assert sorted(i["item_id"] for i in result.items) == sorted(i["item_id"] for i in local.items)
        assert result.raw_counts == local.raw_counts          # display paths are relative to the subpath
        parse_source(load_sources(sources)["wyweb"])
        assert server.requests == ["/WYWEB-main.zip"]


def test_wrong_subpath_and_missing_file_are_clear_errors(tmp_path, cache):
    archive = _zip_of(ROOT / "data" / "samples" / "wyweb", "WYWEB-main")
    sha = hashlib.sha256(archive).hexdigest()
    with Server({"w.zip": archive}) as server:
        sources = _sources(tmp_path, f"benchmarks:\n  wyweb:\n    url: {server.url('w.zip')}\n"
                                     f"    sha256: {sha}\n    subpath: data/tasks\n"
                                     f"  wenmind:\n    url: {server.url('gone.json')}\n    sha256: {sha}\n")
        specs = load_sources(sources)
        with pytest.raises(FetchError, match="check 'subpath'"):
            parse_source(specs["wyweb"])
        with pytest.raises(FetchError, match="could not download .*404"):
            parse_source(specs["wenmind"])


def test_unsafe_archive_members_are_refused(tmp_path, cache):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../escape.txt", "x")
    data = buffer.getvalue()
    with Server({"evil.zip": data}) as server:
        sources = _sources(tmp_path, f"benchmarks:\n  wyweb:\n    url: {server.url('evil.zip')}\n"
                                     f"    sha256: {hashlib.sha256(data).hexdigest()}\n")
        with pytest.raises(FetchError, match="outside the download folder"):
            parse_source(load_sources(sources)["wyweb"])
    assert not (cache / "downloads" / "escape.txt").exists()


@pytest.mark.parametrize("entry, message", [
    ("url: http://127.0.0.1/x.json", "needs 'sha256'"),
    ("url: http://127.0.0.1/x.json\n    sha256: abc", "needs 'sha256'"),
    ("url: ftp://example.org/x.json\n    sha256: " + "0" * 64, "must start with"),
    ("path: x\n    url: http://127.0.0.1/x", "either a 'path' or a 'url'"),
    ("version: v1", "either a 'path' or a 'url'"),
    ("path: x\n    checksum: abc", "unknown keys"),
    ("path: x\n    splits: dev", "splits: expected a list of split names"),
])
def test_sources_yaml_validation(tmp_path, entry, message):
    with pytest.raises(ConfigError, match=message):
        load_sources(_sources(tmp_path, f"benchmarks:\n  wyweb:\n    {entry}\n"))


def test_file_urls_work_too(tmp_path, cache):
    source = tmp_path / "WenMind_ver1.json"
    source.write_bytes(WENMIND)
    sources = _sources(tmp_path, f"benchmarks:\n  wenmind:\n    url: {source.as_uri()}\n"
                                 f"    sha256: {hashlib.sha256(WENMIND).hexdigest()}\n")
    assert len(parse_source(load_sources(sources)["wenmind"]).items) == len(json.loads(WENMIND))
