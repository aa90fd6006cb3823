"""What a row covers and who scored it: the official rows not asked (items a policy left out, rows
quarantined at ingestion, placed by the card's `quarantine:` layout), the card's notes on the
row's tasks, and whether the row can stand beside the paper's number."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from pipeline.aggregate.spec import QUARANTINED, CardTables


def _file_pattern(pattern: str | None) -> re.Pattern | None:
    if not pattern:
        return None
    parts = re.split(r"(\{split\}|\{task\}|\*)", pattern)
    regex = "".join({"{split}": "(?P<split>[^/]+?)", "{task}": "(?P<task>[^/]+?)", "*": "[^/]*"}.get(p, re.escape(p))
                    for p in parts)
    return re.compile(f"(?:^|/){regex}$")


def _raw_field(raw: Any, name: str | None) -> str | None:
    if not name or not isinstance(raw, dict):
        return None
    value = raw.get(name)
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) else None


def place_quarantine(layout: Mapping[str, Any], rows: Iterable[Mapping[str, Any]],
                     tasks: Collection[str]) -> list[dict[str, Any]]:
    """Each quarantined row (benchmark, source_file, source_locator, raw) with the split and task
    (and question group and part) a card's `quarantine:` layout places it in, and its unit id: one
    per row, or per merged group (`merge`). A task that is not one of `tasks` (the benchmark's
    own) is None, as is what the layout cannot tell; a row without a split counts nowhere.
    Ids repeated (a row quarantined twice) are kept once."""
    pattern = _file_pattern(layout.get("file"))
    merge = dict(layout.get("merge") or {})
    reads_raw = any(layout.get(k) for k in ("task", "group", "part")) or bool(merge)
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        source, locator = row.get("source_file") or "", row.get("source_locator") or ""
        match = pattern.search(source) if pattern else None
        found = match.groupdict() if match else {}
        raw = None
        if reads_raw and isinstance(row.get("raw"), str) and row["raw"].lstrip().startswith("{"):
            try:   # the JSON object first: a long row's excerpt has a line after it (sources/text.py)
                raw = json.JSONDecoder().raw_decode(row["raw"].lstrip())[0]
            except ValueError:
                raw = None
        split = found.get("split") or layout.get("split")
        task = found.get("task") or _raw_field(raw, layout.get("task"))
        task = task if task in tasks else None
        unit = f"quarantine:{source}:{locator}"
        key = _raw_field(raw, merge.get(task)) if task else None
        if key is not None:
            unit = f"quarantine:{split}/{task}/{key}"
        out.setdefault(unit, {"benchmark": row.get("benchmark"), "unit_id": unit, "source_file": source,
                              "source_locator": locator, "split": None if split is None else str(split),
                              "task": task, "group": _raw_field(raw, layout.get("group")),
                              "part": _raw_field(raw, layout.get("part"))})
    return list(out.values())


def left_out_notes(units: pd.DataFrame) -> list[str]:
    """What a row's official rows not asked were: items a policy left out (by reason) and rows
    quarantined at ingestion."""
    if "not_asked" not in units:
        return []
    reasons = [r for r in units["not_asked"] if isinstance(r, str)]
    policy = Counter(r for r in reasons if r != QUARANTINED)
    quarantined = len(reasons) - sum(policy.values())
    notes = []
    if policy:
        n = sum(policy.values())
        why = next(iter(policy)) if len(policy) == 1 else ", ".join(f"{c:,} {r}" for r, c in sorted(policy.items()))
        notes.append(f"{n:,} official row{'' if n == 1 else 's'} not asked: {why}")
    if quarantined:
        notes.append(f"{quarantined:,} row{'' if quarantined == 1 else 's'} quarantined at ingestion")
    return notes


def card_notes(tables: CardTables, units: pd.DataFrame) -> list[str]:
    """The card's notes on the tasks a row covers, in the card's task order."""
    if not tables.notes:
        return []
    present = set(units["task"].dropna())
    order = tables.row_order.get("task", [])
    notes = []
    for task in [t for t in order if t in present] + sorted(t for t in present if t not in order):
        text = tables.notes.get(task)
        if not text:
            continue
        if "{merged_rows}" in text:
            merged = units.loc[units["task"] == task, "merged_rows"] if "merged_rows" in units else pd.Series([])
            total = int(pd.to_numeric(merged, errors="coerce").fillna(0).sum())
            if not total:
                continue
            text = text.replace("{merged_rows}", f"{total:,}")
        notes.append(text)
    return notes


def _groupable(units: pd.DataFrame, column: str) -> pd.DataFrame:
    """The units a mean over `column`'s groups is taken over: a row not asked that the layout could
    not place (no value) counts in n_items, never as a group of its own."""
    if "not_asked" not in units:
        return units
    return units[units[column].notna() | units["not_asked"].isna()]


def provenance(units: pd.DataFrame) -> tuple[str | None, bool, str | None]:
    """Who scored a row's units, whether the row can stand beside the paper's number, and why not.

    `scored_by` lists the scorers of its scored units ("rules", "judge <model> (<prompt set>
    prompts)"). A row is not comparable when any of its units is one the paper scored with an LLM
    judge (`paper_judge`) and it was scored here by rules or by the bundled demo judge
    (`demo_judge`), or was not judged at all; the number stays, marked."""
    # columns, not the frame: filtering every column of a run's units is most of the cost
    scored = units["score"].notna()   # neither None nor nan
    scored_by = ", ".join(sorted({str(x) for x in units["scored_by"][scored] if x})) or None
    weak = uninformative_note(*validity_columns(units), scored.to_numpy())
    in_paper = units["paper_judge"].fillna(False).astype(bool)
    if not in_paper.any():
        return (scored_by, True, None) if weak is None else (scored_by, False, weak)
    by = units["scored_by"][in_paper].fillna("")
    judged = by.str.startswith("judge ")
    demo = judged & units["demo_judge"][in_paper].fillna(False).astype(bool)
    comparable, why = judge_verdict(judged, demo, int(scored.sum()), len(units))
    return scored_by, comparable and weak is None, "; ".join(n for n in (why, weak) if n) or None


def validity_columns(units: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """The units' judge validity (units.sql): uninformative (bool), task, J and its interval."""
    n = len(units)
    if "judge_uninformative" not in units:
        return np.zeros(n, dtype=bool), np.full(n, None), *(np.full(n, np.nan) for _ in range(3))
    bad = units["judge_uninformative"].fillna(False).astype(bool).to_numpy()
    return (bad, units["task"].to_numpy(),
            *(units[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in ("judge_j", "judge_j_low", "judge_j_high")))


def uninformative_note(bad: np.ndarray, tasks: np.ndarray, j: np.ndarray, low: np.ndarray, high: np.ndarray,
                       scored: np.ndarray) -> str | None:
    """The note of a row some of whose scored units were judged by a judge that cannot tell the
    gold from a wrong answer on their task (judge_validity), with how much of the row they are
    and each task's Youden's J; None when there are none."""
    bad = bad & scored
    if not bad.any():
        return None
    measured = sorted({(str(t), float(x), float(lo), float(hi)) for t, x, lo, hi in zip(tasks[bad], j[bad], low[bad],
                                                                                         high[bad])})
    listed = ", ".join(f"{t} J {x:.2f} [{lo:.2f}, {hi:.2f}]" for t, x, lo, hi in measured)
    return (f"uninformative judge: {int(bad.sum()):,} of its {int(scored.sum()):,} scored items were judged where "
            f"its known-answer controls do not show that it tells the gold from a wrong answer ({listed}; "
            "judge_validity)")


def judge_weakness(bad: np.ndarray, j: np.ndarray, scored: np.ndarray) -> dict[str, float | None]:
    """paper_tables' `uninformative_share` (of a row's scored items, those judged where the judge is
    uninformative) and `judge_j` (the highest Youden's J among their tasks): None where none are."""
    bad = bad & scored
    if not bad.any():
        return {"uninformative_share": None, "judge_j": None}
    measured = j[bad]
    top = float(np.nanmax(measured)) if np.isfinite(measured).any() else None
    return {"uninformative_share": round(float(bad.sum()) / float(scored.sum()), 9), "judge_j": top}


def judge_verdict(judged, demo, n_scored: int, n_units: int) -> tuple[bool, str | None]:
    """Whether a row the paper scores with its LLM judge stands beside the paper's number, and
    the note that says why not: `judged` and `demo` mark its paper-scored items (boolean arrays)."""
    if not judged.any():
        return False, (f"not comparable to the paper: its LLM-judged items have no judge here "
                       f"(rule-scored items only: {n_scored:,}/{n_units:,})")
    if demo.any():
        return False, "not comparable to the paper: judged by the bundled demo judge"
    if (~judged).any():
        return False, (f"not comparable to the paper: {int((~judged).sum()):,} of its "
                       f"{len(judged):,} LLM-judged items have no judge verdict")
    return True, None
