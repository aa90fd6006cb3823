"""Rendering prompts from each benchmark card's protocol (pipeline/benchmarks/<name>/protocol.yaml):
data, not code branches."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pipeline.benchmarks import card
from pipeline.schema import OPTION_LETTERS, stable_hash


def protocol(benchmark: str) -> dict[str, Any]:
    return card(benchmark).protocol


def settings_for(benchmark: str, requested: Iterable[str] | None = None) -> list[str]:
    proto = protocol(benchmark)
    names = list(requested or proto["default_settings"])
    unknown = [n for n in names if n not in proto["settings"]]
    if unknown:
        raise ValueError(f"{benchmark}: unknown settings {unknown}; known: {sorted(proto['settings'])}")
    return names


def options_text(choices: list[str]) -> str:
    return "\n".join(f"{OPTION_LETTERS[i]}. {c}" for i, c in enumerate(choices))


def render(item: dict[str, Any], variant: dict[str, Any], setting: str,
           shots: list[dict[str, Any]] = ()) -> tuple[list[dict[str, str]], int | None]:
    """(chat messages, max_tokens) for one item variant under one setting.

    `item` gives task and metadata, `variant` the text in the chosen script; `shots` are
    candidate few-shot examples (already in the same variant), used in order."""
    proto = protocol(item["benchmark"])
    spec = proto["settings"][setting]
    meta = item["metadata"]
    fields = {
        "question": variant.get("question") or "",
        "context": variant.get("context") or "",
        "options": options_text(list(variant.get("choices") or [])),
        "topic": meta.get("topic_zh", item.get("domain") or ""),
        "examples": "",
    }
    template = spec.get("template") or _pick(spec["templates"], item)
    want = min(spec.get("shots", 0), proto.get("shots_per_task", {}).get(item["task"], spec.get("shots", 0)))
    examples = [_example(spec["example"], n + 1, s) for n, s in enumerate(shots[:want])] if want else []
    while True:
        fields["examples"] = "".join(examples)
        text = template.format(**fields)
        if not examples or len(text) <= proto.get("max_prompt_chars", 10**9):
            break
        examples.pop()  # fewer shots rather than an overflowing context
    max_tokens = spec.get("max_tokens_per_format", {}).get(item["format"], spec.get("max_tokens", 256))
    # null: no budget of the benchmark's own (AC-EVAL sets none): up to the model's context
    return [{"role": "user", "content": text}], None if max_tokens is None else int(max_tokens)


def _pick(templates: dict[str, str], item: dict[str, Any]) -> str:
    for key in (item["task"], item["format"], "default"):
        if key in templates:
            return templates[key]
    raise KeyError(f"no prompt template for task {item['task']!r} / format {item['format']!r}")


def _example(template: str, n: int, shot: dict[str, Any]) -> str:
    return template.format(n=n, question=shot.get("question") or "", options=options_text(list(shot["choices"])),
                           answer=shot.get("answer") or "", explanation=shot["metadata"].get("explanation", ""))


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return stable_hash(messages)


def build_prompt_rows(items: list[dict[str, Any]], variants: list[dict[str, Any]],
                      evaluate: Mapping[str, Collection[str]] | None = None) -> list[dict[str, Any]]:
    """Every evaluated item x variant x protocol setting of its benchmark -> one prompt row.

    Only items of the splits a benchmark evaluates get prompts (`evaluate`: benchmark -> splits;
    default: each card's `eval_splits`); the other splits stay in the items table for dedup and
    contamination, and the card's `exemplar_splits` give the few-shot pools (in file order). An
    exemplar item that is itself evaluated (AC-EVAL dev, when asked) never sees itself: its shots
    are the other exemplars of its task, then of its task group (AC-EVAL's level)."""
    by_id = {it["item_id"]: it for it in items}
    splits = {b: set(s) for b, s in (evaluate or {}).items()}
    by_task: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    by_group: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for v in variants:
        item = by_id[v["item_id"]]
        if item["split"] in card(item["benchmark"]).exemplar_splits and item.get("answer"):
            shot = {**v, "task": item["task"], "metadata": item["metadata"],
                    "_order": (item.get("source_file") or "", _locator_order(item["source_locator"]))}
            by_task.setdefault((item["benchmark"], item["task"], v["variant"]), []).append(shot)
            by_group.setdefault((item["benchmark"], item["task_group"], v["variant"]), []).append(shot)
    for pool in [*by_task.values(), *by_group.values()]:
        pool.sort(key=lambda s: s["_order"])
    rows = []
    for v in variants:
        item = by_id[v["item_id"]]
        bench = card(item["benchmark"])
        if item["split"] not in splits.get(bench.name, bench.eval_splits):
            continue
        proto = protocol(bench.name)
        most = max((s.get("shots", 0) for s in proto["settings"].values()), default=0)
        pool = [s for s in by_task.get((bench.name, item["task"], v["variant"]), [])[:most + 1]
                if s["item_id"] != item["item_id"]][:most]
        if len(pool) < most and item["split"] in bench.exemplar_splits:
            pool += [s for s in by_group.get((bench.name, item["task_group"], v["variant"]), [])
                     if s["task"] != item["task"]][:most - len(pool)]
        for setting in proto["settings"]:
            messages, max_tokens = render(item, v, setting, pool)
            rows.append({"item_id": item["item_id"], "benchmark": item["benchmark"], "variant": v["variant"],
                         "setting": setting, "messages": messages,
                         "max_tokens": max_tokens, "prompt_hash": prompt_hash(messages)})
    return rows


def _locator_order(locator: str) -> tuple[int, str]:
    digits = "".join(ch for ch in str(locator) if ch.isdigit())
    return (int(digits) if digits else 0, str(locator))
