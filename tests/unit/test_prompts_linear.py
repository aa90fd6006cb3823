"""build_prompt_rows builds each few-shot pool once and gives, byte for byte, the rows of the
per-item implementation it replaced (kept below as the reference); `limit` picks items
round-robin over tasks."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import upstream

from pipeline.benchmarks import card
from pipeline.config import SourceSpec, load_sources
from pipeline.prompts import (
    _user_turn_hash,
    build_prompt_columns,
    build_prompt_rows,
    options_text,
    prompt_hash,
    protocol,
)
from pipeline.schema import PROMPTS, VARIANTS, stable_json, to_frame
from pipeline.script import make_variant
from pipeline.sources.ingest import parse_source
from pipeline.standardize import standardize

ROOT = Path(__file__).resolve().parents[2]


# ---- the reference: build_prompt_rows and render as they were before pools were built once ----

def reference_render(item: dict[str, Any], variant: dict[str, Any], setting: str,
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
    template = spec.get("template") or _reference_pick(spec["templates"], item)
    want = min(spec.get("shots", 0), proto.get("shots_per_task", {}).get(item["task"], spec.get("shots", 0)))
    examples = [_reference_example(spec["example"], n + 1, s) for n, s in enumerate(shots[:want])] if want else []
    while True:
        fields["examples"] = "".join(examples)
        text = template.format(**fields)
        if not examples or len(text) <= proto.get("max_prompt_chars", 10**9):
            break
        examples.pop()  # fewer shots rather than an overflowing context
    max_tokens = spec.get("max_tokens_per_format", {}).get(item["format"], spec.get("max_tokens", 256))
    # null: no budget of the benchmark's own (AC-EVAL sets none): up to the model's context
    return [{"role": "user", "content": text}], None if max_tokens is None else int(max_tokens)


def _reference_pick(templates: dict[str, str], item: dict[str, Any]) -> str:
    for key in (item["task"], item["format"], "default"):
        if key in templates:
            return templates[key]
    raise KeyError(f"no prompt template for task {item['task']!r} / format {item['format']!r}")


def _reference_example(template: str, n: int, shot: dict[str, Any]) -> str:
    return template.format(n=n, question=shot.get("question") or "", options=options_text(list(shot["choices"])),
                           answer=shot.get("answer") or "", explanation=shot["metadata"].get("explanation", ""))


def reference_build_prompt_rows(items: list[dict[str, Any]], variants: list[dict[str, Any]],
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
                    "_order": (item.get("source_file") or "", _reference_locator_order(item["source_locator"]))}
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
            messages, max_tokens = reference_render(item, v, setting, pool)
            rows.append({"item_id": item["item_id"], "benchmark": item["benchmark"], "variant": v["variant"],
                         "setting": setting, "messages": messages,
                         "max_tokens": max_tokens, "prompt_hash": prompt_hash(messages)})
    return rows


def _reference_locator_order(locator: str) -> tuple[int, str]:
    digits = "".join(ch for ch in str(locator) if ch.isdigit())
    return (int(digits) if digits else 0, str(locator))


# ---- inputs ----

def _variants(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [make_variant(it, v) for it in items for v in VARIANTS]


def _sample_items() -> list[dict[str, Any]]:
    specs = load_sources(ROOT / "data" / "sources.yaml")
    items, _ = standardize([i for spec in specs.values() for i in parse_source(spec).items])
    return items


def _aceval(split: str, task: str, group: str, n: int, answer: str | None = "A") -> dict[str, Any]:
    return {"item_id": f"aceval/{split}/{task}/{n}", "benchmark": "aceval", "split": split, "task": task,
            "task_group": group, "format": "mcq_single", "source_file": f"{split}/{task}.csv",
            "source_locator": f"row {n}", "question": f"{task}问题{n}" + "长" * (n % 7) * 300, "context": None,
            "choices": [f"甲{n}", "乙", "丙", "丁"], "answer": answer, "references": [], "domain": "古代史",
            "metadata": {"topic_zh": "古代史", "explanation": f"解析{n}"}}


def _synthetic() -> list[dict[str, Any]]:
    """Many AC-EVAL dev items over tasks with fewer than five exemplars (shots come from the level,
    the item itself never), test items, long questions (shots dropped to fit), and thousands of
    WYWMT-like translation items."""
    items = []
    for t in range(12):
        group = f"level{t % 3}"
        task = f"task{t}"
        # dev rows out of file order: pools are sorted by file and row
        items += [_aceval("dev", task, group, n, answer="ABCD"[n % 4] if n % 5 else None)
                  for n in reversed(range(t % 6))]
        items += [_aceval("test", task, group, n, answer=None) for n in range(40)]
    items += [{"item_id": f"wyweb/dev/wywmt/{n}", "benchmark": "wyweb", "split": "dev", "task": "wywmt",
               "task_group": "translation", "format": "translation", "source_file": "wywmt/dev.tsv",
               "source_locator": f"line {n}", "context": f"学而时习之{n}，不亦说乎？", "question": None,
               "choices": [], "answer": f"译文{n}", "references": [], "domain": "ancient prose", "metadata": {}}
              for n in range(3000)]
    return items


def _same(items, evaluate=None):
    variants = _variants(items)
    new = build_prompt_rows(items, variants, evaluate)
    assert new, "the case must render prompts"
    assert new == reference_build_prompt_rows(items, variants, evaluate)
    # the columns give the table to_frame gives from the rows, messages' JSON text included
    columns = build_prompt_columns(items, variants, evaluate)
    assert pa.Table.from_pydict(columns, schema=PROMPTS).equals(pa.Table.from_pandas(to_frame(new, PROMPTS),
                                                                                     schema=PROMPTS))
    return new


# ---- byte-identical to the reference ----

def test_bundled_samples_give_the_reference_rows():
    items = _sample_items()
    _same(items)
    # every split asked: AC-EVAL dev items take shots from their level, never themselves
    _same(items, {"aceval": ["dev", "test"], "wyweb": ["dev", "train"]})


def test_many_items_give_the_reference_rows():
    items = _synthetic()
    rows = _same(items, {"aceval": ["dev", "test"]})
    assert Counter(r["benchmark"] for r in rows)["wyweb"] == 3000 * len(VARIANTS)
    five = [r["messages"][0]["content"] for r in rows if r["setting"] == "five_shot_ao"]
    assert any(c.count("示例") == 5 for c in five) and any(c.count("示例") < 5 for c in five)
    _same(items)


def test_real_files_give_the_reference_rows():
    raw = []
    for name, parts in [("wenmind", ("wenmind", "WenMind_ver1.json")), ("aceval", ("aceval",)),
                        ("wyweb", ("wyweb",))]:
        raw += parse_source(SourceSpec(name, upstream(*parts), "public")).items
    items, _ = standardize(raw)
    _same(items, {"aceval": ["dev", "test"]})


@pytest.mark.parametrize("text", ["", "平常的文字", 'quote " back \\ slash', "tab\tnew\nline\x00\x1f",
                                  "\u2028\u2029 \U0001f600 𠀀", "\x7f\u00e9"])
def test_one_turn_hash_is_prompt_hash(text):
    assert _user_turn_hash(text) == prompt_hash([{"role": "user", "content": text}])
    item = {"item_id": "wenmind/test/t/1", "benchmark": "wenmind", "split": "test", "task": "t", "task_group": "g",
            "format": "open_qa", "domain": None, "metadata": {}, "answer": "甲", "source_locator": "1"}
    variant = {"item_id": item["item_id"], "variant": "original", "question": text, "choices": []}
    (row,) = [r for r in build_prompt_rows([item], [variant]) if r["setting"] == "question_only"]
    columns = build_prompt_columns([item], [variant])
    at = columns["setting"].index("question_only")
    assert columns["messages"][at] == stable_json(row["messages"])
    assert columns["prompt_hash"][at] == row["prompt_hash"] == prompt_hash(row["messages"])


# ---- limit ----

def test_limit_takes_items_round_robin_over_tasks_in_file_order():
    items = _synthetic()
    variants = _variants(items)
    rows = build_prompt_rows(items, variants, {"aceval": ["dev", "test"]}, limit=30)
    per_item = Counter(r["item_id"] for r in rows)
    by_id = {it["item_id"]: it for it in items}
    chosen = {b: [i for i in per_item if by_id[i]["benchmark"] == b] for b in ("aceval", "wyweb")}
    assert len(chosen["aceval"]) == 30 and len(chosen["wyweb"]) == 30
    # each item keeps all its variants and settings
    assert set(per_item.values()) == {len(VARIANTS) * len(protocol("aceval")["settings"]),
                                      len(VARIANTS) * len(protocol("wyweb")["settings"])}
    tasks = Counter(by_id[i]["task"] for i in chosen["aceval"])
    assert set(tasks) == {f"task{t}" for t in range(12)} and max(tasks.values()) - min(tasks.values()) <= 1
    # round robin in file order: the first items of each task, the first rounds' tasks first
    evaluated = [it for it in items if it["benchmark"] == "aceval"]
    for task in tasks:
        in_file = [it["item_id"] for it in evaluated if it["task"] == task]
        assert sorted(i for i in chosen["aceval"] if by_id[i]["task"] == task) == sorted(in_file[:tasks[task]])
    first_seen = list(dict.fromkeys(it["task"] for it in evaluated))
    assert [t for t in first_seen if tasks[t] == 3] == first_seen[:30 - 2 * 12]
    # the rows are the unlimited rows of the chosen items, in the same order
    full = build_prompt_rows(items, variants, {"aceval": ["dev", "test"]})
    assert rows == [r for r in full if r["item_id"] in per_item]


def test_limit_at_least_the_task_count_asks_every_task_and_beyond_the_items_asks_all():
    items = _sample_items()
    variants = _variants(items)
    full = build_prompt_rows(items, variants)
    n_tasks = {b: len({it["task"] for it in items if it["benchmark"] == b and it["split"] in card(b).eval_splits})
               for b in {it["benchmark"] for it in items}}
    limited = build_prompt_rows(items, variants, limit=max(n_tasks.values()))
    by_id = {it["item_id"]: it for it in items}
    for bench, n in n_tasks.items():
        asked = {by_id[r["item_id"]]["task"] for r in limited if r["benchmark"] == bench}
        assert len(asked) == n, bench
    assert build_prompt_rows(items, variants, limit=10**6) == full
    assert build_prompt_rows(items, variants, limit=0) == []


def test_a_few_shot_pool_is_not_limited():
    items = [_aceval("dev", "task0", "level0", n, answer="B") for n in range(5)] + [
        _aceval("test", "task0", "level0", n, answer=None) for n in range(10)]
    rows = build_prompt_rows(items, _variants(items), limit=1)
    five = [r["messages"][0]["content"] for r in rows if r["setting"] == "five_shot_ao"]
    assert len({r["item_id"] for r in rows}) == 1 and five and all("示例1" in c for c in five)


def test_a_negative_limit_is_refused():
    with pytest.raises(ValueError, match="limit"):
        build_prompt_rows([], [], limit=-1)


def _small_tasks(n: int) -> list[dict[str, Any]]:
    """n evaluated dev items in tasks of four, all in one level: every item's shots come partly
    from the level outside its task."""
    return [_aceval("dev", f"task{k // 4}", "level0", k) | {"question": f"问题{k}"} for k in range(n)]


def test_small_tasks_in_one_level_give_the_reference_rows():
    _same(_small_tasks(240), {"aceval": ["dev"]})


def test_cost_grows_linearly_with_evaluated_exemplars():
    """Four times the items must cost well under sixteen times the CPU (the per-item scans of
    the level it replaced grew with the square)."""
    def cpu(n: int) -> float:
        items = _small_tasks(n)
        variants = _variants(items)
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            build_prompt_rows(items, variants, {"aceval": ["dev"]})
            best = min(best, time.process_time() - start)
        return best

    assert cpu(1600) < 10 * cpu(400)
