"""build_prompt_rows and the protocols it renders.

The prompts of the bundled samples are checked byte for byte against tests/unit/golden/, as the
real renderer gives them (template choice, few-shot examples, budgets): a prompt rule is changed
once, in pipeline/prompts.py or a card's protocol.yaml, and the golden files are written again
(and their diff read). Larger synthetic builds are checked against stored digests and against
what any build keeps whatever the rules say: the columns are the rows, each prompt is `render`'s
for the item and the examples it shows, those are other exemplars of the item's task (in file
order), then of its level, and shots fit the prompt budget. `limit` picks items round-robin over
tasks. Protocols are typed (pipeline/benchmark_card.py), with `extends:`.

The golden files are written by
    .venv/bin/python tests/unit/test_prompts_linear.py --write
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:   # run as a script
    sys.path.insert(0, str(TESTS))
from conftest import upstream  # noqa: E402

from pipeline.benchmark_card import read_protocol  # noqa: E402
from pipeline.benchmarks import card  # noqa: E402
from pipeline.config import ConfigError, SourceSpec, load_sources  # noqa: E402
from pipeline.ingest import parse_source  # noqa: E402
from pipeline.prompts import (  # noqa: E402
    _user_turn_hash,
    build_prompt_columns,
    build_prompt_rows,
    prompt_hash,
    protocol,
    render,
)
from pipeline.schema import PROMPTS, VARIANTS, stable_hash, stable_json, to_frame  # noqa: E402
from pipeline.script import make_variant  # noqa: E402
from pipeline.standardize import standardize  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
SAMPLES_GOLDEN = GOLDEN / "prompts_samples.jsonl.gz"
SYNTHETIC_GOLDEN = GOLDEN / "prompts_synthetic.json"


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
    the item itself never), test items, questions of many lengths, and thousands of WYWMT-like
    translation items."""
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


def _small_tasks(n: int) -> list[dict[str, Any]]:
    """n evaluated dev items in tasks of four, all in one level: every item's shots come partly
    from the level outside its task."""
    return [_aceval("dev", f"task{k // 4}", "level0", k) | {"question": f"问题{k}"} for k in range(n)]


EVERY_SPLIT = {"aceval": ["dev", "test"], "wyweb": ["dev", "train"]}
SAMPLE_CASES: dict[str, Mapping[str, Collection[str]] | None] = {"default splits": None, "every split": EVERY_SPLIT}
SYNTHETIC_CASES = {
    "many items, aceval dev and test": (_synthetic, {"aceval": ["dev", "test"]}),
    "many items": (_synthetic, None),
    "small tasks": (lambda: _small_tasks(240), {"aceval": ["dev"]}),
}


# ---- golden files ----

def _sample_golden_rows() -> list[dict[str, Any]]:
    items = _sample_items()
    variants = _variants(items)
    return [{"case": case, "item_id": r["item_id"], "variant": r["variant"], "setting": r["setting"],
             "max_tokens": r["max_tokens"], "prompt": r["messages"][0]["content"]}
            for case, evaluate in SAMPLE_CASES.items() for r in build_prompt_rows(items, variants, evaluate)]


def _digests(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per benchmark and setting: how many rows, and a hash of them in build order."""
    parts: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        parts.setdefault(f"{r['benchmark']} {r['setting']}", []).append(r)
    return {key: {"rows": len(part), "sha256": stable_hash(part)} for key, part in sorted(parts.items())}


def _synthetic_digests() -> dict[str, Any]:
    out = {}
    for case, (make, evaluate) in SYNTHETIC_CASES.items():
        items = make()
        out[case] = _digests(build_prompt_rows(items, _variants(items), evaluate))
    return out


def write_golden() -> None:
    GOLDEN.mkdir(exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in _sample_golden_rows()]
    with open(SAMPLES_GOLDEN, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))   # the same bytes for the same prompts
    SYNTHETIC_GOLDEN.write_text(json.dumps(_synthetic_digests(), indent=1, ensure_ascii=False) + "\n",
                                encoding="utf-8")


# ---- what every build keeps ----

EXAMPLE = re.compile(r"示例(\d+)：")


def _check(items: list[dict[str, Any]], variants: list[dict[str, Any]], rows: list[dict[str, Any]],
           evaluate: Mapping[str, Collection[str]] | None = None) -> None:
    """The columns are the rows; each row is one user turn with its hash; a setting without shots
    gives `render`'s prompt; a few-shot prompt is the bare prompt with its numbered examples put
    in, as many as fit the budget."""
    columns = build_prompt_columns(items, variants, evaluate)
    assert pa.Table.from_pydict(columns, schema=PROMPTS).equals(pa.Table.from_pandas(to_frame(rows, PROMPTS),
                                                                                     schema=PROMPTS))
    by_id = {it["item_id"]: it for it in items}
    variant_of = {(v["item_id"], v["variant"]): v for v in variants}
    for r in rows:
        (turn,) = r["messages"]
        assert turn["role"] == "user" and r["prompt_hash"] == prompt_hash(r["messages"])
        item, variant = by_id[r["item_id"]], variant_of[(r["item_id"], r["variant"])]
        proto = protocol(item["benchmark"])
        setting = proto.settings[r["setting"]]
        bare, budget = render(item, variant, r["setting"])
        assert r["max_tokens"] == budget == setting.max_tokens_for(item["format"])
        text, plain = turn["content"], bare[0]["content"]
        if not setting.shots:
            assert text == plain
            continue
        # the examples go in at one place of the bare prompt, numbered from 1
        head = len(_common_prefix(text, plain))
        assert text[:head] + text[len(text) - (len(plain) - head):] == plain
        shown = [int(n) for n in EXAMPLE.findall(text[head:len(text) - (len(plain) - head)])]
        assert shown == list(range(1, len(shown) + 1))
        assert len(shown) <= min(setting.shots, proto.shots_per_task.get(item["task"], setting.shots))
        assert not shown or len(text) <= (proto.max_prompt_chars or 10**9)


def _common_prefix(a: str, b: str) -> str:
    low, high = 0, min(len(a), len(b))   # the longest n with a[:n] == b[:n], by halving
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if a[:mid] == b[:mid] else (low, mid - 1)
    return a[:low]


SHOT = re.compile(r"示例\d+：([^\n]*)\n")


def _check_synthetic_shots(items: list[dict[str, Any]], variants: list[dict[str, Any]],
                           rows: list[dict[str, Any]]) -> None:
    """Every synthetic AC-EVAL question is its own, so each example a prompt shows is known by
    its question: another exemplar (dev, with an answer) of the item's level, those of its own
    task first, each part in file order; and the prompt is `render`'s with them."""
    by_id = {it["item_id"]: it for it in items}
    variant_of = {(v["item_id"], v["variant"]): v for v in variants}
    exemplar = {(v["variant"], v["question"]): by_id[v["item_id"]] for v in variants
                if by_id[v["item_id"]]["split"] == "dev" and by_id[v["item_id"]]["benchmark"] == "aceval"}
    for r in rows:
        item = by_id[r["item_id"]]
        if item["benchmark"] != "aceval" or not protocol("aceval").settings[r["setting"]].shots:
            continue
        text = r["messages"][0]["content"]
        prompt = text[:text.rindex("题目：")]   # the examples, not the item's own question
        shots = [exemplar[(r["variant"], question)] for question in SHOT.findall(prompt)]
        assert all(s["answer"] and s["task_group"] == item["task_group"] and s["item_id"] != item["item_id"]
                   for s in shots)
        own = [s for s in shots if s["task"] == item["task"]]
        assert shots[:len(own)] == own
        order = [(s["source_file"], int(s["source_locator"].split()[1])) for s in shots]
        assert order[:len(own)] == sorted(order[:len(own)]) and order[len(own):] == sorted(order[len(own):])
        chosen = [variant_of[(s["item_id"], r["variant"])] | {"metadata": s["metadata"]} for s in shots]
        assert render(item, variant_of[(item["item_id"], r["variant"])], r["setting"], chosen) == (
            r["messages"], r["max_tokens"])


# ---- the bundled samples: byte for byte ----

def test_bundled_samples_give_the_golden_prompts():
    with gzip.open(SAMPLES_GOLDEN, "rt", encoding="utf-8") as f:
        golden = [json.loads(line) for line in f if line.strip()]
    rows = _sample_golden_rows()
    key = ("case", "item_id", "variant", "setting")
    stored = {tuple(r[k] for k in key): r for r in golden}
    built = {tuple(r[k] for k in key): r for r in rows}
    differing = [k for k in stored.keys() | built.keys() if stored.get(k) != built.get(k)]
    assert not differing, (f"{len(differing)} prompts differ from {SAMPLES_GOLDEN.name} (first: "
                           f"{sorted(differing)[0]}); after a deliberate rule change, write it again: "
                           "python tests/unit/test_prompts_linear.py --write")
    assert [tuple(r[k] for k in key) for r in rows] == [tuple(r[k] for k in key) for r in golden]   # same order


def test_bundled_samples_keep_the_invariants():
    items = _sample_items()
    variants = _variants(items)
    for evaluate in SAMPLE_CASES.values():
        rows = build_prompt_rows(items, variants, evaluate)
        assert rows
        _check(items, variants, rows, evaluate)
    every = build_prompt_rows(items, variants, EVERY_SPLIT)
    five = [r["messages"][0]["content"] for r in every if r["setting"] == "five_shot_ao"]
    assert five and all(EXAMPLE.search(c) for c in five)   # the samples have exemplars for every task


# ---- larger builds: stored digests and the invariants ----

@pytest.mark.parametrize("case", list(SYNTHETIC_CASES))
def test_synthetic_builds_give_the_stored_digests(case):
    make, evaluate = SYNTHETIC_CASES[case]
    items = make()
    variants = _variants(items)
    rows = build_prompt_rows(items, variants, evaluate)
    stored = json.loads(SYNTHETIC_GOLDEN.read_text(encoding="utf-8"))[case]
    assert _digests(rows) == stored, (f"{case}: prompts differ from {SYNTHETIC_GOLDEN.name}; after a deliberate "
                                      "rule change, write it again: python tests/unit/test_prompts_linear.py --write")
    _check(items, variants, rows, evaluate)
    _check_synthetic_shots(items, variants, rows)


def test_many_items_drop_shots_to_fit_and_ask_every_translation():
    items = _synthetic()
    rows = build_prompt_rows(items, _variants(items), {"aceval": ["dev", "test"]})
    assert Counter(r["benchmark"] for r in rows)["wyweb"] == 3000 * len(VARIANTS)
    five = [r["messages"][0]["content"] for r in rows if r["setting"] == "five_shot_ao"]
    assert any(c.count("示例") == 5 for c in five) and any(c.count("示例") < 5 for c in five)
    # an evaluated exemplar never sees itself; a task with fewer than five exemplars borrows its level's
    own = [r for r in rows if r["item_id"] == "aceval/dev/task5/1" and r["setting"] == "five_shot_ao"]
    assert own and all("task5问题1\n" not in r["messages"][0]["content"].split("题目：")[0] for r in own)


def test_shots_that_do_not_fit_are_dropped_from_the_end():
    """Five exemplars of 1,500 characters and a long question: the examples that fit AC-EVAL's
    max_prompt_chars are the first ones of the pool, numbered from 1, and one more would not fit."""
    items = [_aceval("dev", "task0", "level0", n, answer="B") | {"question": f"例{n}" + "长" * 1500}
             for n in range(1, 6)] + [_aceval("test", "task0", "level0", 0, answer=None) | {"question": "问" * 900}]
    variants = _variants(items)
    rows = build_prompt_rows(items, variants)
    _check(items, variants, rows)
    few = [r for r in rows if r["setting"] in ("five_shot_ao", "five_shot_cot")]
    limit = protocol("aceval").max_prompt_chars
    assert few and limit
    item = items[-1]
    for r in few:
        text = r["messages"][0]["content"]
        shown = EXAMPLE.findall(text)
        assert 1 <= len(shown) < 5 and len(text) <= limit
        assert [q[:2] for q in SHOT.findall(text)] == [f"例{n}" for n in range(1, len(shown) + 1)]
        variant = make_variant(item, r["variant"])
        pool = [make_variant(it, r["variant"]) | {"metadata": it["metadata"]} for it in items[:-1]]
        assert render(item, variant, r["setting"], pool) == (r["messages"], r["max_tokens"])
        bare = render(item, variant, r["setting"])[0][0]["content"]
        assert len(text) + (len(text) - len(bare)) / len(shown) > limit   # one more example would not fit


def test_real_files_keep_the_invariants():
    raw = []
    for name, parts in [("wenmind", ("wenmind", "WenMind_ver1.json")), ("aceval", ("aceval",)),
                        ("wyweb", ("wyweb",))]:
        raw += parse_source(SourceSpec(name, upstream(*parts), "public")).items
    items, _ = standardize(raw)
    variants = _variants(items)
    evaluate = {"aceval": ["dev", "test"]}
    _check(items, variants, build_prompt_rows(items, variants, evaluate), evaluate)


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

def _settings_asking(item) -> int:
    """How many of its benchmark's settings render a prompt for `item`."""
    from pipeline.benchmark_card import LOGLIKELIHOOD_FORMATS

    return sum(1 for s in protocol(item["benchmark"]).settings.values()
               if not s.loglikelihood or item["format"] in LOGLIKELIHOOD_FORMATS)


def test_limit_takes_items_round_robin_over_tasks_in_file_order():
    items = _synthetic()
    variants = _variants(items)
    rows = build_prompt_rows(items, variants, {"aceval": ["dev", "test"]}, limit=30)
    per_item = Counter(r["item_id"] for r in rows)
    by_id = {it["item_id"]: it for it in items}
    chosen = {b: [i for i in per_item if by_id[i]["benchmark"] == b] for b in ("aceval", "wyweb")}
    assert len(chosen["aceval"]) == 30 and len(chosen["wyweb"]) == 30
    # each item keeps all its variants and settings (a log-likelihood one: choice items only)
    assert all(n == len(VARIANTS) * _settings_asking(by_id[i]) for i, n in per_item.items())
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


# ---- protocols: typed, with extends ----

def test_aceval_settings_extend_zero_shot_ao():
    settings = protocol("aceval").settings
    base = settings["zero_shot_ao"]
    assert list(settings) == ["zero_shot_ao", "zero_shot_cot", "five_shot_ao", "zero_shot_ao_constrained",
                              "five_shot_cot", "loglikelihood", "loglikelihood_norm"]
    # log-likelihood: zero_shot_ao's prompt, its options scored after "答案：" (letters / texts)
    for name, how in (("loglikelihood", "letters"), ("loglikelihood_norm", "texts")):
        assert settings[name].template == base.template and settings[name].loglikelihood == how
        assert base.template.endswith("答案：")
    assert all(s.max_tokens is None for name, s in settings.items() if name != "zero_shot_ao_constrained")
    constrained = settings["zero_shot_ao_constrained"]
    assert constrained.template == base.template and constrained.max_tokens == 2 and constrained.constrained_choice
    assert settings["five_shot_cot"].extends == "five_shot_ao" and settings["five_shot_cot"].shots == 5
    assert settings["five_shot_cot"].example != settings["five_shot_ao"].example
    assert protocol("aceval").default_settings == ["zero_shot_ao"]


def test_extends_takes_the_named_setting_and_overrides_some_keys(tmp_path):
    path = tmp_path / "protocol.yaml"
    path.write_text("settings:\n"
                    "  a: {template: '{question}', max_tokens: 5, temperature: 0}\n"
                    "  b: {extends: a, max_tokens: null}\n"
                    "  c: {extends: b, templates: {t: '{context}'}, template: null}\n", encoding="utf-8")
    proto = read_protocol(path)
    a, b, c = (proto.settings[n] for n in "abc")
    assert proto.default_settings == ["a"]
    assert (b.template, b.max_tokens, b.temperature) == ("{question}", None, 0.0)
    assert (c.template, c.templates, c.max_tokens, c.temperature, c.extends) == (None, {"t": "{context}"}, None, 0.0,
                                                                                "b")
    assert a.max_tokens_for("any") == 5 and a.shots == 0 and not a.constrained_choice


@pytest.mark.parametrize(("text", "line"), [
    ("settings:\n  a: {template: x, tempalte: y}\n", "settings.a.tempalte: unknown key (got 'y')"),
    ("setings: {}\nsettings:\n  a: {template: x}\n", "setings: unknown key"),
    ("settings:\n  a: {template: x}\n  b: {extends: c}\n", "settings.b.extends: unknown setting (got 'c')"),
    ("settings:\n  a: {extends: b, template: x}\n  b: {extends: a}\n", "settings.b.extends: extends itself"),
    ("settings:\n  a: {template: '{questoin}'}\n", "settings.a.template: unknown placeholder {questoin}"),
    ("settings:\n  a: {template: '{examples}{question}', shots: 2}\n", "settings.a.example: shots: 2 needs"),
    ("settings:\n  a: {shots: 0}\n", "settings.a: needs a 'template' or 'templates'"),
    ("settings:\n  a: {template: x, max_tokens: 0}\n", "settings.a.max_tokens: expected an integer >= 1, or null"),
    ("default_settings: [b]\nsettings:\n  a: {template: x}\n", "default_settings: unknown settings ['b']"),
    ("settings: {}\n", "settings: needs at least one setting"),
])
def test_a_broken_protocol_is_one_line_naming_the_file_and_key(tmp_path, text, line):
    path = tmp_path / "protocol.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_protocol(path)
    (message,) = str(caught.value).splitlines()
    assert message.startswith(f"{path}: ") and line in message


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (writes {SAMPLES_GOLDEN.name} and {SYNTHETIC_GOLDEN.name})")
    write_golden()
    print(f"wrote {SAMPLES_GOLDEN} and {SYNTHETIC_GOLDEN}")
