"""data/corpora.yaml: the text corpora a user scans against every benchmark item.

    corpora:
      poetry:                         # a name: letters, digits, . _ -
        paths: [/data/chinese-poetry/**/*.json]   # files, folders, globs or fsspec URLs (s3://, https://)
        format: json                  # jsonl | json (a file holding a list of documents) | parquet | txt
        fields: [title, paragraphs]   # where the text is: keys, dotted paths (a.b), lists are joined
        id_field: id                  # optional: the documents' own ids (else file name + a hash of the text)
        version: 2.0.1
        ngram: 13                     # optional: characters per n-gram (default 13)
        threshold: 0.5                # optional: share of a field's n-grams that makes an item contaminated
        engine: local                 # optional: local (default) or ray; ray_address: a cluster (else a local Ray)
        reference: false              # optional: true for public classical texts (quotation, not leakage)

Parsed into typed models (pydantic) that refuse unknown keys; every problem is one line that names
the file, the corpus, the key, the value and what is expected. Relative paths are relative to the
file. Corpora scanned from the command line (`wenheng contamination scan PATH... --name NAME`) are
kept in `<cache>/corpora.scanned.yaml`, in the same form, so their partitions can be rebuilt.

That remembered file is wenheng's, not the user's: an entry of it that no longer holds (its files
were moved or deleted, its name is not a name, corpora.yaml took its name) is left out with one
line on stderr, and never fails a run; scanning again under the name replaces it. A path that
cannot be a corpus (an unknown URL protocol, s3:// without s3fs, a symlink loop) is one ConfigError
line. A file that a glob or folder matches but that is not a regular file (a FIFO, a socket, a
symlink loop) stays in the corpus's file list: the scan quarantines it with the reason
(`not_regular`), so it is never skipped in silence nor opened.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.config import ConfigError
from pipeline.config.problems import one_line
from pipeline.config.yaml_loading import load_yaml

FORMATS = ("jsonl", "json", "parquet", "txt")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".txt": "txt"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DEFAULT_NGRAM = 13
DEFAULT_THRESHOLD = 0.5


class CorpusSpec(BaseModel):
    """One corpus: where its files are, how to read them, and how to compare."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: Annotated[list[str], Field(min_length=1)]
    format: Literal["jsonl", "json", "parquet", "txt"] | None = None
    fields: list[str] = []
    id_field: str | None = None
    version: str
    license: str | None = None
    ngram: Annotated[int, Field(ge=5, le=64)] = DEFAULT_NGRAM
    threshold: Annotated[float, Field(gt=0, le=1)] = DEFAULT_THRESHOLD
    engine: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    # a corpus of public classical texts (e.g. chinese-poetry): what it holds of an item is the
    # passage the item quotes, not leakage, in every other corpus's verdict (overlap.py)
    reference: bool = False

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)   # `version: 2` is a version, not a type error
        return value

    @field_validator("paths", mode="before")
    @classmethod
    def _one_path(cls, value):
        return [value] if isinstance(value, str) else value

    @field_validator("fields", mode="before")
    @classmethod
    def _one_field(cls, value):
        return [value] if isinstance(value, str) else value


class CorporaFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    corpora: dict[str, CorpusSpec] = {}


def load_corpora(path: Path, scanned: Path | None = None,
                 warn: Callable[[str], None] | None = None) -> dict[str, CorpusSpec]:
    """The corpora of `path` (none when the file does not exist: scanning is opt-in), plus those
    scanned from the command line (`scanned`), with paths made absolute and checked. A problem of
    `path` is a ConfigError; an entry of `scanned` that no longer holds is left out with one line
    to `warn` (default: stderr, each line once per process)."""
    out = _parse(path) if path.is_file() else {}
    if scanned is None or not scanned.is_file():
        return out
    warn = warn or _warn_once
    for name, spec in _parse_remembered(scanned, warn).items():
        if name in out:
            warn(f"remembered corpus {name!r} skipped: {path} now configures a corpus of that name "
                 f"(its command-line scan, in {scanned}, is left out)")
            continue
        out[name] = spec
    return out


def ngram_sizes(path: Path) -> list[int]:
    """The n-gram sizes the items' index is stored for: the default and each one the corpora of
    `path` use. A file that cannot be read adds none (its scan reports the problem); a scan of
    another size builds its index itself (run.item_index)."""
    try:
        specs = _parse(path) if path.is_file() else {}
    except ConfigError:
        specs = {}
    return sorted({DEFAULT_NGRAM, *(spec.ngram for spec in specs.values())})


_WARNED: set[str] = set()


def _warn_once(line: str) -> None:
    if line not in _WARNED:
        _WARNED.add(line)
        print(f"wenheng: {line}", file=sys.stderr, flush=True)


def _parse_remembered(file: Path, warn: Callable[[str], None]) -> dict[str, CorpusSpec]:
    """The remembered corpora, each checked on its own: those that no longer hold are said and
    left out."""
    try:
        entries = load_yaml(file).get("corpora")
    except ConfigError as exc:
        warn(f"{exc}: the corpora scanned from the command line are left out (scan them again)")
        return {}
    out = {}
    for name, entry in (entries.items() if isinstance(entries, dict) else ()):
        try:
            out.update(_parse_entries(file, {"corpora": {name: entry}}))
        except ConfigError as exc:
            reason = str(exc).splitlines()[0].removeprefix(f"{file}: corpora.{name}: ")
            warn(f"remembered corpus {name!r} skipped: {reason} (in {file}; scan it again with "
                 f"`wenheng contamination scan PATH... --name {name}`)")
    return out


def _parse(file: Path) -> dict[str, CorpusSpec]:
    return _parse_entries(file, load_yaml(file))


def _parse_entries(file: Path, data: dict) -> dict[str, CorpusSpec]:
    """A corpora file's mapping -> specs, every problem in one ConfigError (a line each)."""
    try:
        parsed = CorporaFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(one_line(_line(file, error)) for error in exc.errors())) from None
    problems = []
    out = {}
    for name, spec in parsed.corpora.items():
        where = f"{file}: corpora.{name}"
        problems += [f"{where}: {line}" for line in check_name(str(name))]
        try:
            spec = spec.model_copy(update={"paths": [absolute_path(p, file.parent) for p in spec.paths]})
        except ConfigError as exc:
            problems.append(f"{where}: {exc}")
            continue
        problems += [f"{where}: {line}" for line in check_spec(spec)]
        out[str(name)] = spec
    if problems:
        raise ConfigError("\n".join(map(one_line, problems)))
    return out


def check_name(name: str) -> list[str]:
    """What is wrong with a corpus's name (it names a partition, a cache folder and report rows)."""
    if NAME.match(name):
        return []
    return [f"the name may hold letters, digits, '.', '_' and '-', and starts with a letter or digit (got {name!r})"]


def _line(file: Path, error: dict) -> str:
    where = ".".join(str(part) for part in error["loc"])
    value = error.get("input")
    shown = "" if isinstance(value, dict) else f" (got {value!r})"
    message = error["msg"].replace("Extra inputs are not permitted", "unknown key")
    return f"{file}: {where}: {message}{shown}"


def is_url(path: str) -> bool:
    return "://" in path


def absolute_path(path: str, base: Path) -> str:
    """`path` made absolute (symlinks resolved), relative to `base`; a symlink loop is a ConfigError."""
    if is_url(path):
        return path
    expanded = Path(os.path.expanduser(path))
    try:
        return str((expanded if expanded.is_absolute() else base / expanded).resolve())
    except (RuntimeError, OSError) as exc:   # Python 3.11: RuntimeError("Symlink loop from ...")
        raise ConfigError(f"paths: {path} cannot be resolved ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    loop = getattr(exc, "errno", None) == errno.ELOOP or "loop" in text.lower()
    return "a symlink loop" if loop else text


def check_spec(spec: CorpusSpec) -> list[str]:
    """What is wrong with a spec before any file is read: paths that match nothing, URLs no
    installed filesystem reads, a format that cannot be told, a structured format without text
    fields."""
    problems = []
    for path in spec.paths:
        if is_url(path):
            problems += [f"paths: {line}" for line in check_url(path)]
        elif not _local_files(path):
            problems.append(f"paths: {path} does not exist (or the glob matches no file)")
    formats = {spec.format} if spec.format else {format_of(f) for f in _all_local(spec)}
    if None in formats:
        unknown = sorted({Path(f).suffix or Path(f).name for f in _all_local(spec) if format_of(f) is None})
        problems.append(f"format: not set, and {', '.join(unknown[:3])} is none of {', '.join(EXTENSIONS)}; "
                        f"set format: one of {', '.join(FORMATS)}")
    if formats & {"jsonl", "json", "parquet"} and not spec.fields:
        problems.append("fields: name the key(s) that hold the text, e.g. fields: [text] or [title, paragraphs]")
    return problems


def check_url(url: str) -> list[str]:
    """A URL whose protocol fsspec does not know, or whose filesystem's package is not installed."""
    import fsspec

    protocol = url.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except ValueError:
        return [f"{url}: unknown protocol {protocol!r} (use a local path, or a URL such as s3://, gs://, "
                "https://)"]
    except ImportError as exc:
        return [f"{url}: reading {protocol}:// needs a package that is not installed ({_first_line(exc)})"]
    return []


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def format_of(path: str) -> str | None:
    return EXTENSIONS.get(Path(path).suffix.lower())


def _local_files(path: str) -> list[str]:
    """The files `path` names: itself, a folder's files (walked) or a glob's matches. Entries that
    are not regular files (FIFOs, sockets, symlink loops) are kept: the scan quarantines them."""
    if glob.has_magic(path):
        return sorted(p for p in glob.glob(path, recursive=True) if _is_file_like(p))
    if os.path.isdir(path):
        return sorted(str(p) for p in Path(path).rglob("*") if _is_file_like(str(p)))
    return [path] if _is_file_like(path) else []


def _is_file_like(path: str) -> bool:
    """Not a folder: a regular file, or an entry that holds no readable text (not_regular says why)."""
    return os.path.isfile(path) or (os.path.lexists(path) and not os.path.isdir(path))


def not_regular(path: str) -> str | None:
    """Why a local corpus entry is not read (a FIFO would block the scan; a symlink loop cannot be
    opened), or None for a regular file or a URL."""
    if is_url(path):
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot be read ({_why(exc)})"
    if stat.S_ISREG(mode):
        return None
    kinds = {stat.S_ISFIFO: "a FIFO (named pipe)", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a character device",
             stat.S_ISBLK: "a block device"}
    kind = next((text for test, text in kinds.items() if test(mode)), "not a regular file")
    return f"not read: {kind}, not a regular file"


def _all_local(spec: CorpusSpec) -> list[str]:
    return [f for p in spec.paths if not is_url(p) for f in _local_files(p)]


def shard_paths(spec: CorpusSpec) -> list[str]:
    """Every file of the corpus, in a stable order (folders are walked; globs may use **); files
    whose format cannot be told are left out of a folder, not of an explicit list. A URL that
    cannot be listed is a ConfigError naming it."""
    files = []
    for path in spec.paths:
        if is_url(path):
            files += _remote_files(path)
            continue
        found = _local_files(path)
        if os.path.isdir(path) and not spec.format:
            found = [f for f in found if format_of(f)]
        files += found
    return sorted(dict.fromkeys(files))


def _remote_files(url: str) -> list[str]:
    import fsspec

    problems = check_url(url)
    if problems:
        raise ConfigError(f"corpus path {problems[0]}")
    fs, _, expanded = fsspec.get_fs_token_paths(url)
    protocol = url.split("://", 1)[0]
    return [p if "://" in p else f"{protocol}://{p}" for p in expanded]


def save_scanned(path: Path, name: str, spec: CorpusSpec) -> None:
    """Record a corpus scanned from the command line, so its partition can be rebuilt later; an
    entry of the same name is replaced. A name that is not one is a ConfigError, before anything
    is written."""
    problems = check_name(name)
    if problems:
        raise ConfigError(f"--name: {problems[0]}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None   # wenheng's own file, unreadable: written anew (load_corpora said so)
    data = data if isinstance(data, dict) else {}
    if not isinstance(data.get("corpora"), dict):
        data["corpora"] = {}
    data["corpora"][name] = spec.model_dump(exclude_defaults=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("# corpora scanned with `wenheng contamination scan PATH...` (kept so they can be rebuilt)\n"
                   + yaml.safe_dump(data, allow_unicode=True, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
