"""Downloading a benchmark's files once, verifying them, and re-using the verified copy.

A `url` source in sources.yaml names the file's sha256. The download goes to
`<cache>/downloads/<sha256>/<file name>`: keyed by content, so two versions of a source never
overwrite each other and a cached file is always the one that was verified. The bytes are hashed
as they arrive and only a file whose hash matches is moved into place; anything else is deleted
and reported as `ChecksumMismatch`. Zip and tar archives are unpacked once next to the file
(`.../unpacked/`), and `subpath` picks the file or folder inside them to parse.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: pipeline.config imports this module
    from pipeline.config import SourceSpec

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
TIMEOUT_S = 60
CHUNK = 1 << 20


class FetchError(RuntimeError):
    """A source could not be downloaded or unpacked; the message says which and why."""


class ChecksumMismatch(FetchError):
    """The downloaded bytes are not the ones sources.yaml names; they were discarded."""


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


def _download_folder(spec: SourceSpec) -> Path:
    # spec.path is <downloads>/<sha256>/<name> or <downloads>/<sha256>/unpacked[/<subpath>]
    for parent in [spec.path, *spec.path.parents]:
        if parent.name == spec.sha256:
            return parent
    raise FetchError(f"{spec.benchmark}: {spec.path} is not inside a download folder for {spec.sha256}")


def _download(spec: SourceSpec, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".partial-")
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            request = urllib.request.Request(spec.url, headers={"User-Agent": "wenheng"})
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                for block in iter(lambda: response.read(CHUNK), b""):
                    digest.update(block)
                    out.write(block)
        got = digest.hexdigest()
        if got != spec.sha256:
            raise ChecksumMismatch(
                f"{spec.benchmark}: {spec.url} has sha256 {got}, but sources.yaml expects {spec.sha256}; "
                "the download was discarded. If the upstream file changed on purpose, review it, then "
                "update 'sha256' and 'version' in sources.yaml.")
        os.replace(tmp, target)  # atomic: a cached file is always a verified one
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise FetchError(f"{spec.benchmark}: could not download {spec.url}: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _unpack(spec: SourceSpec, archive: Path, target: Path) -> None:
    if target.is_dir():
        return
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpacking-"))
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                _check_members(spec, [m.filename for m in zipped.infolist()])
                zipped.extractall(staging)
        else:
            with tarfile.open(archive) as tarred:
                members = tarred.getmembers()
                _check_members(spec, [m.name for m in members])
                bad = [m.name for m in members if not (m.isfile() or m.isdir())]
                if bad:
                    raise FetchError(f"{spec.benchmark}: {archive.name} has links or devices ({bad[:3]}); "
                                     "refusing to unpack it")
                tarred.extractall(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # another process unpacked it first: use theirs
                raise
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise FetchError(f"{spec.benchmark}: could not unpack {archive.name}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_members(spec: SourceSpec, names: list[str]) -> None:
    for name in names:
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts:
            raise FetchError(f"{spec.benchmark}: archive member {name!r} would land outside the "
                             "download folder; refusing to unpack it")
