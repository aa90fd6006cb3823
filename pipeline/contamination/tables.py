"""What the warehouse says about contamination against a user's corpora, read back for people:
`wenheng contamination report` (plain text, `report_text`) and the report's contamination.html
(pipeline/reports, from `corpus_reports`).

Read from a read-only connection to the warehouse: `corpus_overlap` and `corpus_quarantine`, the
views of sql/50_corpus_contamination.sql (`corpus_contamination`, `corpus_contamination_by_field`)
and `contamination_effect` (each paper-table row on all items and on the items the corpus does not
contaminate; pipeline/warehouse/). A warehouse built before these tables existed reads as one
in which no corpus was scanned.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipeline.texttable import table

EXAMPLES = 3            # example items shown on each side of the threshold
SNIPPET = 40            # characters of an evidence snippet shown
NO_CORPUS = "No corpus has been scanned: run `wenheng contamination scan` first."
BINS = 10               # the share histogram: tenths


@dataclass
class CorpusReport:
    """One corpus's numbers, as the text report and the HTML page show them."""
    corpus: str
    version: str | None
    ngram: int | None
    threshold: float | None
    items: int
    checked: int
    too_short: int
    contaminated: int
    files_with_evidence: int
    quarantined: list[dict[str, Any]]             # path, reason
    reading: dict[str, Any]                       # corpus_reading's row: documents, bad lines, empty files
    benchmarks: list[dict[str, Any]]              # corpus_contamination rows, task '(all)'
    tasks: list[dict[str, Any]]                   # ... and its task rows
    fields: list[dict[str, Any]]                  # corpus_contamination_by_field rows (task rows included)
    histogram: dict[str, int]                     # specific share per tenth, and 'no n-gram'
    flagged: list[dict[str, Any]] = field(default_factory=list)       # examples: contaminated
    source_only: list[dict[str, Any]] = field(default_factory=list)   # ... source_only
    not_flagged: list[dict[str, Any]] = field(default_factory=list)   # ... clean, with some specific hits
    effect: list[dict[str, Any]] = field(default_factory=list)        # contamination_effect rows

    @property
    def rate(self) -> float | None:
        return self.contaminated / self.checked if self.checked else None

    @property
    def headline(self) -> list[dict[str, Any]]:
        return [r for r in self.effect if r["headline"]]


def _has(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                       [name]).fetchone()[0] > 0


def _dicts(con: duckdb.DuckDBPyConnection, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cursor = con.execute(query, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def corpus_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The corpora whose scan is in the warehouse, by name."""
    if not _has(con, "corpus_overlap"):
        return []
    return [name for (name,) in con.execute("SELECT DISTINCT corpus FROM corpus_overlap ORDER BY 1").fetchall()]


# Examples of one level: the evidence of the item's own n-grams (of the passage for source_only).
_EXAMPLES_SQL = f"""
SELECT item_id, benchmark, task, level, specific_share, source_share,
       CASE WHEN level = 'source_only' THEN 'source' ELSE 'specific' END AS field,
       CASE WHEN level = 'source_only' THEN source_longest ELSE specific_longest END AS longest,
       coalesce(answer_doc, CASE WHEN level = 'source_only' THEN source_doc ELSE specific_doc END) AS doc,
       CASE WHEN level = 'source_only' THEN source_snippet ELSE specific_snippet END AS snippet,
       CASE WHEN level = 'source_only' THEN source_share ELSE specific_share END AS share
FROM corpus_overlap
WHERE corpus = ? AND list_contains(?, level) AND (level <> 'clean' OR specific_matched > 0)
ORDER BY share DESC NULLS LAST, item_id
LIMIT {EXAMPLES}
"""


def corpus_report(con: duckdb.DuckDBPyConnection, corpus: str) -> CorpusReport:
    """Everything shown about one corpus."""
    head = con.execute("""SELECT any_value(corpus_version), any_value(ngram), any_value(threshold), count(*),
                                 count(*) FILTER (WHERE status = 'checked'),
                                 count(*) FILTER (WHERE status = 'too_short'), count(*) FILTER (WHERE contaminated)
                          FROM corpus_overlap WHERE corpus = ?""", [corpus]).fetchone()
    evidence = con.execute("""SELECT count(DISTINCT f) FROM (SELECT input_file AS f FROM corpus_overlap WHERE corpus = ?
                              UNION ALL SELECT label_file FROM corpus_overlap WHERE corpus = ?) WHERE f IS NOT NULL""",
                           [corpus, corpus]).fetchone()[0]
    quarantined = (_dicts(con, "SELECT path, reason FROM corpus_quarantine WHERE corpus = ? ORDER BY path", [corpus])
                   if _has(con, "corpus_quarantine") else [])
    read = (_dicts(con, "SELECT * FROM corpus_reading WHERE corpus = ?", [corpus]) if _has(con, "corpus_reading")
            else [])
    rates = _dicts(con, "SELECT * FROM corpus_contamination WHERE corpus = ? "
                        "ORDER BY benchmark, task <> '(all)', task", [corpus])
    fields = _dicts(con, "SELECT * FROM corpus_contamination_by_field WHERE corpus = ? "
                         "ORDER BY benchmark, task <> '(all)', task, field", [corpus])
    shares = con.execute(f"""SELECT CASE WHEN specific_share IS NULL THEN -1
                                      ELSE least(floor(specific_share * {BINS}), {BINS - 1}) END AS bin, count(*)
                             FROM corpus_overlap WHERE corpus = ? GROUP BY 1""", [corpus]).fetchall()
    histogram = {_bin_label(b): 0 for b in range(BINS)} | {"no n-gram": 0}
    for b, n in shares:
        histogram["no n-gram" if b < 0 else _bin_label(int(b))] += n
    effect = (_dicts(con, "SELECT * FROM contamination_effect WHERE corpus = ? ORDER BY benchmark, split, setting, "
                          "variant, table_name, row_order, metric, model", [corpus])
              if _has(con, "contamination_effect") else [])
    return CorpusReport(
        corpus=corpus, version=head[0], ngram=head[1], threshold=head[2], items=head[3], checked=head[4],
        too_short=head[5], contaminated=head[6], files_with_evidence=evidence, quarantined=quarantined,
        reading=read[0] if read else {},
        benchmarks=[r for r in rates if r["task"] == "(all)"], tasks=[r for r in rates if r["task"] != "(all)"],
        fields=fields, histogram=histogram,
        flagged=_dicts(con, _EXAMPLES_SQL, [corpus, ["item_with_answer", "item"]]),
        source_only=_dicts(con, _EXAMPLES_SQL, [corpus, ["source_only"]]),
        not_flagged=_dicts(con, _EXAMPLES_SQL, [corpus, ["clean"]]),
        effect=effect)


def rows_report(overlap: Any, corpus: str) -> CorpusReport:
    """`corpus_report` of one scan's rows (a DataFrame of corpus_overlap) before any warehouse holds
    them: the warehouse's own views (sql/50_corpus_contamination.sql) over an in-memory table, so
    the scan's metadata and the warehouse count the levels alike."""
    from pipeline.paths import SQL_DIR

    with duckdb.connect() as con:
        con.register("corpus_overlap", overlap)
        con.execute((SQL_DIR / "50_corpus_contamination.sql").read_text(encoding="utf-8"))
        return corpus_report(con, corpus)


def corpus_reports(con: duckdb.DuckDBPyConnection, corpus: str | None = None) -> list[CorpusReport]:
    """Every scanned corpus's report (or the one named; none when it was not scanned)."""
    return [corpus_report(con, name) for name in corpus_names(con) if corpus is None or name == corpus]


def _bin_label(b: int) -> str:
    """A tenth's label: 0.0-0.1, ..., 0.9-1.0."""
    return f"{b / BINS:.1f}-{(b + 1) / BINS:.1f}"


# ---- plain text ------------------------------------------------------------------------------

def percent(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def share(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def score(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def score_cell(value: float | None, low: float | None, high: float | None, n: int | None) -> str:
    """A paper-table number: score x100 [95% interval] n items."""
    interval = "" if low is None else f" [{score(low)}, {score(high)}]"
    return f"{score(value)}{interval} n={n or 0:,}"


def delta(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1f}"


def snippet(text: str | None, limit: int = SNIPPET) -> str:
    """One line of an evidence snippet: whitespace runs as one space, control characters dropped."""
    if not text:
        return ""
    flat = " ".join("".join(c if unicodedata.category(c)[0] != "C" else " " for c in text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _section(lines: list[str], title: str, body: str) -> None:
    lines += ["", f"  {title}", body]


def corpus_text(r: CorpusReport) -> str:
    threshold = share(r.threshold)
    lines = [f"corpus {r.corpus} (version {r.version or '?'}): {r.ngram}-character n-grams, the benchmarks' template "
             f"wording set aside; an item is contaminated (level item) when one document holds a share >= {threshold} "
             "of its own n-grams, or (item with answer) its question and its answer together; a corpus that holds "
             "only the passage an item quotes is source only, not contaminated",
             f"  items {r.items:,}: checked {r.checked:,}, too short to check {r.too_short:,}, contaminated "
             f"{r.contaminated:,} ({percent(r.rate)} of those checked)",
             f"  corpus files: {r.files_with_evidence:,} with evidence, {len(r.quarantined):,} quarantined (not read)",
             *([reading_line(r.reading)] if r.reading else [])]
    for q in r.quarantined[:10]:
        lines.append(f"    quarantined {q['path']}: {snippet(q['reason'], 200)}")
    if len(r.quarantined) > 10:
        lines.append(f"    ... and {len(r.quarantined) - 10:,} more (table corpus_quarantine)")

    contaminated_tasks = {(t["benchmark"], t["task"]) for t in r.tasks if t["n_contaminated"]}
    rate_rows = []
    for b in r.benchmarks:
        rate_rows += [b] + [t for t in r.tasks if t["benchmark"] == b["benchmark"]
                            and (t["benchmark"], t["task"]) in contaminated_tasks]
    _section(lines, "levels per benchmark (and per task, for tasks with a contaminated item)", table(
        ["benchmark", "task", "items", "checked", "too short", "contaminated", "rate", "with answer", "item",
         "source only", "source-only rate"],
        [[x["benchmark"], x["task"], f"{x['n_items']:,}", f"{x['n_checked']:,}", f"{x['n_too_short']:,}",
          f"{x['n_contaminated']:,}", percent(x["rate"]), f"{x['n_item_with_answer']:,}", f"{x['n_item']:,}",
          f"{x['n_source_only']:,}", percent(x["source_only_rate"])] for x in rate_rows], align="ll"))

    per_field = [f for f in r.fields if f["task"] == "(all)"]
    _section(lines, "the item's own n-grams per field: input (context, question, options) vs label (gold, "
                    "references); flagged: one document holds the threshold share", table(
        ["benchmark", "field", "with n-grams", "flagged", "rate", "mean share", "median share", "share >= 0.2"],
        [[f["benchmark"], f["field"], f"{f['n_with_ngrams']:,}", f"{f['n_flagged']:,}", percent(f["rate"]),
          share(f["mean_share"]), share(f["median_share"]), f"{f['n_share_ge_020']:,}"] for f in per_field],
        align="ll"))

    top = max(r.histogram.values(), default=0) or 1
    _section(lines, "specific share histogram (items per tenth of their own n-grams found)", table(
        ["specific share", "items", ""],
        [[label, f"{n:,}", "#" * (max(1, round(40 * n / top)) if n else 0)] for label, n in r.histogram.items()],
        align="lrl"))

    _example_sections(lines, r)
    headline = r.headline
    body = table(["benchmark", "table", "row", "model", "split", "setting", "variant", "all items", "clean items",
                  "delta"],
                 [[h["benchmark"], h["table_name"], h["row_label"], h["model"], h["split"] or "", h["setting"] or "",
                   h["variant"] or "", score_cell(h["score_all"], h["ci_low_all"], h["ci_high_all"], h["n_items_all"]),
                   score_cell(h["score_clean"], h["ci_low_clean"], h["ci_high_clean"], h["n_items_clean"]),
                   delta(h["delta"])] for h in headline], align="lllllll") \
        if headline else "  (no paper-table rows: run `wenheng run` to evaluate models)"
    _section(lines, f"headline paper-table rows, all items vs clean (the items {r.corpus} does not contaminate): "
                    "score x100 [95% interval] n items", body)
    lines += ["", f"  every row: SELECT * FROM contamination_effect WHERE corpus = '{r.corpus}' (wenheng query)"]
    return "\n".join(lines)


def _example_sections(lines: list[str], r: CorpusReport) -> None:
    """Examples of each level, with their evidence."""
    for title, examples in [("contaminated (item, item with answer): the highest specific shares", r.flagged),
                            ("source only (the corpus quotes the item's passage): the highest source shares",
                             r.source_only),
                            ("clean, with some of the item's own n-grams: the highest specific shares",
                             r.not_flagged)]:
        body = table(["item", "level", "specific share", "source share", "longest run", "evidence"],
                     [[e["item_id"], e["level"], _share(e["specific_share"], r.threshold),
                       _share(e["source_share"], r.threshold), f"{e['longest'] or 0:,}",
                       f"{e['field']} in {e['doc'] or '?'}: {snippet(e['snippet'])}"] for e in examples],
                     align="llrrrl") if examples else "  (none)"
        _section(lines, title, body)


def reading_line(reading: dict[str, Any]) -> str:
    """What the corpus's files held, on one line."""
    line = (f"  read: {reading['documents']:,} documents from {reading['files']:,} files, "
            f"{reading['bad_lines']:,} bad lines skipped, {reading['empty_files']:,} empty files, "
            f"{reading['invalid_utf8']:,} invalid UTF-8 sequences")
    return line + (f" (first bad line: {snippet(reading['first_error'], 160)})" if reading.get("first_error") else "")


def _share(value: float | None, threshold: float | None) -> str:
    """A share that never reads as the threshold when it is below it (0.4996 is not 0.500)."""
    from pipeline.contamination.shares import share_text

    return share(value) if value is None or threshold is None else share_text(value, threshold)


def report_text(con: duckdb.DuckDBPyConnection, corpus: str | None = None) -> str:
    """What `wenheng contamination report [--corpus NAME]` prints: each scanned corpus (or the one
    named), or one line saying that no corpus was scanned."""
    reports = corpus_reports(con, corpus)
    if not reports:
        return NO_CORPUS if corpus is None else f"No scan of corpus {corpus!r} in the warehouse: " \
                                                 "run `wenheng contamination scan` first."
    return "\n\n".join(corpus_text(r) for r in reports)
