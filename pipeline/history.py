"""What each benchmark looked like, and how models did on it, in every source version: append-only
history, and the diff between two versions.

A *snapshot* is one benchmark's items as built from one source version (the items'
`source_version`) with one set of applied corrections: `v1` without corrections, `v1+c<hash>`
with them (the hash of the applied corrections), so a correction is a new snapshot of the same
version. At every warehouse publish, each benchmark's items, and each model's responses and
scores on them, are recorded for their snapshot, unless the latest recording of that snapshot
holds the same rows (a re-publish writes nothing; responses are compared without `created_at`
and `latency_s`, so answers served again from the cache, as `--force` does, are not new rows).
Nothing is ever overwritten or deleted.

Storage: parquet files under the data directory (`data/history/`, or $WENHENG_HISTORY), beside
the lake, not in the warehouse, so deleting or rebuilding the warehouse loses nothing:

    history/item_history/<benchmark>/<snapshot>/items/<recording>.parquet
    history/response_history/<benchmark>/<snapshot>/<model>/<recording>.parquet
    history/score_history/<benchmark>/<snapshot>/<model>/<recording>.parquet
    history/audit_history/<benchmark>/<recording>.parquet     (only rows not recorded before)

A recording is `<UTC time>-<content hash>`; each row carries its `snapshot`, `version`,
`corrections` (hash, '' for none), `recorded_at` and `recording`. The warehouse loads them as
`item_history`, `response_history`, `score_history` and `audit_history` (the corrections audit,
one row per change per version, never lost when the next build replaces `corrections_audit`);
sql/40_history.sql adds `history_snapshots` and `score_changes`, and the macros both they and
`diff` read: `latest_items`, `latest_responses`, `latest_scores` (where a snapshot was recorded
more than once, responses completed later, its latest recording is the one compared) and
`score_changes_between` (the score changes between two snapshots).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import lake_health, schema
from pipeline.texttable import table as text_table

# warehouse table -> schema (pipeline/schema.py): the lake table each records, with the history's columns
TABLES: dict[str, pa.Schema] = schema.HISTORY_TABLES
_RECORDED = {"item_history": "items", "response_history": "responses", "score_history": "scores"}
# when and how fast an answer came, not what it is: left out of the comparison with the last recording
_NOT_COMPARED = {"response_history": ("created_at", "latency_s")}
UNVERSIONED = "unversioned"


def default_dir(lake_dir: Path) -> Path:
    """$WENHENG_HISTORY, else `history/` beside the lake (data/history)."""
    from pipeline.settings import settings

    return settings().history or lake_dir.parent / "history"


def files(history_dir: Path, table: str) -> list[Path]:
    root = history_dir / table
    return sorted(root.rglob("*.parquet")) if root.is_dir() else []


# ---- recording -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    benchmark: str
    version: str
    corrections: str

    @property
    def name(self) -> str:
        return f"{self.version}+c{self.corrections}" if self.corrections else self.version


def snapshots(con: duckdb.DuckDBPyConnection, benchmark: str) -> list[Snapshot]:
    """The snapshots the warehouse being built holds for a benchmark (one per source version of its
    items, usually one), identified with the corrections applied to them."""
    applied = con.execute("""SELECT item_id, field, old, new FROM corrections_audit
        WHERE benchmark = ? AND status = 'applied' ORDER BY ALL""", [benchmark]).fetchall()
    corrections = schema.stable_hash([list(r) for r in applied])[:10] if applied else ""
    versions = con.execute("SELECT DISTINCT coalesce(source_version, ?) FROM items WHERE benchmark = ? ORDER BY 1",
                           [UNVERSIONED, benchmark]).fetchall()
    return [Snapshot(benchmark, v, corrections) for (v,) in versions]


def record(con: duckdb.DuckDBPyConnection, history_dir: Path, scope: dict[str, set[str] | None] | None,
           audit_changed: bool, now: dt.datetime) -> list[str]:
    """Record the items, responses and scores of the benchmark x model runs in `scope` (None:
    every run; a benchmark mapped to None: all its models) and the new audit rows. Returns the
    files written."""
    written: list[str] = []
    if scope is None:
        benches = [b for (b,) in con.execute("SELECT DISTINCT benchmark FROM items ORDER BY 1").fetchall()]
        scope = {b: None for b in benches}
    stamp = now.strftime("%Y%m%dT%H%M%S%fZ")
    for bench, models in sorted(scope.items()):
        for snap in snapshots(con, bench):
            where = "benchmark = ? AND coalesce(source_version, ?) = ?"
            params = [bench, UNVERSIONED, snap.version]
            chosen = models
            if models is None:   # its items (or prompts) changed: the items, and every model
                written += _record_part(con, history_dir, "item_history", snap, "items",
                                        f"SELECT * FROM items WHERE {where}", params, now, stamp)
                chosen = {m for (m,) in con.execute("SELECT DISTINCT model FROM responses WHERE benchmark = ?",
                                                    [bench]).fetchall()}
            for table in ("response_history", "score_history"):
                written += _record_models(con, history_dir, table, snap, sorted(chosen), where, params, now, stamp)
    if audit_changed or written:
        written += _record_audit(con, history_dir, now, stamp)
    return written


def _content_hash(con: duckdb.DuckDBPyConnection, query: str, params: list) -> tuple[int, str]:
    ((rows, total),) = con.execute(f"SELECT count(*), coalesce(sum(hash(q)), 0) FROM ({query}) q", params).fetchall()
    return rows, schema.stable_hash([rows, str(total)])[:12]


def _record_models(con, history_dir: Path, table: str, snap: Snapshot, models: list[str], where: str,
                   params: list, now: dt.datetime, stamp: str) -> list[str]:
    """The responses (or scores) of each of `models` on a snapshot's items, as `_record_part` records
    one model's: the content hashes of all of them in one grouped scan, then the rows of the models
    whose latest recording differs in one more, split per model."""
    if not models:
        return []
    rows_of = (f"FROM {_RECORDED[table]} t WHERE t.benchmark = ? AND list_contains(?, t.model) AND t.item_id IN "
               f"(SELECT item_id FROM items WHERE {where})")
    query = f"SELECT t.* {rows_of}"
    left_out = _NOT_COMPARED.get(table)
    compared = f"SELECT t.* EXCLUDE ({', '.join(left_out)}) {rows_of}" if left_out else query
    bench = params[0]
    hashes = {m: (rows, schema.stable_hash([rows, str(total)])[:12]) for m, rows, total in con.execute(
        f"SELECT model, count(*), coalesce(sum(hash(q)), 0) FROM ({compared}) q GROUP BY model",
        [bench, models, *params]).fetchall()}
    todo: dict[str, tuple[Path, str]] = {}
    for model in models:
        rows, digest = hashes.get(model, (0, ""))
        if rows == 0:
            continue   # nothing computed for it (yet): an absence is not recorded
        folder = history_dir / table / _safe(snap.benchmark) / _safe(snap.name) / _safe(model)
        latest = max(folder.glob("*.parquet"), default=None) if folder.is_dir() else None
        if latest is not None and latest.stem.rsplit("-", 1)[-1] == digest:
            continue   # the same rows as last time
        todo[model] = (folder, f"{stamp}-{digest}")
    if not todo:
        return []
    rows_now = con.sql(query, params=[bench, sorted(todo), *params]).to_arrow_table()
    # each model's rows, in the order the query gave them (a stable sort by model, then slices)
    model = rows_now["model"]
    if len(rows_now) > 1 and not pc.all(pc.greater_equal(model.slice(1), model.slice(0, len(model) - 1))).as_py():
        rows_now = rows_now.take(pc.sort_indices(rows_now, [("model", "ascending")]))
    offset, parts = 0, {}
    for item in pc.value_counts(rows_now["model"]).to_pylist():
        parts[item["values"]] = rows_now.slice(offset, item["counts"])
        offset += item["counts"]
    written = []
    for model, (folder, recording) in todo.items():
        extra = {"snapshot": snap.name, "version": snap.version, "corrections": snap.corrections,
                 "recorded_at": now, "recording": recording}
        written.append(_write(parts[model], TABLES[table], extra, folder / f"{recording}.parquet"))
    return written


def _record_part(con, history_dir: Path, table: str, snap: Snapshot, part: str, query: str, params: list,
                 now: dt.datetime, stamp: str) -> list[str]:
    rows, digest = _content_hash(con, query, params)
    if rows == 0:
        return []   # nothing computed for it (yet): an absence is not recorded
    folder = history_dir / table / _safe(snap.benchmark) / _safe(snap.name) / _safe(part)
    latest = max(folder.glob("*.parquet"), default=None) if folder.is_dir() else None
    if latest is not None and latest.stem.rsplit("-", 1)[-1] == digest:
        return []   # the same rows as last time
    recording = f"{stamp}-{digest}"
    extra = {"snapshot": snap.name, "version": snap.version, "corrections": snap.corrections,
             "recorded_at": now, "recording": recording}
    rows_now = con.sql(query, params=params).to_arrow_table()
    return [_write(rows_now, TABLES[table], extra, folder / f"{recording}.parquet")]


def _record_audit(con, history_dir: Path, now: dt.datetime, stamp: str) -> list[str]:
    """Audit rows not recorded before for the same version (the history table holds every earlier
    one: it is loaded before this runs)."""
    current = [(s.benchmark, s.version, s.name, s.corrections)
               for (b,) in con.execute("SELECT DISTINCT benchmark FROM items").fetchall() for s in snapshots(con, b)]
    con.register("current_snapshots", pd.DataFrame(current, columns=["benchmark", "version", "snapshot",
                                                                      "corrections"], dtype=object))
    try:
        audit_columns = ", ".join(f'a."{c}"' for c in schema.CORRECTIONS_AUDIT.names)
        same = " AND ".join(f'h."{c}" IS NOT DISTINCT FROM n."{c}"'
                            for c in [*schema.CORRECTIONS_AUDIT.names, "version"])
        new = con.sql(f"""
            WITH n AS (SELECT DISTINCT {audit_columns}, c.version, c.snapshot, c.corrections
                       FROM corrections_audit a LEFT JOIN current_snapshots c USING (benchmark))
            SELECT * FROM n WHERE NOT EXISTS (SELECT 1 FROM audit_history h WHERE {same})
            ORDER BY ALL""").to_arrow_table()
    finally:
        con.unregister("current_snapshots")
    written = []
    for bench in sorted(set(new.column("benchmark").to_pylist()), key=str):
        rows = new.filter(pc.equal(new["benchmark"], bench)) if bench is not None else \
            new.filter(pc.is_null(new["benchmark"]))
        digest = schema.stable_hash(rows.to_pylist())[:12]
        recording = f"{stamp}-{digest}"
        written.append(_write(rows.drop_columns(["version", "snapshot", "corrections"]), TABLES["audit_history"],
                              {"recorded_at": now, "recording": recording,
                               "version": rows["version"], "snapshot": rows["snapshot"],
                               "corrections": rows["corrections"]},
                              history_dir / "audit_history" / _safe(bench or "unknown") / f"{recording}.parquet"))
    return written


def _write(table: pa.Table, target_schema: pa.Schema, extra: dict, path: Path) -> str:
    """Written under a temporary name, then renamed: a history file is whole or absent."""
    for name, value in extra.items():
        column = value if isinstance(value, (pa.Array, pa.ChunkedArray)) else \
            pa.repeat(pa.scalar(value, type=target_schema.field(name).type), len(table))
        table = table.append_column(name, column.cast(target_schema.field(name).type))
    table = table.select(target_schema.names).cast(target_schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open("wb") as sink:   # with a digest: damage on disk is found before it is loaded
            lake_health.write_table(table, sink)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return str(path)


def _safe(name: str) -> str:
    return quote(str(name), safe="") or "_"


# ---- reading: versions and diffs ---------------------------------------------------------------

class UnknownVersion(LookupError):
    """A version the history does not hold; the message lists the known ones."""


def _connect(db_or_con) -> tuple[duckdb.DuckDBPyConnection, bool]:
    if isinstance(db_or_con, duckdb.DuckDBPyConnection):
        return db_or_con, False
    from pipeline import paths

    # opened here, not through pipeline.warehouse, which imports this module
    db_path = Path(db_or_con) if db_or_con is not None else paths.warehouse_file()
    if not db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {db_path}: run `wenheng run` first")
    return duckdb.connect(str(db_path), read_only=True), True


# The two snapshots' items (each snapshot's latest recording: sql/40_history.sql).
_ITEMS = """
WITH a AS (SELECT * FROM latest_items($benchmark) WHERE snapshot = $from),
b AS (SELECT * FROM latest_items($benchmark) WHERE snapshot = $to)
"""


def versions(benchmark: str, db_or_con=None) -> pd.DataFrame:
    """The snapshots of a benchmark the history holds, oldest first: snapshot, version,
    corrections, first and last recorded_at, items, models."""
    con, owned = _connect(db_or_con)
    try:
        return con.execute("""SELECT snapshot, version, corrections, first_recorded, last_recorded, items, models
            FROM history_snapshots WHERE benchmark = ? ORDER BY first_recorded, snapshot""", [benchmark]).df()
    finally:
        if owned:
            con.close()


def resolve(known: pd.DataFrame, label: str, benchmark: str) -> str:
    """A snapshot name: the label itself, or the latest snapshot of the version it names."""
    if label in set(known["snapshot"]):
        return label
    same = known[known["version"] == label]
    if len(same):
        return str(same.sort_values("first_recorded")["snapshot"].iloc[-1])
    shown = ", ".join(known["snapshot"]) or "none (publish the warehouse first)"
    raise UnknownVersion(f"{benchmark} has no version {label!r} in the history; known: {shown}")


@dataclass
class Diff:
    benchmark: str
    from_snapshot: str
    to_snapshot: str
    added: list[str] = field(default_factory=list)           # item ids
    removed: list[str] = field(default_factory=list)
    question_changed: list[str] = field(default_factory=list)   # question or context
    answer_changed: list[str] = field(default_factory=list)     # answer or references
    choices_changed: list[str] = field(default_factory=list)
    # (item_id, model, setting, variant) answered in both with a different text or error
    response_changed: list[tuple[str, str, str, str]] = field(default_factory=list)
    # (item_id, model, setting, variant, kind, old score, new score)
    score_changed: list[tuple] = field(default_factory=list)
    # per model x setting x variant x kind x task: n and mean score (0-1) in each snapshot, and the delta
    task_deltas: pd.DataFrame = field(default_factory=pd.DataFrame)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in
                ("added", "removed", "question_changed", "answer_changed", "choices_changed",
                 "response_changed", "score_changed")}


def diff(db_or_con, benchmark: str, from_version: str, to_version: str) -> Diff:
    """What changed in a benchmark between two snapshots (a snapshot name, or a version label
    meaning its latest snapshot): items added and removed, items whose question, answer or
    choices changed, responses and scores that changed for items in both, and each task's mean
    score per model in both."""
    con, owned = _connect(db_or_con)
    try:
        known = versions(benchmark, con)
        src, dst = resolve(known, from_version, benchmark), resolve(known, to_version, benchmark)
        p = {"benchmark": benchmark, "from": src, "to": dst}
        out = Diff(benchmark, src, dst)

        def ids(sql: str) -> list[str]:
            return [r[0] for r in con.execute(_ITEMS + sql, p).fetchall()]

        out.added = ids("SELECT item_id FROM b ANTI JOIN a USING (item_id) ORDER BY 1")
        out.removed = ids("SELECT item_id FROM a ANTI JOIN b USING (item_id) ORDER BY 1")
        both = "SELECT item_id FROM a JOIN b USING (item_id) WHERE {} ORDER BY 1"
        out.question_changed = ids(both.format("a.question IS DISTINCT FROM b.question "
                                               "OR a.context IS DISTINCT FROM b.context"))
        out.answer_changed = ids(both.format("a.answer IS DISTINCT FROM b.answer "
                                             "OR coalesce(a.\"references\", []) <> coalesce(b.\"references\", [])"))
        out.choices_changed = ids(both.format("coalesce(a.choices, []) <> coalesce(b.choices, [])"))
        out.response_changed = [tuple(r) for r in con.execute("""
            SELECT x.item_id, x.model, x.setting, x.variant
            FROM latest_responses($benchmark) x JOIN latest_responses($benchmark) y
            USING (item_id, model, setting, variant)
            WHERE x.snapshot = $from AND y.snapshot = $to
              AND (x.text IS DISTINCT FROM y.text OR x.error IS DISTINCT FROM y.error)
            ORDER BY ALL""", p).fetchall()]
        out.score_changed = [tuple(r) for r in con.execute("""
            SELECT item_id, model, setting, variant, kind, old_score, new_score
            FROM score_changes_between($benchmark, $from, $to) WHERE list_contains(changed, 'score')
            ORDER BY ALL""", p).fetchall()]
        out.task_deltas = con.execute("""
            WITH per AS (SELECT s.snapshot, s.model, s.setting, s.variant, s.kind, i.task,
                                count(s.score) AS n, avg(s.score) AS score
                         FROM latest_scores($benchmark) s JOIN latest_items($benchmark) i
                           ON i.item_id = s.item_id AND i.snapshot = s.snapshot
                         WHERE s.snapshot IN ($from, $to) GROUP BY ALL)
            SELECT model, setting, variant, kind, task,
                   f.n AS n_from, f.score AS score_from, t.n AS n_to, t.score AS score_to,
                   t.score - f.score AS delta
            FROM (SELECT * FROM per WHERE snapshot = $from) f
            FULL JOIN (SELECT * FROM per WHERE snapshot = $to) t USING (model, setting, variant, kind, task)
            ORDER BY model, setting, variant, kind, task""", p).df()
        return out
    finally:
        if owned:
            con.close()


def format_diff(d: Diff) -> str:
    """A terminal report: counts of each kind of change, then each task's score per model where it
    moved (score x100)."""
    labels = {"added": "items added", "removed": "items removed", "question_changed": "question changed",
              "answer_changed": "answer changed", "choices_changed": "choices changed",
              "response_changed": "responses changed", "score_changed": "scores changed"}
    counts = d.counts()
    width = max(map(len, labels.values()))
    lines = [f"{d.benchmark}: {d.from_snapshot} -> {d.to_snapshot}", ""]
    lines += [f"  {labels[k]:<{width}}  {v:>7,}" for k, v in counts.items()]
    moved = d.task_deltas
    if len(moved):   # a score that moved, or a task scored on more or fewer items (or only on one side)
        n_from, n_to = moved["n_from"].fillna(-1), moved["n_to"].fillna(-1)
        moved = moved[(moved["delta"].fillna(0) != 0) | (n_from != n_to)]
    lines.append("")
    if not len(moved):
        lines.append("no task score moved")
        return "\n".join(lines)
    lines.append("task scores that moved (x100; n = scored items)")
    body = zip(moved["model"], moved["setting"], moved["variant"], moved["kind"], moved["task"],
               [_pct(s, n) for s, n in zip(moved["score_from"], moved["n_from"])],
               [_pct(s, n) for s, n in zip(moved["score_to"], moved["n_to"])],
               [("" if pd.isna(x) else f"{100 * x:+.1f}") for x in moved["delta"]])
    lines.append(text_table(["model", "setting", "variant", "kind", "task", "from", "to", "delta"], list(body),
                            align="lllll"))
    return "\n".join(lines)


def _pct(score, n) -> str:
    return "-" if pd.isna(score) else f"{100 * score:.1f} ({int(n)})"


def diff_command(benchmark: str, from_v: str, to_v: str) -> int:
    """`wenheng diff <benchmark> --from V1 --to V2`: prints the diff; an unknown version or a
    warehouse without history is one line on stderr and exit code 2."""
    from pipeline import paths
    from pipeline.benchmarks import UnknownBenchmark, card

    try:
        card(benchmark)
        with _connect(paths.warehouse_file())[0] as con:
            print(format_diff(diff(con, benchmark, from_v, to_v)))
    except (UnknownVersion, UnknownBenchmark, FileNotFoundError) as exc:
        print(f"wenheng: {exc}", file=sys.stderr)
        return 2
    except duckdb.CatalogException:
        print(f"wenheng: the warehouse at {paths.warehouse_file()} has no history tables; run `wenheng run` "
              "to rebuild it", file=sys.stderr)
        return 2
    return 0
