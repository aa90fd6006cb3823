"""`url` sources are bounded: a download stops at `max_bytes` and at the `timeout_s` deadline however
slowly the server sends, archives are refused over `max_members` / `max_unpacked_bytes` /
`max_ratio` (a zip bomb, a gzip'd tar bomb) or with unsafe members, tar members lose setuid and
group/other write bits, and `.partial-*` / `.unpacking-*` left by a killed fetch are removed at
the next start. Every server listens on 127.0.0.1 only and stops by itself."""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import io
import os
import socket
import stat
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from pipeline.config import ConfigError, load_sources
from pipeline.sources.fetch import FetchError, FetchLimits, materialize, remove_stale

WENMIND_ROW = (b'[{"id": 0, "domain": "d", "capability": "c", "question_format": "QA", '
               b'"coarse_grained_task_zh": "t", "coarse_grained_task_en": "t", "fine_grained_task_zh": "t", '
               b'"fine_grained_task_en": "t", "question": "q", "answer": "a"}]')
MiB = 1 << 20


class Server:
    """127.0.0.1 HTTP server; `routes` maps a name to a handler function(request_handler, stop).
    Handlers loop a bounded number of times and watch `stop`, set when the `with` block ends."""

    def __init__(self, routes):
        self.stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                route = routes.get(self.path.lstrip("/"))
                if route is None:
                    self.send_error(404)
                    return
                try:
                    route(self, server.stop)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def body(data: bytes):
    def route(handler, stop):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    return route


def endless(handler, stop):
    """No Content-Length, then 64 KiB blocks: up to 64 MiB, or until the client hangs up."""
    handler.send_response(200)
    handler.end_headers()
    for _ in range(1024):
        if stop.is_set():
            return
        handler.wfile.write(b"\0" * (64 << 10))


def lying_length(handler, stop):
    handler.send_response(200)
    handler.send_header("Content-Length", str(50 << 30))
    handler.end_headers()
    handler.wfile.write(b"x" * 1024)


def drip(handler, stop):
    """Declares 1,000 bytes and sends one every 0.2 s: each read is quick, the whole never ends
    in time. Stops after 30 s or when the test ends."""
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(150):
        if stop.wait(0.2):
            return
        handler.wfile.write(b"x")
        handler.wfile.flush()


class HeaderDrip:
    """A raw socket server that answers with the status line one byte every 0.2 s (so even the
    headers never finish); stops after 30 s or when the test ends."""

    def __init__(self):
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/{name}"

    def _serve(self):
        deadline = time.monotonic() + 30
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 200:
                    if self.stop.wait(0.2) or time.monotonic() > deadline:
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WENHENG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def spec_for(tmp_path: Path, url: str, data: bytes | None = None, extra: str = "", benchmark: str = "wenmind"):
    sha = hashlib.sha256(data if data is not None else b"never matches").hexdigest()
    text = f"benchmarks:\n  {benchmark}:\n    url: {url}\n    sha256: {sha}\n" + "".join(
        f"    {line}\n" for line in extra.splitlines())
    (tmp_path / "sources.yaml").write_text(text, encoding="utf-8")
    return load_sources(tmp_path / "sources.yaml")[benchmark]


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "downloads").rglob("*")) if (cache / "downloads").exists() else []


# ---- downloads ----------------------------------------------------------------------------------

def test_a_stream_beyond_max_bytes_is_cut_off_and_discarded(tmp_path, cache):
    with Server({"big.json": endless}) as server:
        spec = spec_for(tmp_path, server.url("big.json"), extra="max_bytes: 1 MiB")
        assert spec.limits.max_bytes == MiB
        started = time.monotonic()
        with pytest.raises(FetchError, match=r"sent more than max_bytes \(1 MiB\).*raise 'max_bytes' \(now 1048576\) "
                                             r"for wenmind in sources.yaml"):
            materialize(spec)
        assert time.monotonic() - started < 10
    assert leftovers(cache) == [spec.sha256]  # the folder, no partial file


def test_a_declared_length_over_max_bytes_is_refused_before_reading(tmp_path, cache):
    with Server({"huge.json": lying_length}) as server:
        spec = spec_for(tmp_path, server.url("huge.json"))  # the default: 2 GiB
        with pytest.raises(FetchError, match=r"is 50 GiB \(Content-Length\), more than max_bytes \(2 GiB\)"):
            materialize(spec)
    assert leftovers(cache) == [spec.sha256]


def test_a_slow_drip_stops_at_the_total_deadline(tmp_path, cache):
    with Server({"slow.json": drip}) as server:
        spec = spec_for(tmp_path, server.url("slow.json"), extra="timeout_s: 1.5")
        started = time.monotonic()
        with pytest.raises(FetchError, match=r"took longer than timeout_s \(1.5 s\).*raise 'timeout_s'"):
            materialize(spec)
        assert 1.4 < time.monotonic() - started < 6
    assert leftovers(cache) == [spec.sha256]


def test_headers_that_never_finish_stop_at_the_deadline_too(tmp_path, cache):
    with HeaderDrip() as server:
        spec = spec_for(tmp_path, server.url("slow.json"), extra="timeout_s: 1")
        started = time.monotonic()
        with pytest.raises(FetchError, match=r"took longer than timeout_s \(1 s\)"):
            materialize(spec)
        assert time.monotonic() - started < 6


def test_within_the_limits_the_download_works(tmp_path, cache):
    with Server({"WenMind.json": body(WENMIND_ROW)}) as server:
        spec = spec_for(tmp_path, server.url("WenMind.json"), WENMIND_ROW,
                        extra=f"max_bytes: {len(WENMIND_ROW)}\ntimeout_s: 5")
        assert materialize(spec).read_bytes() == WENMIND_ROW


# ---- archives -----------------------------------------------------------------------------------

def zip_bomb(unpacked: int) -> bytes:
    """One member of `unpacked` zero bytes, deflated (about 1,000 times smaller)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("zeros.json", "w") as out:
        for _ in range(unpacked // MiB):
            out.write(bytes(MiB))
    return buffer.getvalue()


def serve_archive(tmp_path, cache, name: str, data: bytes, extra: str = ""):
    with Server({name: body(data)}) as server:
        spec = spec_for(tmp_path, server.url(name), data, extra=extra)
        with pytest.raises(FetchError) as error:
            materialize(spec)
    folder = cache / "downloads" / spec.sha256
    assert sorted(p.name for p in folder.iterdir()) == [name]  # the verified archive, nothing unpacked
    return str(error.value)


def test_a_zip_bomb_is_refused_by_its_expansion_ratio(tmp_path, cache):
    bomb = zip_bomb(128 * MiB)
    assert len(bomb) < MiB
    message = serve_archive(tmp_path, cache, "bomb.zip", bomb)
    assert "expands more than max_ratio (200) times its size" in message
    assert "raise 'max_ratio' (now 200) for wenmind in sources.yaml" in message


def test_a_tar_gz_bomb_is_refused_before_anything_is_written(tmp_path, cache):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("zeros.json")
        info.size = 96 * MiB
        archive.addfile(info, io.BytesIO(bytes(info.size)))
    message = serve_archive(tmp_path, cache, "bomb.tar.gz", buffer.getvalue())
    assert "expands more than max_ratio" in message


def test_archive_size_and_member_limits(tmp_path, cache):
    message = serve_archive(tmp_path, cache, "big.zip", zip_bomb(3 * MiB), extra="max_unpacked_bytes: 2 MiB")
    assert "unpacks to more than max_unpacked_bytes (2 MiB)" in message
    assert "raise 'max_unpacked_bytes' (now 2097152)" in message

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(20):
            archive.writestr(f"data/{i}.json", "[]")
    message = serve_archive(tmp_path, cache, "many.zip", buffer.getvalue(), extra="max_members: 10")
    assert "more than max_members (10) members" in message and "raise 'max_members' (now 10)" in message


def test_tar_members_lose_setuid_and_world_write(tmp_path, cache):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        folder = tarfile.TarInfo("data")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o777
        archive.addfile(folder)
        for name, mode in [("data/WenMind_setuid.json", 0o4777), ("data/WenMind_open.json", 0o777)]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.uname = len(WENMIND_ROW), mode, 0, "root"
            archive.addfile(info, io.BytesIO(WENMIND_ROW))
    data = buffer.getvalue()
    with Server({"w.tar": body(data)}) as server:
        spec = spec_for(tmp_path, server.url("w.tar"), data, extra="subpath: data")
        unpacked = materialize(spec)
    for path in [unpacked, *unpacked.iterdir()]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH), (path.name, oct(mode))
    assert (unpacked / "WenMind_setuid.json").read_bytes() == WENMIND_ROW


def tar_of(*members: tarfile.TarInfo) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info in members:
            archive.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, target, 1 if kind == tarfile.REGTYPE else 0
    return info


def zip_with(name: str, mode: int = 0) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        archive.writestr(info, "/etc/passwd" if stat.S_ISLNK(mode) else "x")
    return buffer.getvalue()


@pytest.mark.parametrize("name, data, message", [
    ("up.tar", tar_of(member("data/ok.json"), member("../escape.json")), "'../escape.json' would land outside"),
    ("abs.tar", tar_of(member("/tmp/escape.json")), "would land outside"),
    ("link.tar", tar_of(member("data/passwd", tarfile.SYMTYPE, "/etc/passwd")), "'data/passwd' is a link"),
    ("hard.tar", tar_of(member("data/passwd", tarfile.LNKTYPE, "/etc/passwd")), "is a link"),
    ("fifo.tar", tar_of(member("data/pipe", tarfile.FIFOTYPE)), "'data/pipe' is a device"),
    ("up.zip", zip_with("data/../../escape.json"), "would land outside"),
    ("abs.zip", zip_with("/tmp/escape.json"), "would land outside"),
    ("drive.zip", zip_with("C:/escape.json"), "would land outside"),
    ("link.zip", zip_with("data/passwd", stat.S_IFLNK | 0o777), "'data/passwd' is a link"),
])
def test_unsafe_members_are_refused(tmp_path, cache, name, data, message):
    assert message in serve_archive(tmp_path, cache, name, data)
    assert not (tmp_path / "escape.json").exists() and not (cache / "escape.json").exists()


# ---- leftovers of a killed fetch -----------------------------------------------------------------

def test_stale_partials_are_removed_at_the_next_start_and_running_ones_kept(tmp_path, cache):
    with Server({"WenMind.json": body(WENMIND_ROW)}) as server:
        spec = spec_for(tmp_path, server.url("WenMind.json"), WENMIND_ROW)
        folder = cache / "downloads" / spec.sha256
        other = cache / "downloads" / ("0" * 64)  # another source's folder is swept too
        for where in (folder, other):
            where.mkdir(parents=True)
        stale = [folder / ".partial-killed", other / ".partial-old", folder / ".unpacking-killed"]
        stale[0].write_bytes(b"half a download")
        stale[1].write_bytes(b"")
        stale[2].mkdir()
        (stale[2] / "half.json").write_text("[")
        fresh = folder / ".partial-just-created"       # no lock yet, but seconds old: left alone
        fresh.write_bytes(b"")
        running = folder / ".partial-running"           # a running download holds its lock
        running.write_bytes(b"")
        long_ago = time.time() - 3600
        for path in [*stale, running]:
            os.utime(path, (long_ago, long_ago))
        with open(running, "rb") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            assert materialize(spec).read_bytes() == WENMIND_ROW
            assert not any(path.exists() for path in stale)
            assert fresh.exists() and running.exists()
        assert remove_stale(cache / "downloads") == [running]  # its lock released: stale now


# ---- sources.yaml ---------------------------------------------------------------------------------

def test_limits_in_sources_yaml(tmp_path):
    spec = spec_for(tmp_path, "http://127.0.0.1/x.zip",
                    extra="max_bytes: 500 MiB\ntimeout_s: 90\nmax_unpacked_bytes: 3000000000\nmax_members: 50\n"
                          "max_ratio: 1000")
    assert spec.limits == FetchLimits(max_bytes=500 * MiB, timeout_s=90.0, max_unpacked_bytes=3_000_000_000,
                                      max_members=50, max_ratio=1000.0)
    assert spec_for(tmp_path, "http://127.0.0.1/x.zip").limits == FetchLimits(
        max_bytes=2 << 30, timeout_s=1800.0, max_unpacked_bytes=8 << 30, max_members=100_000, max_ratio=200.0)


@pytest.mark.parametrize("extra, message", [
    ("max_bytes: 0", "benchmarks.wenmind: max_bytes must be a size in bytes, e.g. 2147483648 or '2 GiB' (got 0)"),
    ("max_bytes: lots", "max_bytes must be a size in bytes"),
    ("max_bytes: true", "max_bytes must be a size in bytes"),
    ("max_unpacked_bytes: -1 GiB", "max_unpacked_bytes must be a size in bytes"),
    ("timeout_s: 0", "timeout_s must be a number > 0 (got 0)"),
    ("timeout_s: soon", "timeout_s must be a number > 0"),
    ("max_members: 2.5", "max_members must be a whole number >= 1 (got 2.5)"),
    ("max_ratio: -3", "max_ratio must be a number > 0"),
    ("max_byte: 10", "unknown keys ['max_byte']"),
])
def test_bad_limits_name_the_file_and_key(tmp_path, extra, message):
    with pytest.raises(ConfigError) as error:
        spec_for(tmp_path, "http://127.0.0.1/x.json", extra=extra)
    text = str(error.value)
    assert message in text and text.startswith(str(tmp_path / "sources.yaml")) and "\n" not in text


def test_limits_only_apply_to_url_sources(tmp_path):
    (tmp_path / "sources.yaml").write_text("benchmarks:\n  wenmind:\n    path: x.json\n    max_bytes: 10\n")
    with pytest.raises(ConfigError, match="max_bytes only apply to a 'url' source"):
        load_sources(tmp_path / "sources.yaml")
