"""How far a judge can be trusted on one partition (benchmark x evaluated model), per task:

- repeat spread: a seeded sample of judged items (up to `sample_per_task` per task) is judged
  again k times at a temperature above 0; the spread of those scores, and their distance from
  the temperature-0 score (WenMind checked its judge the same way: 100 items, 3 passes);
- judge vs rule: on items with an exact answer (option letters, label words), which both the
  judge and a rule scored, the share of equal scores and Cohen's kappa;
- option-order swap: for pairwise or ordered judge prompts. WenMind's and Fùxì's judges grade
  one answer against a reference and never see the options in an order that could matter, so
  there are none: n/a, said in the table.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.schema import stable_hash

if TYPE_CHECKING:   # the configuration is read above the judge, which only takes its entries
    from pipeline.config import ReliabilitySpec

ALL = "(all)"
EXACT_RULES = ("option", "option_multi", "label")   # rule scorers that read an exact answer
SWAP_NOTE = "option-order swap: n/a (no pairwise or ordered judge prompts)"


def sample(judgements: Iterable[Mapping[str, Any]], task_of: Mapping[str, str],
           spec: ReliabilitySpec) -> list[Mapping[str, Any]]:
    """Up to `sample_per_task` judged items per task, picked by a seeded hash: the same items on
    every run (so their repeats come from the cache), independent of row order."""
    by_task: dict[str, list[tuple[str, Mapping[str, Any]]]] = defaultdict(list)
    for j in judgements:
        if j["score"] is None:
            continue
        rank = stable_hash([spec.seed, j["item_id"], j["variant"], j["setting"]])
        by_task[task_of[j["item_id"]]].append((rank, j))
    picked = []
    for task in sorted(by_task):
        picked += [j for _, j in sorted(by_task[task], key=lambda pair: pair[0])[:spec.sample_per_task]]
    return picked


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters' labels; None when it is undefined (no items, or both raters
    always give the same single label, so chance agreement is 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[label] * cb[label] for label in set(ca) | set(cb)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def rows(benchmark: str, model: str, judgements: list[Mapping[str, Any]], scores: list[Mapping[str, Any]],
         task_of: Mapping[str, str], repeats: Mapping[tuple, list[float | None]], spec: ReliabilitySpec,
         judge_model: str | None, prompt_set: str | None) -> list[dict[str, Any]]:
    """schema.JUDGE_RELIABILITY rows: one per task with judgements, then the partition's (all)."""
    rule = {_key(s): s for s in scores if (s.get("kind") or "rule") == "rule"}
    tasks = sorted({task_of[j["item_id"]] for j in judgements})
    out = []
    for task in [*tasks, ALL]:
        mine = [j for j in judgements if task == ALL or task_of[j["item_id"]] == task]
        out.append(_row(benchmark, model, task, mine, rule, repeats, spec, judge_model, prompt_set))
    return out


def _key(row: Mapping[str, Any]) -> tuple:
    return row["item_id"], row["variant"], row["setting"]


def _row(benchmark: str, model: str, task: str, judged: list[Mapping[str, Any]], rule: Mapping[tuple, Mapping],
         repeats: Mapping[tuple, list[float | None]], spec: ReliabilitySpec, judge_model: str | None,
         prompt_set: str | None) -> dict[str, Any]:
    scored = [j for j in judged if j["score"] is not None]
    sds, ranges, equal, mads = [], [], [], []
    for j in scored:
        again = [s for s in repeats.get(_key(j), []) if s is not None]
        if len(again) < 2:
            continue
        sds.append(statistics.pstdev(again))
        ranges.append(max(again) - min(again))
        equal.append(float(len(set(again)) == 1))
        mads.append(abs(statistics.fmean(again) - j["score"]))
    pairs = [(j["score"], rule[_key(j)]["score"]) for j in scored
             if _key(j) in rule and rule[_key(j)]["score"] is not None
             and str(rule[_key(j)]["scorer"]).split("@")[0] in EXACT_RULES]
    labels_a = [f"{a:g}" for a, _ in pairs]
    labels_b = [f"{b:g}" for _, b in pairs]
    notes = [SWAP_NOTE]
    if not pairs:
        notes.insert(0, "judge vs rule: n/a (no exact-answer items scored by both)")
    return {
        "benchmark": benchmark, "model": model, "task": task, "judge_model": judge_model, "prompt_set": prompt_set,
        "n_judged": len(judged), "n_scored": len(scored),
        "mean_score": statistics.fmean(j["score"] for j in scored) if scored else None,
        "repeats": spec.repeats, "repeat_temperature": spec.temperature, "repeat_items": len(sds),
        "repeat_sd": statistics.fmean(sds) if sds else None, "repeat_max_range": max(ranges) if ranges else None,
        "repeat_all_equal": statistics.fmean(equal) if equal else None,
        "repeat_mad": statistics.fmean(mads) if mads else None,
        "exact_items": len(pairs),
        "exact_accuracy": sum(a == b for a, b in zip(labels_a, labels_b, strict=True)) / len(pairs) if pairs else None,
        "exact_kappa": cohen_kappa(labels_a, labels_b), "swap_items": 0, "swap_consistency": None,
        "note": "; ".join(notes),
    }


MARKDOWN_COLUMNS = (("task", "task"), ("n_judged", "judged"), ("n_scored", "scored"), ("mean_score", "mean"),
                    ("repeat_items", "repeat n"), ("repeat_sd", "repeat sd"), ("repeat_max_range", "max range"),
                    ("repeat_all_equal", "all equal"), ("repeat_mad", "|repeat - t0|"),
                    ("exact_items", "exact n"), ("exact_accuracy", "judge=rule"), ("exact_kappa", "kappa"),
                    ("swap_consistency", "order swap"))


def markdown(table: list[Mapping[str, Any]]) -> str:
    """The rows as a Markdown table (the asset's metadata in the UI)."""
    if not table:
        return "No judge configured for this benchmark (models.yaml `judges:`)."
    first = table[0]
    head = (f"Judge `{first['judge_model']}` ({first['prompt_set']}); repeats: k={first['repeats']} at temperature "
            f"{first['repeat_temperature']:g}. Option-order swap: n/a (no pairwise or ordered judge prompts).\n\n")
    lines = ["| " + " | ".join(title for _, title in MARKDOWN_COLUMNS) + " |",
             "|" + "---|" * len(MARKDOWN_COLUMNS)]
    for row in table:
        lines.append("| " + " | ".join(_cell(row[name], name) for name, _ in MARKDOWN_COLUMNS) + " |")
    return head + "\n".join(lines)


def _cell(value: Any, name: str) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
