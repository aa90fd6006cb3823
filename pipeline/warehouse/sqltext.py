"""SQL text the warehouse builds: the templates of sql/templates/ filled in, the files of
sql/derived/, literals, the rows of a set of keys, and casts to a declared schema."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline import paths

# Parameterized SQL (`{name}` placeholders), never applied as it is.
TEMPLATES = paths.SQL_DIR / "templates"
# Views (and macros) over the tables built after sql/*.sql: paper_tables, paper_tables_clean.
DERIVED = paths.SQL_DIR / "derived"

Key = tuple[tuple[str, str], ...]   # (column, value) pairs, partition_columns order; () = whole table

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_DUCKDB_TYPES = {pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN", pa.int64(): "BIGINT", pa.float64(): "DOUBLE"}


@functools.cache
def _statement(path: Path) -> str:
    """A file's SQL without its comment lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("--")).strip()


def template(name: str, **values: str) -> str:
    """sql/templates/<name>.sql with each `{placeholder}` replaced by the SQL text given for it
    (quote values with `literal`). A placeholder without a value, or a value without a
    placeholder, is an error."""
    text = _statement(TEMPLATES / f"{name}.sql")
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise KeyError(f"sql/templates/{name}.sql takes {sorted(wanted)}, given {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def run_derived(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """sql/derived/<name>.sql."""
    con.execute(_statement(DERIVED / f"{name}.sql"))


def sources() -> list[Path]:
    """The SQL files the warehouse runs besides sql/*.sql and the cards' own."""
    return sorted(TEMPLATES.glob("*.sql")) + sorted(DERIVED.glob("*.sql"))


def literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def identifier(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def where(keys: Iterable[Key], alias: str = "") -> str:
    """SQL for 'the rows of these keys' (literals, so DuckDB prunes row groups with them)."""
    prefix = f"{alias}." if alias else ""
    terms = []
    for key in keys:
        if not key:
            return "true"
        terms.append("(" + " AND ".join(f'{prefix}"{c}" = {literal(v)}' for c, v in key) + ")")
    return " OR ".join(terms) or "false"


def casts(table_schema: pa.Schema) -> str:
    """A select list giving a frame's columns the declared types, in the declared order."""
    return ", ".join(f'CAST("{f.name}" AS {_DUCKDB_TYPES[f.type]}) AS "{f.name}"' for f in table_schema)
