"""compare.html: every two models of the report on the same items: each headline paper row's
difference, its paired-bootstrap 95% interval and p-value (pipeline/compare.py, what `wenheng
compare A B --headline` prints). Written when the report has two models or more; with more than
MAX_MODELS models only the first MAX_MODELS (sorted) are paired, and the page says so."""

from __future__ import annotations

from typing import Any

import duckdb

from pipeline import compare as comparing

MAX_MODELS = 6   # 15 pairs; the headline tables are recomputed once per model, with bootstrap replicates


def pairs(con: duckdb.DuckDBPyConnection, models: list[str], benchmarks: list[str] | None) -> dict[str, Any]:
    """The page's data: one entry per pair of models (A before B, sorted) with its headline rows."""
    shown = sorted(models)[:MAX_MODELS]
    out = []
    for (a, b), frame in sorted(comparing.pairwise(con, shown, benchmarks, headline_only=True).items()):
        frame = frame[frame["headline"]]
        if frame.empty:
            continue
        out.append({"a": a, "b": b, "rows": [{
            "benchmark": r.benchmark, "table": r.title, "row": r.row_label, "metric": r.metric,
            "split": r.split or "", "setting": r.setting or "", "variant": r.variant or "",
            "a": comparing._num(r.score_a), "b": comparing._num(r.score_b),
            "difference": comparing.difference_text(r),
            "ci": "" if r.ci_low is None else f"[{comparing._signed(r.ci_low)}, {comparing._signed(r.ci_high)}]",
            "p": comparing._p(r.p_value, r.replicates), "n": comparing.scored_text(r),
            "significant": r.ci_low is not None and (r.ci_low > 0 or r.ci_high < 0)}
            for r in frame.itertuples(index=False)]})
    return {"pairs": out, "left_out": sorted(models)[MAX_MODELS:]}
