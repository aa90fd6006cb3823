"""Option letters beyond D: the random baseline and constrained decoding on ten-option items
(WYWEB GJC's ten collections), and the random baseline at chance on every task."""

from __future__ import annotations

import random
from collections import Counter

from pipeline.benchmarks import card
from pipeline.config import ModelSpec
from pipeline.engines.baseline import BaselineEngine
from pipeline.engines.cache import ResponseCache, run_with_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.inference import give_golds, plan, response_rows
from pipeline.prompts import build_prompt_rows
from pipeline.schema import OPTION_LETTERS
from pipeline.scoring.rules import score_rows
from pipeline.testing.openai_server import OpenAIServer

N_ITEMS = 400
# (benchmark, task, format, options): GJC's ten collections, XUCI's same / not the same, AC-EVAL's four
TASKS = [("wyweb", "gjc", "classification", 10), ("wyweb", "xuci", "classification", 2),
         ("aceval", "geography", "mcq_single", 4)]


def _items(benchmark: str, task: str, fmt: str, n_options: int, count: int, seed: int = 7) -> list[dict]:
    """Synthetic items with golds drawn uniformly from their options (seeded: always the same)."""
    rng = random.Random(f"{seed}:{task}")
    split = card(benchmark).eval_splits[0]   # the split each benchmark evaluates (WYWEB: dev)
    return [{"item_id": f"{benchmark}/{split}/{task}/{i}", "benchmark": benchmark, "split": split, "task": task,
             "format": fmt, "question": f"第{i}题：下列哪一项正确？", "context": f"第{i}段文字。",
             "choices": [f"{task}选项{k}" for k in range(n_options)],
             "answer": OPTION_LETTERS[rng.randrange(n_options)], "references": [], "domain": "古代地理",
             "source_locator": f"row {i}", "metadata": {}} for i in range(count)]


def _prompts(items: list[dict]) -> list[dict]:
    variants = [{k: it[k] for k in ("item_id", "benchmark", "context", "question", "choices", "answer", "references")}
                | {"variant": "original"} for it in items]
    return build_prompt_rows(items, variants)


def _random_baseline(tmp_path, benchmark: str, items: list[dict]) -> tuple[list[dict], list[dict]]:
    """The random baseline's response rows and score rows, through plan, the cache and the scorers."""
    engine = BaselineEngine("random", seed=0)
    items_by_id = {it["item_id"]: it for it in items}
    planned = plan(ModelSpec("random", "baseline", {"strategy": "random", "seed": 0}), engine.identity(),
                   benchmark, _prompts(items), items_by_id)
    with ResponseCache(tmp_path / f"{benchmark}.sqlite") as cache:
        found, _ = run_with_cache(give_golds(engine, planned, items_by_id), [r for _, r in planned], cache)
    responses = response_rows("random", planned, found)
    return responses, score_rows(responses, items)


def test_random_baseline_picks_every_letter_of_ten_option_items_including_i_and_j(tmp_path):
    items = _items("wyweb", "gjc", "classification", 10, N_ITEMS)
    responses, _ = _random_baseline(tmp_path, "wyweb", items)
    picks = Counter(r["text"] for r in responses)
    assert set(picks) == set("ABCDEFGHIJ")
    # 40 expected per letter, binomial sd 6: the draws are seeded, so this cannot flake
    assert all(20 <= picks[letter] <= 60 for letter in "ABCDEFGHIJ")


def test_random_baseline_is_at_chance_on_every_task(tmp_path):
    for benchmark, task, fmt, n_options in TASKS:
        items = _items(benchmark, task, fmt, n_options, N_ITEMS)
        _, scores = _random_baseline(tmp_path, benchmark, items)
        assert len(scores) == N_ITEMS and all(s["score"] is not None for s in scores), task
        accuracy = sum(s["score"] for s in scores) / N_ITEMS
        chance = 1 / n_options
        sd = (chance * (1 - chance) / N_ITEMS) ** 0.5      # 0.015 (GJC) to 0.025 (XUCI)
        assert abs(accuracy - chance) <= 4 * sd, (task, accuracy, chance)


def _constrained_ten_option_plan() -> list:
    items = _items("aceval", "geography", "mcq_single", 10, 60)
    spec = ModelSpec("served", "openai", sampling={"temperature": 0.0},
                     settings={"aceval": ("zero_shot_ao", "zero_shot_ao_constrained")})
    engine = OpenAIEngine(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    return plan(spec, engine.identity(), "aceval", _prompts(items), {it["item_id"]: it for it in items})


def test_constrained_choice_allows_every_option_of_a_ten_option_item():
    planned = _constrained_ten_option_plan()
    by_setting = {}
    for row, req in planned:
        by_setting.setdefault(row["setting"], []).append(req)
    assert {s: len(reqs) for s, reqs in by_setting.items()} == {"zero_shot_ao": 60, "zero_shot_ao_constrained": 60}
    assert all(r.constrain_to == tuple("ABCDEFGHIJ") for r in by_setting["zero_shot_ao_constrained"])
    assert all(r.constrain_to == () and r.choices == tuple("ABCDEFGHIJ") for r in by_setting["zero_shot_ao"])
    prompt = by_setting["zero_shot_ao_constrained"][0].messages[0]["content"]
    assert "\nI. geography选项8\nJ. geography选项9\n" in prompt      # the prompt shows the letters allowed


def test_constrained_ten_option_requests_reach_the_server_with_all_ten_letters():
    constrained = [req for row, req in _constrained_ten_option_plan() if row["setting"] == "zero_shot_ao_constrained"]
    with OpenAIServer() as server:
        engine = OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, concurrency=8)
        completions = engine.generate(constrained)
        bodies = list(server.last_body.values())
    assert bodies and all(b["structured_outputs"] == {"choice": list("ABCDEFGHIJ")} for b in bodies)
    texts = Counter(c.text for c in completions)
    assert set(texts) <= set("ABCDEFGHIJ") and {"I", "J"} <= set(texts)   # the last two letters are answerable


def test_random_open_answers_are_task_characters_at_the_golds_length_not_the_gold_shuffled():
    from pipeline.engines import Request

    golds = {f"poem{i}": text for i, text in enumerate(
        ["白日依山尽黄河入海流", "春眠不觉晓处处闻啼鸟", "床前明月光疑是地上霜", "红豆生南国春来发几枝"])}
    golds |= {"couplet0": "天增岁月人增寿", "couplet1": "春满乾坤福满门"}
    tasks = {k: "poem" if k.startswith("poem") else "couplet" for k in golds}
    engine = BaselineEngine("random", seed=0)
    engine.use_golds(golds, tasks)
    requests = [Request(k, ({"role": "user", "content": k},), None) for k in golds]
    answers = {r.cache_key: c.text for r, c in zip(requests, engine.generate(requests))}
    for key, gold in golds.items():
        answer = answers[key]
        assert len(answer) == len(gold)
        pool = set("".join(g for k, g in golds.items() if tasks[k] == tasks[key]))
        assert set(answer) <= pool, (key, answer)
    # a shuffle keeps the gold's characters exactly; draws from the task's pool almost never do
    shuffles = sum(sorted(answers[k]) == sorted(g) for k, g in golds.items())
    assert shuffles == 0
    again = BaselineEngine("random", seed=0)
    again.use_golds(golds, tasks)
    assert [c.text for c in again.generate(requests)] == [answers[r.cache_key] for r in requests]   # seeded
    assert engine.identity()["open_answers"] == 2 and "open_answers" not in BaselineEngine("oracle").identity()


def _translations(golds: list[str]) -> list[dict]:
    return [{"item_id": f"wyweb/dev/wywmt/{i}", "benchmark": "wyweb", "split": "dev", "task": "wywmt",
             "format": "translation", "question": "", "context": f"古文第{i}句。", "choices": [], "answer": gold,
             "references": [], "domain": None, "source_locator": f"line {i}", "metadata": {}}
            for i, gold in enumerate(golds)]


def _random_texts(cache_path, items: list[dict]) -> dict[str, str]:
    """The random baseline's answer per item, through plan and the response cache at `cache_path`."""
    engine = BaselineEngine("random", seed=0)
    items_by_id = {it["item_id"]: it for it in items}
    planned = plan(ModelSpec("random", "baseline", {"strategy": "random", "seed": 0}), engine.identity(),
                   "wyweb", _prompts(items), items_by_id)
    with ResponseCache(cache_path) as cache:
        found, _ = run_with_cache(give_golds(engine, planned, items_by_id), [r for _, r in planned], cache)
    return {r["item_id"]: r["text"] for r in response_rows("random", planned, found)}


def test_random_open_answers_built_incrementally_equal_a_build_from_scratch(tmp_path):
    """An open answer is drawn from the characters of its task's golds: a new release that changes
    one gold changes every answer of the task, so a build on the cache of the old release must give
    what a build from scratch gives."""
    before = _translations(["天下为公", "学而时习之", "温故而知新", "三人行必有我师"])
    after = _translations(["天下为公", "学而时习之", "温故而知新", "己所不欲勿施于人"])
    _random_texts(tmp_path / "incremental.sqlite", before)
    incremental = _random_texts(tmp_path / "incremental.sqlite", after)
    scratch = _random_texts(tmp_path / "scratch.sqlite", after)
    assert incremental == scratch
    pool = set("".join(it["answer"] for it in after))
    assert all(len(scratch[it["item_id"]]) == len(it["answer"]) and set(scratch[it["item_id"]]) <= pool
               for it in after)


def test_only_the_golds_of_open_items_are_read_by_random():
    """A letter is drawn from the prompt alone: a changed MCQ gold keeps random's key and what its
    responses read (model_inputs, whose content is in their fingerprint); a changed translation
    gold moves both."""
    from pipeline.engines.baseline import gold_use
    from pipeline.inference import model_inputs
    from pipeline.schema import ITEMS, to_frame
    from pipeline.sources.digest import frame_digest

    def digest_and_keys(items):
        engine = BaselineEngine("random", seed=0)
        spec = ModelSpec("random", "baseline", {"strategy": "random", "seed": 0})
        keys = {row["item_id"]: req.cache_key for bench in ("aceval", "wyweb") for row, req in plan(
            spec, engine.identity(), bench, _prompts(items), {it["item_id"]: it for it in items})}
        return frame_digest(model_inputs(to_frame(items, ITEMS), "pool")), keys

    mcq, open_items = _items("aceval", "geography", "mcq_single", 4, 3), _translations(["天下为公", "学而时习之"])
    digest, keys = digest_and_keys(mcq + open_items)
    moved_mcq = [dict(mcq[0], answer="D" if mcq[0]["answer"] != "D" else "C"), *mcq[1:]]
    assert digest_and_keys(moved_mcq + open_items) == (digest, keys)
    new_digest, new_keys = digest_and_keys(mcq + [open_items[0], dict(open_items[1], answer="温故而知新")])
    assert new_digest != digest and {k for k in keys if keys[k] != new_keys[k]} == {it["item_id"] for it in open_items}
    assert gold_use(BaselineEngine("random").identity()) == "pool" and gold_use(BaselineEngine("oracle").identity()) == "item"


def test_model_inputs_hold_a_gold_only_where_the_answers_read_it():
    """A served model reads no gold: its model_inputs, and so its responses' fingerprint and data
    versions, do not move when a gold is corrected. The oracle reads every gold; random the open
    items' only. Plan and the baselines answer from model_inputs as they would from the items."""
    from pipeline.engines.baseline import gold_use
    from pipeline.inference import model_inputs
    from pipeline.schema import ITEMS, records, to_frame
    from pipeline.sources.digest import frame_digest

    mcq, open_items = _items("aceval", "geography", "mcq_single", 4, 3), _translations(["天下为公", "学而时习之"])
    items = mcq + open_items
    corrected = [dict(mcq[0], answer="D" if mcq[0]["answer"] != "D" else "C"), *mcq[1:],
                 open_items[0], dict(open_items[1], answer="温故而知新")]
    golds = {uses: [row["answer"] for row in records(model_inputs(to_frame(items, ITEMS), uses))]
             for uses in (None, "item", "pool")}
    assert golds[None] == [None] * 5
    assert golds["item"] == [it["answer"] for it in items]
    assert golds["pool"] == [None, None, None, "天下为公", "学而时习之"]
    served = [frame_digest(model_inputs(to_frame(batch, ITEMS), None)) for batch in (items, corrected)]
    assert served[0] == served[1]
    oracle = [frame_digest(model_inputs(to_frame(batch, ITEMS), "item")) for batch in (items, corrected)]
    assert oracle[0] != oracle[1]
    # the oracle, planned from model_inputs, gives each item's gold
    engine = BaselineEngine("oracle")
    assert gold_use(engine.identity()) == "item"
    read = {it["item_id"]: it for it in records(model_inputs(to_frame(items, ITEMS), "item"))}
    for bench, batch in (("aceval", mcq), ("wyweb", open_items)):
        planned = plan(ModelSpec("oracle", "baseline", {"strategy": "oracle"}), engine.identity(), bench,
                       _prompts(batch), read)
        give_golds(engine, planned, read)
        texts = {row["item_id"]: completion.text for (row, _), completion in
                 zip(planned, engine.generate([req for _, req in planned]))}
        assert texts == {it["item_id"]: it["answer"] for it in batch}
