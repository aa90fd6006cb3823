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

Parsed into typed models (pydantic) that refuse unknown keys; every problem is one line that names
the file, the corpus, the key, the value and what is expected. Relative paths are relative to the
file. Corpora scanned from the command line (`wenheng contamination scan PATH... --name NAME`) are
kept in `<cache>/corpora.scanned.yaml`, in the same form, so their partitions can be rebuilt.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.config import ConfigError, _load_yaml

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


def load_corpora(path: Path, scanned: Path | None = None) -> dict[str, CorpusSpec]:
    """The corpora of `path` (none when the file does not exist: scanning is opt-in), plus those
    scanned from the command line (`scanned`), with paths made absolute and checked."""
    out: dict[str, CorpusSpec] = {}
    for file in (path, scanned):
        if file is None or not file.is_file():
            continue
        for name, spec in _parse(file).items():
            if name in out:
                raise ConfigError(f"{file}: corpora.{name}: already defined in {path}; choose another --name")
            out[name] = spec
    return out


def _parse(file: Path) -> dict[str, CorpusSpec]:
    data = _load_yaml(file)
    try:
        parsed = CorporaFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(_line(file, error) for error in exc.errors())) from None
    problems = []
    out = {}
    for name, spec in parsed.corpora.items():
        where = f"{file}: corpora.{name}"
        if not NAME.match(str(name)):
            problems.append(f"{where}: the name may hold letters, digits, '.', '_' and '-' (got {name!r})")
        spec = spec.model_copy(update={"paths": [_absolute(p, file.parent) for p in spec.paths]})
        problems += [f"{where}: {line}" for line in check_spec(spec)]
        out[str(name)] = spec
    if problems:
        raise ConfigError("\n".join(problems))
    return out


def _line(file: Path, error: dict) -> str:
    where = ".".join(str(part) for part in error["loc"])
    value = error.get("input")
    shown = "" if isinstance(value, dict) else f" (got {value!r})"
    message = error["msg"].replace("Extra inputs are not permitted", "unknown key")
    return f"{file}: {where}: {message}{shown}"


def is_url(path: str) -> bool:
    return "://" in path


def _absolute(path: str, base: Path) -> str:
    if is_url(path):
        return path
    return str((base / os.path.expanduser(path)).resolve()) if not os.path.isabs(os.path.expanduser(path)) \
        else str(Path(os.path.expanduser(path)).resolve())


def check_spec(spec: CorpusSpec) -> list[str]:
    """What is wrong with a spec before any file is read: paths that match nothing, a format that
    cannot be told, a structured format without text fields."""
    problems = []
    for path in spec.paths:
        if not is_url(path) and not _local_files(path):
            problems.append(f"paths: {path} does not exist (or the glob matches no file)")
    formats = {spec.format} if spec.format else {format_of(f) for f in _all_local(spec)}
    if None in formats:
        unknown = sorted({Path(f).suffix or Path(f).name for f in _all_local(spec) if format_of(f) is None})
        problems.append(f"format: not set, and {', '.join(unknown[:3])} is none of {', '.join(EXTENSIONS)}; "
                        f"set format: one of {', '.join(FORMATS)}")
    if formats & {"jsonl", "json", "parquet"} and not spec.fields:
        problems.append("fields: name the key(s) that hold the text, e.g. fields: [text] or [title, paragraphs]")
    return problems


def format_of(path: str) -> str | None:
    return EXTENSIONS.get(Path(path).suffix.lower())


def _local_files(path: str) -> list[str]:
    if glob.has_magic(path):
        return sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    if os.path.isdir(path):
        return sorted(str(p) for p in Path(path).rglob("*") if p.is_file())
    return [path] if os.path.isfile(path) else []


def _all_local(spec: CorpusSpec) -> list[str]:
    return [f for p in spec.paths if not is_url(p) for f in _local_files(p)]


def shard_paths(spec: CorpusSpec) -> list[str]:
    """Every file of the corpus, in a stable order (folders are walked; globs may use **); files
    whose format cannot be told are left out of a folder, not of an explicit list."""
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

    fs, _, expanded = fsspec.get_fs_token_paths(url)
    protocol = url.split("://", 1)[0]
    return [p if "://" in p else f"{protocol}://{p}" for p in expanded]


def save_scanned(path: Path, name: str, spec: CorpusSpec) -> None:
    """Record a corpus scanned from the command line, so its partition can be rebuilt later."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    data = data if isinstance(data, dict) else {}
    data.setdefault("corpora", {})[name] = spec.model_dump(exclude_defaults=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("# corpora scanned with `wenheng contamination scan PATH...` (kept so they can be rebuilt)\n"
                   + yaml.safe_dump(data, allow_unicode=True, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
