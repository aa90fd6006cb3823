"""Whether a stored output can still be read. A lake file is written with a digest of its bytes
in its own footer (`write_table`); one whose footer does not read, or whose bytes are not those
digested, is damaged. So is a warehouse that DuckDB cannot open, or cut short of its blocks: it is
set aside (`<name>.damaged`), not deleted. The runner treats a damaged output as not stored
(pipeline/run_inputs.py `Inputs.stored`): it is recomputed, and each finding is one line of the
run's log (`Inputs.findings`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import pyarrow as pa

DIGEST_KEY = "wenheng.sha256"   # footer key: "<n> <sha256 of the file's first n bytes>" (all but the footer)
DAMAGED_SUFFIX = ".damaged"     # a damaged warehouse is kept aside under this name, never deleted
_DUCKDB_HEADER_BYTES = 3 * 4096  # DuckDB's file header and two database headers, before the blocks
_CHUNK = 1 << 20


class _Digesting:
    """A file object that digests what passes through it on the way to `sink`."""

    def __init__(self, sink: BinaryIO):
        self.sink, self.sha, self.size = sink, hashlib.sha256(), 0

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += memoryview(data).nbytes
        return self.sink.write(data)

    def flush(self) -> None:
        self.sink.flush()

    def tell(self) -> int:
        return self.size

    @property
    def closed(self) -> bool:
        return self.sink.closed


def write_table(table: pa.Table, sink: BinaryIO) -> None:
    """`table` as Parquet into `sink`, with the digest of everything written before the footer
    in the footer itself: the file can be checked without anything kept beside it."""
    import pyarrow.parquet as pq

    digesting = _Digesting(sink)
    with pq.ParquetWriter(digesting, table.schema) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({DIGEST_KEY: f"{digesting.size} {digesting.sha.hexdigest()}"})


def lake_damage(path: Path, whole: bool = False) -> str | None:
    """Why the lake file at `path` cannot be trusted, or None: its footer does not read, or its
    bytes differ from the digest its writer put there (a file without one: the footer only, or,
    with `whole`, every row read: a history file written before digests, which nothing can
    recompute)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
    except Exception as exc:  # noqa: BLE001 - any failure to read it is the damage to report
        return f"its footer does not read: {_one_line(exc)}"
    recorded = (meta.metadata or {}).get(DIGEST_KEY.encode())
    if recorded is None:
        if not whole:
            return None
        try:
            pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - as above
            return f"its rows do not read: {_one_line(exc)}"
        return None
    try:
        size_text, expected = recorded.decode().split(" ")
        size = int(size_text)
    except ValueError:
        return "its digest does not read"
    digest, read = hashlib.sha256(), 0
    with path.open("rb") as f:
        while read < size and (chunk := f.read(min(_CHUNK, size - read))):
            digest.update(chunk)
            read += len(chunk)
    if read < size or digest.hexdigest() != expected:
        return "its bytes are not those written"
    return None


def warehouse_damage(path: Path) -> str | None:
    """Why the warehouse at `path` cannot be read, or None (also when it is missing or another
    process holds it locked: neither is damage)."""
    import duckdb

    if not path.is_file():
        return None
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            block_size, used = con.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
            con.execute("SELECT layout FROM _build").fetchall()
    except duckdb.Error as exc:
        message = _one_line(exc)
        if "lock" in message.lower() or isinstance(exc, duckdb.CatalogException):
            return None   # held by a writer, or built by an older wenheng (publish rebuilds that)
        return f"DuckDB cannot open it: {message}"
    # DuckDB writes whole blocks after its headers: a cut elsewhere, or past the blocks in use, is damage
    blocks, rest = divmod(path.stat().st_size - _DUCKDB_HEADER_BYTES, block_size)
    if rest or blocks < used:
        return f"it is cut short: {path.stat().st_size:,} bytes, not whole blocks of {block_size:,} ({used} in use)"
    return None


def set_aside(path: Path) -> Path:
    """The damaged file renamed beside itself (`<name>.damaged`, replacing an older one), so the
    rebuild does not write over what may still be examined."""
    aside = path.with_name(path.name + DAMAGED_SUFFIX)
    path.replace(aside)
    wal = path.with_name(path.name + ".wal")   # DuckDB's write-ahead log belongs with its file
    if wal.is_file():
        wal.replace(aside.with_name(aside.name + ".wal"))
    return aside


def lake_file_finding(path: Path, where: str) -> str | None:
    """The line to say when the lake file at `path`, `where`'s, is damaged, else None."""
    damage = _lake_damage_once(path)
    return None if damage is None else f"{where}: its lake file is damaged ({damage}): recomputed"


def warehouse_finding(path: Path) -> str | None:
    """The line to say when the warehouse is damaged, else None; the publish that follows sets it
    aside before it builds (pipeline/warehouse/build.py)."""
    damage = warehouse_damage(path)
    if damage is None:
        return None
    return (f"warehouse: {path} is damaged ({damage}): kept as {path.name}{DAMAGED_SUFFIX}, rebuilt from the lake "
            "and the history")


# (size, mtime_ns, inode) of lake files found sound in this process: a daemon plans every 30 s,
# and a file not written since it was hashed need not be hashed again
_sound: dict[Path, tuple[int, int, int]] = {}


def _lake_damage_once(path: Path) -> str | None:
    stat = path.stat()
    seen = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if _sound.get(path) == seen:
        return None
    damage = lake_damage(path)
    if damage is None:
        _sound[path] = seen
    else:
        _sound.pop(path, None)
    return damage


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"
