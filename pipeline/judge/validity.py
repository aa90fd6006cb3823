"""Whether a judge can tell a right answer from a wrong one, per judged task: known-answer controls.

Consistency (pipeline/judge/reliability.py) is not validity: a judge that accepts everything is
perfectly consistent. So every run with a judge also asks it, for a seeded sample of each judged
task's items (up to `validity.sample_per_task`):
- a **positive** per item: its own gold, judged as if it were the model's answer;
- a **negative** per item: another item's gold from the same task (a different one), an off-topic
  answer, or an empty one, in turn (another gold first: the hardest for a judge that only checks
  the form of an answer).

Controls are ordinary responses of a pseudo-model (`control:<kind>`) through the same engine,
prompts and response cache as the real judgements (pipeline/judge/run.py), so a positive is
served from the cache where the oracle's answer was judged already, and a second partition of
the benchmark sends nothing. No baseline model needs to be configured.

Per task (and `(all)`): the accept rate (score >= 0.5) on the positives and on the negatives,
each with its Wilson 95% interval, and their difference, Youden's J, with Newcombe's interval
for a difference of two proportions. A task whose J is below `min_j`, or whose interval reaches
0, is **uninformative**: its judged numbers are marked in every view."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.judge.prompts import Judged, PromptSet
from pipeline.schema import stable_hash

if TYPE_CHECKING:   # the configuration is read above the judge, which only takes its entries
    from pipeline.config import ValiditySpec

POSITIVE, OTHER_GOLD, OFF_TOPIC, EMPTY = "gold", "other_gold", "off_topic", "empty"
NEGATIVES = (OTHER_GOLD, OFF_TOPIC, OTHER_GOLD, EMPTY)   # the k-th sampled item's negative: NEGATIVES[k % 4]
OFF_TOPIC_ANSWER = "今天天气晴朗，我们一起去公园散步，看看湖边的柳树。"   # answers nothing a benchmark asks
CONTROL = "control:"   # the pseudo-model's name: control:<kind>
ACCEPTED = 0.5   # a verdict's score from which the answer counts as accepted
ALL = "(all)"
Z95 = 1.959963984540054


def controls(items: Iterable[Mapping[str, Any]], prompts: PromptSet, spec: ValiditySpec,
             benchmark: str) -> list[dict[str, Any]]:
    """The control responses (rows shaped like schema.RESPONSES' key + text) for the items the
    card routes to the judge and that have a gold: per task, the first `sample_per_task` by a
    seeded hash (the same items on every run, whatever the row order), each with its gold and
    with one negative."""
    by_task: dict[str, list[tuple[str, Mapping[str, Any]]]] = defaultdict(list)
    for item in items:
        gold = item.get("answer")
        if gold and isinstance(prompts.prepare(item, gold), Judged):
            by_task[item["task"]].append((stable_hash([spec.seed, item["item_id"]]), item))
    out: list[dict[str, Any]] = []
    for task in sorted(by_task):
        ranked = [item for _, item in sorted(by_task[task], key=lambda pair: pair[0])]
        for k, item in enumerate(ranked[:spec.sample_per_task]):
            out.append(_control(benchmark, item, POSITIVE, item["answer"]))
            kind = NEGATIVES[k % len(NEGATIVES)]
            other = next((o["answer"] for o in [*ranked[k + 1:], *ranked[:k]]
                          if o["answer"].strip() != item["answer"].strip()), None)
            if kind == OTHER_GOLD and other is None:   # every gold of the task is this one
                kind = OFF_TOPIC
            text = {OTHER_GOLD: other, OFF_TOPIC: OFF_TOPIC_ANSWER, EMPTY: ""}[kind]
            out.append(_control(benchmark, item, kind, text))
    return out


def _control(benchmark: str, item: Mapping[str, Any], kind: str, text: str) -> dict[str, Any]:
    return {"item_id": item["item_id"], "benchmark": benchmark, "variant": "original", "setting": "control",
            "model": CONTROL + kind, "text": text, "error": None}


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    """Wilson's 95% score interval for k successes in n trials; (None, None) for none."""
    if n == 0:
        return None, None
    p = k / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float | None, float | None]:
    """Newcombe's 95% interval (his method 10, from the two Wilson intervals) for p1 - p2."""
    if not n1 or not n2:
        return None, None
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return max(-1.0, low), min(1.0, high)


def rows(benchmark: str, model: str, judged: Sequence[Mapping[str, Any]], task_of: Mapping[str, str],
         spec: ValiditySpec, judge_model: str | None, prompt_set: str | None) -> list[dict[str, Any]]:
    """schema.JUDGE_VALIDITY rows from the controls' judgements: one per task, then `(all)`."""
    tasks = sorted({task_of[j["item_id"]] for j in judged})
    return [_row(benchmark, model, task, [j for j in judged if task == ALL or task_of[j["item_id"]] == task],
                 spec, judge_model, prompt_set) for task in ([*tasks, ALL] if tasks else [])]


def _row(benchmark: str, model: str, task: str, judged: Sequence[Mapping[str, Any]], spec: ValiditySpec,
         judge_model: str | None, prompt_set: str | None) -> dict[str, Any]:
    read = [j for j in judged if j["score"] is not None]
    positives = [j for j in read if j["model"] == CONTROL + POSITIVE]
    negatives = [j for j in read if j["model"] != CONTROL + POSITIVE]
    k_pos = sum(j["score"] >= ACCEPTED for j in positives)
    k_neg = sum(j["score"] >= ACCEPTED for j in negatives)
    n_pos, n_neg = len(positives), len(negatives)
    pos_low, pos_high = wilson(k_pos, n_pos)
    neg_low, neg_high = wilson(k_neg, n_neg)
    j_low, j_high = newcombe(k_pos, n_pos, k_neg, n_neg)
    youden = k_pos / n_pos - k_neg / n_neg if n_pos and n_neg else None
    informative = youden is not None and youden >= spec.min_j and j_low > 0
    why = None if informative else (
        "no readable verdict on a positive and a negative" if youden is None else
        f"Youden's J {youden:.2f} [{j_low:.2f}, {j_high:.2f}]: "
        + (f"below {spec.min_j:g} (the judge cannot tell the gold from a wrong answer)" if youden < spec.min_j else
           "its interval reaches 0 (too few controls to show that the judge tells the gold from a wrong answer)"))
    return {"benchmark": benchmark, "model": model, "task": task, "judge_model": judge_model, "prompt_set": prompt_set,
            "n_positive": n_pos, "accepted_positive": k_pos, "positive_rate": k_pos / n_pos if n_pos else None,
            "positive_low": pos_low, "positive_high": pos_high,
            "n_negative": n_neg, "accepted_negative": k_neg, "negative_rate": k_neg / n_neg if n_neg else None,
            "negative_low": neg_low, "negative_high": neg_high, "unreadable": len(judged) - len(read),
            "youden_j": youden, "j_low": j_low, "j_high": j_high, "informative": informative,
            "note": why}


MARKDOWN_COLUMNS = (("task", "task"), ("n_positive", "positives"), ("positive_rate", "accepted"),
                    ("n_negative", "negatives"), ("negative_rate", "accepted"), ("youden_j", "J"),
                    ("j_low", "J low"), ("j_high", "J high"), ("informative", "informative"))


def markdown(table: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a Markdown table (the asset's metadata in the UI)."""
    if not table:
        return ("No judge configured for this benchmark (models.yaml `judges:`), or no controls "
                "(validity.sample_per_task: 0).")
    first = table[0]
    head = (f"Judge `{first['judge_model']}` ({first['prompt_set']}) on known answers: each sampled item's gold "
            "(positive) and another item's gold, an off-topic or an empty answer (negative); J = accepted "
            "positives - accepted negatives (Youden's J), 95% intervals.\n\n")
    lines = ["| " + " | ".join(title for _, title in MARKDOWN_COLUMNS) + " |", "|" + "---|" * len(MARKDOWN_COLUMNS)]
    for row in table:
        lines.append("| " + " | ".join(_cell(row[name]) for name, _ in MARKDOWN_COLUMNS) + " |")
    return head + "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


ORACLE_FLOOR = 0.95   # the oracle answers the gold: a judge that gives it less rejects right answers


def baseline_checks(judged_means: Iterable[tuple[str, str, str, str, float]],
                    measured: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> list[str]:
    """One line per judged task whose baselines contradict the judge: the oracle (the golds)
    scored below ORACLE_FLOOR, or the random baseline above the accept rate of the task's
    negative controls (the top of its interval; chance where none was measured).
    `judged_means`: (benchmark, task, judge model, strategy, mean judge score);
    `measured`: (benchmark, task, judge model) -> its judge_validity row."""
    lines = []
    for bench, task, judge, strategy, mean in sorted(judged_means):
        row = measured.get((bench, task, judge))
        if strategy == "oracle" and mean < ORACLE_FLOOR:
            lines.append(f"judge check: {bench}/{task}: judge {judge} gives the oracle (the golds) {100 * mean:.1f}, "
                         f"below {100 * ORACLE_FLOOR:.0f}: it rejects right answers")
        elif strategy == "random" and row is not None and row["negative_high"] is not None \
                and mean > row["negative_high"]:
            lines.append(f"judge check: {bench}/{task}: judge {judge} gives the random baseline {100 * mean:.1f}, "
                         f"above its wrong-answer controls' accept rate {100 * row['negative_rate']:.1f} "
                         f"[{100 * row['negative_low']:.1f}, {100 * row['negative_high']:.1f}]: "
                         "it accepts wrong answers")
    return lines
