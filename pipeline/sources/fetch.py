"""Downloading a benchmark's files once, verifying them, and re-using the verified copy.

A `url` source in sources.yaml names the file's sha256. The download goes to
`<cache>/downloads/<sha256>/<file name>`: keyed by content, so two versions of a source never
overwrite each other and a cached file is always the one that was verified. The bytes are hashed
as they arrive and only a file whose hash matches is moved into place; anything else is deleted
and reported as `ChecksumMismatch`. Zip and tar archives are unpacked once next to the file
(`.../unpacked/`), and `subpath` picks the file or folder inside them to parse.

Everything is bounded (`FetchLimits`; each limit can be raised per source in sources.yaml):
a download stops at `max_bytes` (2 GiB) and at a total deadline of `timeout_s` (30 min, however
slowly the server sends), and an archive is refused before anything is written if it has more
than `max_members` (100,000) members, more than `max_unpacked_bytes` (8 GiB) in them, or expands
more than `max_ratio` (200) times its own size (above 64 MiB). Tar members are extracted with
`filter="data"` (no setuid bits, no group/other write, no owners, nothing outside the folder);
zip and tar members with absolute paths, `..`, links or devices are refused. A download or
unpack in progress holds a lock on its `.partial-*` file or `.unpacking-*` folder; ones left by a
killed process are removed when the next fetch starts.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import stat
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux/macOS: stale files are judged by age alone
    fcntl = None

if TYPE_CHECKING:  # annotations only: pipeline.config imports this module
    from pipeline.config import SourceSpec

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
READ_TIMEOUT_S = 60   # one connect or read; the whole download is bounded by FetchLimits.timeout_s
CHUNK = 1 << 20
RATIO_FLOOR = 64 << 20   # the expansion ratio is only checked once an archive unpacks to more than this
STALE_GRACE_S = 10       # a lock-free .partial-* / .unpacking-* this old belongs to no running fetch
STALE_WITHOUT_LOCKS_S = 24 * 3600  # where file locks are unavailable: judged by age alone
PREFIXES = (".partial-", ".unpacking-")


@dataclass(frozen=True)
class FetchLimits:
    """Per source; the keys of the same names in sources.yaml override them."""
    max_bytes: int = 2 << 30              # the downloaded file
    timeout_s: float = 1800.0             # the whole download, connect to last byte
    max_unpacked_bytes: int = 8 << 30     # all members of an archive together
    max_members: int = 100_000            # files and folders in an archive
    max_ratio: float = 200.0              # unpacked bytes / archive bytes (checked above RATIO_FLOOR)


LIMIT_KEYS = tuple(FetchLimits.__dataclass_fields__)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_limit(key: str, value: object) -> int | float:
    """A sources.yaml limit: a byte count (int, or text like "500 MiB", "2 GiB") for the *_bytes
    keys, a count for max_members, seconds / a factor for timeout_s / max_ratio. Raises
    ValueError saying what is expected."""
    if isinstance(value, bool):
        value = None
    if key.endswith("_bytes"):
        match = _SIZE.match(value) if isinstance(value, str) else None
        number = (float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()] if match
                  else value if isinstance(value, int) else None)
        if number is None or number < 1:
            raise ValueError(f"{key} must be a size in bytes, e.g. 2147483648 or '2 GiB' (got {value!r})")
        return int(number)
    if key == "max_members":
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a whole number >= 1 (got {value!r})")
        return value
    if not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{key} must be a number > 0 (got {value!r})")
    return float(value)


class FetchError(RuntimeError):
    """A source could not be downloaded or unpacked; the message says which and why."""


class ChecksumMismatch(FetchError):
    """The downloaded bytes are not the ones sources.yaml names; they were discarded. `url`,
    `expected` and `actual` (the hashes) let a caller word its own line (models.yaml's judges)."""

    def __init__(self, message: str, url: str = "", expected: str = "", actual: str = ""):
        super().__init__(message)
        self.url, self.expected, self.actual = url, expected, actual


def file_name(url: str) -> str:
    name = PurePosixPath(urllib.parse.urlparse(url).path).name
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name) or "download"


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def local_path(url: str, sha256: str, subpath: str, downloads: Path) -> Path:
    """Where the verified file (or, for an archive, the unpacked `subpath`) will be."""
    folder = downloads / sha256
    name = file_name(url)
    if is_archive(name):
        return (folder / "unpacked" / subpath) if subpath else folder / "unpacked"
    return folder / name


def materialize(spec: SourceSpec) -> Path:
    """Make `spec.path` exist: download and verify on first use, unpack archives; afterwards
    this makes no request at all. Raises FetchError / ChecksumMismatch with what to do."""
    if not spec.url:
        return spec.path
    folder = _download_folder(spec)
    remove_stale(folder.parent)
    name = file_name(spec.url)
    archive = folder / name
    if not archive.is_file():
        _download(spec, archive)
    if is_archive(name):
        _unpack(spec, archive, folder / "unpacked")
    if not spec.path.exists():
        raise FetchError(f"{spec.benchmark}: {spec.url} was downloaded and verified, but it has no "
                         f"{spec.subpath or name!r}; check 'subpath' in sources.yaml")
    return spec.path


def _limits(spec: SourceSpec) -> FetchLimits:
    return getattr(spec, "limits", None) or FetchLimits()  # a spec built without them: the defaults


def _raise_hint(spec: SourceSpec, key: str, value: str) -> str:
    return f"if that is expected, raise '{key}' (now {value}) for {spec.benchmark} in sources.yaml"


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} bytes"


def _download_folder(spec: SourceSpec) -> Path:
    # spec.path is <downloads>/<sha256>/<name> or <downloads>/<sha256>/unpacked[/<subpath>]
    for parent in [spec.path, *spec.path.parents]:
        if parent.name == spec.sha256:
            return parent
    raise FetchError(f"{spec.benchmark}: {spec.path} is not inside a download folder for {spec.sha256}")


# ---- stale partial files -------------------------------------------------------------------

def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def remove_stale(downloads: Path) -> list[Path]:
    """Removes the `.partial-*` files and `.unpacking-*` folders under `downloads/<sha256>/` that
    no running fetch holds (a killed download or unpack leaves them); returns what it removed."""
    removed = []
    if not downloads.is_dir():
        return removed
    grace = STALE_GRACE_S if fcntl is not None else STALE_WITHOUT_LOCKS_S
    for folder in downloads.iterdir():
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if not path.name.startswith(PREFIXES):
                continue
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue  # gone meanwhile
            try:
                if time.time() - os.fstat(fd).st_mtime < grace or not _try_lock(fd):
                    continue  # just created, or a running fetch holds it
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path)
            finally:
                os.close(fd)
    return removed


# ---- downloading ---------------------------------------------------------------------------

class _Deadline:
    """Shuts the download's sockets when the total time is up, so a server that sends one byte
    at a time (each read well within READ_TIMEOUT_S) cannot keep it going for ever."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._sockets: list = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()

    def watch(self, sock) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock) -> None:
    try:
        sock.shutdown(2)  # SHUT_RDWR: a blocked recv returns at once
    except OSError:
        pass


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    class Connection(http.client.HTTPConnection):
        def connect(self):
            super().connect()
            deadline.watch(self.sock)

    class TLSConnection(http.client.HTTPSConnection):
        def connect(self):
            super().connect()
            deadline.watch(self.sock)

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(Connection, req)

    class TLSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(TLSConnection, req, context=self._context)

    return urllib.request.build_opener(Handler, TLSHandler)


def _download(spec: SourceSpec, target: Path) -> None:
    limits = _limits(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".partial-")
    _lock(fd)  # until closed: remove_stale leaves a running download alone
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    received = 0
    deadline = _Deadline(limits.timeout_s)
    too_slow = FetchError(
        f"{spec.benchmark}: downloading {spec.url} took longer than timeout_s ({limits.timeout_s:g} s); "
        "the partial download was discarded. " + _raise_hint(spec, "timeout_s", f"{limits.timeout_s:g}"))
    try:
        with os.fdopen(fd, "wb") as out, deadline:
            request = urllib.request.Request(spec.url, headers={"User-Agent": "wenheng"})
            timeout = min(READ_TIMEOUT_S, limits.timeout_s)
            with _opener(deadline).open(request, timeout=timeout) as response:
                declared = response.headers.get("Content-Length")
                if declared and declared.isdigit() and int(declared) > limits.max_bytes:
                    raise FetchError(
                        f"{spec.benchmark}: {spec.url} is {_size(int(declared))} (Content-Length), more than "
                        f"max_bytes ({_size(limits.max_bytes)}); nothing was downloaded. "
                        + _raise_hint(spec, "max_bytes", str(limits.max_bytes)))
                read = getattr(response, "read1", response.read)
                while True:
                    if deadline.expired:
                        raise too_slow
                    block = read(CHUNK)
                    if not block:
                        break
                    received += len(block)
                    if received > limits.max_bytes:
                        raise FetchError(
                            f"{spec.benchmark}: {spec.url} sent more than max_bytes ({_size(limits.max_bytes)}); "
                            "the partial download was discarded. "
                            + _raise_hint(spec, "max_bytes", str(limits.max_bytes)))
                    digest.update(block)
                    out.write(block)
            if deadline.expired:  # the socket was shut mid-read: what arrived is incomplete
                raise too_slow
        got = digest.hexdigest()
        if got != spec.sha256:
            raise ChecksumMismatch(
                f"{spec.benchmark}: {spec.url} has sha256 {got}, but sources.yaml expects {spec.sha256}; "
                "the download was discarded. If the upstream file changed on purpose, review it, then "
                "update 'sha256' and 'version' in sources.yaml.", url=spec.url, expected=spec.sha256, actual=got)
        os.replace(tmp, target)  # atomic: a cached file is always a verified one
    except FetchError:
        raise
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        if deadline.expired:
            raise too_slow from exc
        raise FetchError(f"{spec.benchmark}: could not download {spec.url}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


# ---- unpacking -----------------------------------------------------------------------------

def _unpack(spec: SourceSpec, archive: Path, target: Path) -> None:
    if target.is_dir():
        return
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpacking-"))
    lock = os.open(staging, os.O_RDONLY)
    _lock(lock)  # until closed: remove_stale leaves a running unpack alone
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                members = zipped.infolist()
                _check_archive(spec, archive, [(m.filename, m.file_size, _zip_kind(m)) for m in members])
                zipped.extractall(staging, members)
        else:
            with tarfile.open(archive) as tarred:
                members = _tar_members(spec, archive, tarred)
                tarred.extractall(staging, members, filter="data")
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # another process unpacked it first: use theirs
                raise
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise FetchError(f"{spec.benchmark}: could not unpack {archive.name}: {exc}") from exc
    finally:
        os.close(lock)
        shutil.rmtree(staging, ignore_errors=True)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if info.is_dir():
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):  # 0: no type bits (DOS attributes)
        return "device"
    return "file"


def _tar_kind(info: tarfile.TarInfo) -> str:
    return "file" if info.isfile() else "dir" if info.isdir() else "link" if info.issym() or info.islnk() else "device"


def _tar_members(spec: SourceSpec, archive: Path, tarred: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members, read header by header and checked as they come: a compressed tar that expands
    without end is stopped at the first limit, not read to its end."""
    members = []
    checker = _Checker(spec, archive)
    for info in tarred:
        checker.add(info.name, info.size, _tar_kind(info))
        members.append(info)
    return members


def _check_archive(spec: SourceSpec, archive: Path, members: list[tuple[str, int, str]]) -> None:
    checker = _Checker(spec, archive)
    for name, size, kind in members:
        checker.add(name, size, kind)


class _Checker:
    """Member by member: safe names, no links or devices, and the archive limits."""

    def __init__(self, spec: SourceSpec, archive: Path):
        self.spec, self.archive, self.limits = spec, archive, _limits(spec)
        self.packed = max(archive.stat().st_size, 1)
        self.count = self.total = 0

    def add(self, name: str, size: int, kind: str) -> None:
        spec, limits, where = self.spec, self.limits, f"{self.spec.benchmark}: {self.archive.name}"
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
            raise FetchError(f"{where}: archive member {name!r} would land outside the download folder; "
                             "refusing to unpack it")
        if kind in ("link", "device"):
            raise FetchError(f"{where} has links or devices ({name!r} is a {kind}); refusing to unpack it")
        self.count += 1
        self.total += max(size, 0)
        if self.count > limits.max_members:
            raise FetchError(f"{where} has more than max_members ({limits.max_members:,}) members; nothing "
                             "was unpacked. " + _raise_hint(spec, "max_members", str(limits.max_members)))
        if self.total > limits.max_unpacked_bytes:
            raise FetchError(f"{where} unpacks to more than max_unpacked_bytes ({_size(limits.max_unpacked_bytes)}); "
                             "nothing was unpacked. "
                             + _raise_hint(spec, "max_unpacked_bytes", str(limits.max_unpacked_bytes)))
        if self.total > RATIO_FLOOR and self.total > limits.max_ratio * self.packed:
            raise FetchError(f"{where} expands more than max_ratio ({limits.max_ratio:g}) times its size "
                             f"({_size(self.packed)} -> over {_size(self.total)}), like a zip bomb; nothing was "
                             "unpacked. " + _raise_hint(spec, "max_ratio", f"{limits.max_ratio:g}"))
