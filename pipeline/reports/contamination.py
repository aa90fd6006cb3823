"""contamination.html: contamination against the user's own corpora (pipeline/contamination), from
the same numbers as `wenheng contamination report` (pipeline/contamination/tables.py): the rates
per benchmark, task and field, the input-share histogram, example items on both sides of the
threshold with their evidence, and every paper-table row on all items vs the corpus's clean items
(n and intervals). Written only when the warehouse holds a scan; all text is escaped by the
template (autoescape)."""

from __future__ import annotations

from typing import Any

import duckdb

from pipeline.contamination import tables
from pipeline.contamination.tables import CorpusReport, corpus_reports

GROUP_KEYS = ("benchmark", "split", "setting", "variant")


def pages(con: duckdb.DuckDBPyConnection, benchmarks: list[str] | None = None,
          models: list[str] | None = None) -> list[dict[str, Any]]:
    """One entry per scanned corpus, ready for contamination.html.j2; none when no corpus was
    scanned. `benchmarks` / `models` narrow it as they narrow the rest of the report."""
    return [_corpus(r, benchmarks, models) for r in corpus_reports(con)]


def _keep(row: dict[str, Any], benchmarks: list[str] | None, models: list[str] | None) -> bool:
    """A row of the benchmarks (and, where it has a model, of the models) the report covers."""
    if benchmarks and row["benchmark"] not in benchmarks:
        return False
    return not models or "model" not in row or row["model"] in models


def _corpus(r: CorpusReport, benchmarks: list[str] | None, models: list[str] | None) -> dict[str, Any]:
    def kept(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [x for x in rows if _keep(x, benchmarks, models)]

    rates = []
    for b in kept(r.benchmarks):
        rates += [b, *(t for t in kept(r.tasks) if t["benchmark"] == b["benchmark"])]
    top = max(r.histogram.values(), default=0) or 1
    effect = kept(r.effect)
    return {
        "name": r.corpus, "version": r.version or "?", "ngram": r.ngram, "threshold": tables.share(r.threshold),
        "facts": [("items", f"{r.items:,}"), ("checked", f"{r.checked:,}"), ("too short to check", f"{r.too_short:,}"),
                  ("contaminated", f"{r.contaminated:,} ({tables.percent(r.rate)} of those checked)"),
                  ("corpus files with evidence", f"{r.files_with_evidence:,}"),
                  ("corpus files quarantined", f"{len(r.quarantined):,}"),
                  *_reading_facts(r.reading)],
        "quarantined": r.quarantined,
        "rates": [{"benchmark": x["benchmark"], "task": x["task"], "total": x["task"] == "(all)",
                   "cells": [f"{x['n_items']:,}", f"{x['n_checked']:,}", f"{x['n_too_short']:,}",
                             f"{x['n_contaminated']:,}", tables.percent(x["rate"]), f"{x['n_item_with_answer']:,}",
                             f"{x['n_item']:,}", f"{x['n_source_only']:,}", tables.percent(x["source_only_rate"]),
                             tables.share(x["mean_specific_share"])]} for x in rates],
        "fields": [{"benchmark": f["benchmark"], "task": f["task"], "field": f["field"], "total": f["task"] == "(all)",
                    "cells": [f"{f['n_with_ngrams']:,}", f"{f['n_flagged']:,}", tables.percent(f["rate"]),
                              tables.share(f["mean_share"]), tables.share(f["median_share"]),
                              f"{f['n_share_ge_020']:,}"]} for f in kept(r.fields)],
        "histogram": [{"label": label, "n": f"{n:,}", "width": round(100 * n / top, 1)}
                      for label, n in r.histogram.items()],
        "examples": [("Contaminated (item, item with answer): the highest specific shares", _examples(r.flagged)),
                     ("Source only (the corpus quotes the item's passage): the highest source shares",
                      _examples(r.source_only)),
                     ("Clean, with some of the item's own n-grams: the highest specific shares",
                      _examples(r.not_flagged))],
        "headline": _effect_rows([x for x in effect if x["headline"]]),
        "groups": _effect_groups(effect),
    }


def _reading_facts(reading: dict[str, Any]) -> list[tuple[str, str]]:
    if not reading:
        return []
    first = f" (first: {tables.snippet(reading['first_error'], 160)})" if reading.get("first_error") else ""
    return [("documents read", f"{reading['documents']:,} from {reading['files']:,} files"),
            ("bad lines skipped", f"{reading['bad_lines']:,}{first}"),
            ("empty files", f"{reading['empty_files']:,}"), ("invalid UTF-8 sequences", f"{reading['invalid_utf8']:,}")]


def _examples(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"item": e["item_id"], "input": tables.share(e["specific_share"]), "label": tables.share(e["source_share"]),
             "longest": f"{e['longest'] or 0:,}", "field": e["field"], "doc": e["doc"] or "?",
             "snippet": tables.snippet(e["snippet"], 120)} for e in rows]


def _cell(value: Any, low: Any, high: Any, n_scored: Any, n_items: Any) -> dict[str, Any]:
    return {"value": tables.score(value), "ci": "" if low is None else f"[{tables.score(low)}, {tables.score(high)}]",
            "n": f"n {int(n_scored or 0):,}/{int(n_items or 0):,}"}


def _effect_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"benchmark": x["benchmark"], "table": x["title"] or x["table_name"], "row": x["row_label"],
             "metric": x["metric"], "model": x["model"], "split": x["split"] or "", "setting": x["setting"] or "",
             "variant": x["variant"] or "",
             "all": _cell(x["score_all"], x["ci_low_all"], x["ci_high_all"], x["n_scored_all"], x["n_items_all"]),
             "clean": _cell(x["score_clean"], x["ci_low_clean"], x["ci_high_clean"], x["n_scored_clean"],
                            x["n_items_clean"]),
             "delta": tables.delta(x["delta"])} for x in rows]


def _effect_groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row, per benchmark x run setting."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for x in rows:
        groups.setdefault(tuple(x[k] for k in GROUP_KEYS), []).append(x)
    return [{**dict(zip(GROUP_KEYS, key)), "rows": _effect_rows(part)} for key, part in groups.items()]
