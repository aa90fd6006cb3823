"""Rendering prompts from each benchmark card's protocol (pipeline/benchmarks/<name>/protocol.yaml):
data, not code branches."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from itertools import islice
from json.encoder import encode_basestring
from typing import Any

from pipeline.benchmark_card import LOGLIKELIHOOD_FORMATS, Protocol, Setting
from pipeline.benchmarks import card
from pipeline.rows import OPTION_LETTERS, stable_hash


def protocol(benchmark: str) -> Protocol:
    return card(benchmark).protocol


def settings_for(benchmark: str, requested: Iterable[str] | None = None) -> list[str]:
    proto = protocol(benchmark)
    names = list(requested or proto.default_settings)
    unknown = [n for n in names if n not in proto.settings]
    if unknown:
        raise ValueError(f"{benchmark}: unknown settings {unknown}; known: {sorted(proto.settings)}")
    return names


def asked_pairs(models: Iterable[Any], benchmark: str) -> set[tuple[str, str]]:
    """The (variant, setting) pairs that some model asks of `benchmark`: each model's `variants`
    times its `settings` for the benchmark (the protocol's `default_settings` where it names
    none), as `pipeline.inference.prompts_for` picks a model's prompt rows. `models`: ModelSpecs."""
    return {(variant, setting) for spec in models for setting in settings_for(benchmark, spec.settings.get(benchmark))
            for variant in spec.variants}


def variants_built(models: Iterable[Any]) -> list[str]:
    """The script variants built for every item: the stored, simplified and traditional ones, then
    any regional form some model asks (traditional_tw / traditional_hk). `models`: ModelSpecs."""
    from pipeline.schema import VARIANTS

    return list(VARIANTS) + sorted({v for spec in models for v in spec.variants} - set(VARIANTS))


def options_text(choices: list[str]) -> str:
    return "\n".join(f"{OPTION_LETTERS[i]}. {c}" for i, c in enumerate(choices))


def render(item: dict[str, Any], variant: dict[str, Any], setting: str,
           shots: list[dict[str, Any]] = ()) -> tuple[list[dict[str, str]], int | None]:
    """(chat messages, max_tokens) for one item variant under one setting.

    `item` gives task and metadata, `variant` the text in the chosen script; `shots` are
    candidate few-shot examples (already in the same variant), used in order."""
    text, max_tokens = _Setting(protocol(item["benchmark"]), setting).render(item, variant, shots)
    return [{"role": "user", "content": text}], max_tokens


class _Setting:
    """One protocol setting, with what it derives per task and format looked up once: a build
    renders tens of thousands of items under the same few settings."""

    def __init__(self, proto: Protocol, name: str):
        self.spec: Setting = proto.settings[name]
        self.shots = self.spec.shots
        self.shots_per_task = proto.shots_per_task
        self.max_chars = proto.max_prompt_chars or 10**9
        self._templates: dict[tuple[str, str], str] = {}
        self._budgets: dict[str, int | None] = {}
        self._examples: dict[tuple[int, int], str] = {}  # (id(shot), n) -> rendered example

    def template(self, item: dict[str, Any]) -> str:
        key = (item["task"], item["format"])
        found = self._templates.get(key)
        if found is None:
            found = self._templates[key] = self.spec.template or _pick(self.spec.templates, item)
        return found

    def max_tokens(self, fmt: str) -> int | None:
        if fmt not in self._budgets:
            budget = self.spec.max_tokens_for(fmt)
            # null: no budget of the benchmark's own (AC-EVAL sets none): up to the model's context
            self._budgets[fmt] = None if budget is None else int(budget)
        return self._budgets[fmt]

    def render(self, item: dict[str, Any], variant: dict[str, Any], shots: list[dict[str, Any]],
               options: str | None = None, cache_examples: bool = False) -> tuple[str, int | None]:
        """(prompt text, max_tokens). `cache_examples` keeps each rendered shot by its identity:
        only for callers whose shot dicts outlive the cache (build_prompt_rows)."""
        meta = item["metadata"]
        fields = {
            "question": variant.get("question") or "",
            "context": variant.get("context") or "",
            "options": options_text(list(variant.get("choices") or [])) if options is None else options,
            "topic": meta.get("topic_zh", item.get("domain") or ""),
            "examples": "",
        }
        template = self.template(item)
        want = min(self.shots, self.shots_per_task.get(item["task"], self.shots))
        examples = [self._example(n + 1, s, cache_examples) for n, s in enumerate(shots[:want])] if want else []
        while True:
            fields["examples"] = "".join(examples)
            text = template.format(**fields)
            if not examples or len(text) <= self.max_chars:
                break
            examples.pop()  # fewer shots rather than an overflowing context
        return text, self.max_tokens(item["format"])

    def _example(self, n: int, shot: dict[str, Any], cache: bool) -> str:
        if not cache:
            return _example(self.spec.example, n, shot)
        key = (id(shot), n)
        found = self._examples.get(key)
        if found is None:
            found = self._examples[key] = _example(self.spec.example, n, shot)
        return found


def _pick(templates: Mapping[str, str], item: dict[str, Any]) -> str:
    for key in (item["task"], item["format"], "default"):
        if key in templates:
            return templates[key]
    raise KeyError(f"no prompt template for task {item['task']!r} / format {item['format']!r}")


def _example(template: str, n: int, shot: dict[str, Any]) -> str:
    return template.format(n=n, question=shot.get("question") or "", options=options_text(list(shot["choices"])),
                           answer=shot.get("answer") or "", explanation=shot["metadata"].get("explanation", ""))


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return stable_hash(messages)


def _user_turn_hash(text: str) -> str:
    """prompt_hash([{"role": "user", "content": text}]) without the generic JSON encoder: the same
    canonical bytes (sorted keys, no spaces, ensure_ascii off), written out directly."""
    return _turn_hash(encode_basestring(text))


def _turn_hash(content: str) -> str:
    """_user_turn_hash from the text already JSON-encoded."""
    return hashlib.sha256(('[{"content":' + content + ',"role":"user"}]').encode("utf-8")).hexdigest()


class _Benchmark:
    """What build_prompt_rows needs of one benchmark card, looked up once per build."""

    def __init__(self, name: str, evaluate: Mapping[str, set[str]],
                 asked: Mapping[str, Collection[tuple[str, str]]] | None):
        bench = card(name)
        self.name = bench.name
        self.exemplar_splits = bench.exemplar_splits
        self.evaluated = evaluate.get(bench.name, bench.eval_splits)
        proto = protocol(bench.name)
        self.settings = [(s, _Setting(proto, s)) for s in proto.settings]
        # the pool of shots an item keeps is sized for every setting, asked or not: a setting's
        # shots are then the same whichever others are asked
        self.most = max((s.shots for s in proto.settings.values()), default=0)
        self.per_variant: dict[str, list[tuple[str, _Setting]]] | None = None   # None: every pair
        if asked is not None:
            pairs = set(asked.get(bench.name, ()))
            unknown = sorted({s for _, s in pairs} - set(proto.settings))
            if unknown:
                raise ValueError(f"{bench.name}: unknown settings {unknown}; known: {sorted(proto.settings)}")
            self.per_variant = {v: [(n, s) for n, s in self.settings if (v, n) in pairs] for v, _ in pairs}

    def settings_of(self, variant: str) -> list[tuple[str, _Setting]]:
        """The settings `variant` is rendered under, in the protocol's order."""
        return self.settings if self.per_variant is None else self.per_variant.get(variant, [])


def build_prompt_rows(items: list[dict[str, Any]], variants: list[dict[str, Any]],
                      evaluate: Mapping[str, Collection[str]] | None = None,
                      limit: int | None = None,
                      asked: Mapping[str, Collection[tuple[str, str]]] | None = None) -> list[dict[str, Any]]:
    """Every evaluated item x variant x protocol setting of its benchmark -> one prompt row; with
    `asked` (benchmark -> the (variant, setting) pairs some model asks, `asked_pairs`), only the
    rows of those pairs, each the row it is without `asked` (a benchmark missing from it: none).

    Only items of the splits a benchmark evaluates get prompts (`evaluate`: benchmark -> splits;
    default: each card's `eval_splits`); the other splits stay in the items table for dedup and
    contamination, and the card's `exemplar_splits` give the few-shot pools (in file order). An
    exemplar item that is itself evaluated (AC-EVAL dev, when asked) never sees itself: its shots
    are the other exemplars of its task, then of its task group (AC-EVAL's level).

    `limit`: at most this many evaluated items per benchmark (each with all its variants and
    settings), taken round-robin over the benchmark's tasks in file order, so every task is
    asked once the limit reaches the number of tasks; the few-shot pools are not limited.

    Pools are built once per (benchmark, task, variant) and per (benchmark, task group,
    variant, task); each item then takes its first shots from them, so the cost is linear in
    the items (and in the pairs asked)."""
    return [{"item_id": item["item_id"], "benchmark": item["benchmark"], "variant": variant, "setting": setting,
             "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
             "prompt_hash": _user_turn_hash(text)}
            for item, variant, setting, text, max_tokens in _rendered(items, variants, evaluate, limit, asked)]




def build_prompt_columns(items: list[dict[str, Any]], variants: list[dict[str, Any]],
                         evaluate: Mapping[str, Collection[str]] | None = None,
                         limit: int | None = None,
                         asked: Mapping[str, Collection[tuple[str, str]]] | None = None) -> dict[str, list[Any]]:
    """build_prompt_rows as columns (schema.PROMPTS' columns, in its order), with `messages`
    already in the JSON text schema.to_frame writes for it: a table is made without a dict (and
    a list and a dict for the messages) per row."""
    from pipeline.schema import PROMPTS  # imported here: pyarrow; the definitions import this module

    columns: dict[str, list[Any]] = {name: [] for name in PROMPTS.names}
    item_ids, benchmarks, variant_names, settings, messages, budgets, hashes = (columns[name] for name in (
        "item_id", "benchmark", "variant", "setting", "messages", "max_tokens", "prompt_hash"))
    for item, variant, setting, text, max_tokens in _rendered(items, variants, evaluate, limit, asked):
        item_ids.append(item["item_id"])
        benchmarks.append(item["benchmark"])
        variant_names.append(variant)
        settings.append(setting)
        content = encode_basestring(text)
        messages.append('[{"content": ' + content + ', "role": "user"}]')
        budgets.append(max_tokens)
        hashes.append(_turn_hash(content))
    return columns


def _rendered(items: list[dict[str, Any]], variants: list[dict[str, Any]],
              evaluate: Mapping[str, Collection[str]] | None, limit: int | None,
              asked: Mapping[str, Collection[tuple[str, str]]] | None = None):
    """(item, variant name, setting, prompt text, max_tokens) in build_prompt_rows' order. A
    variant no pair asks is neither rendered nor pooled (pools are per variant)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be 0 or more, not {limit}")
    by_id = {it["item_id"]: it for it in items}
    splits = {b: set(s) for b, s in (evaluate or {}).items()}
    benches: dict[str, _Benchmark] = {}

    def bench_of(item: dict[str, Any]) -> _Benchmark:
        found = benches.get(item["benchmark"])
        if found is None:
            found = benches[item["benchmark"]] = _Benchmark(item["benchmark"], splits, asked)
        return found

    by_task: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    by_group: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for v in variants:
        item = by_id[v["item_id"]]
        bench = bench_of(item)
        if item["split"] in bench.exemplar_splits and item.get("answer") and bench.settings_of(v["variant"]):
            shot = {**v, "task": item["task"], "metadata": item["metadata"],
                    "_order": (item.get("source_file") or "", _locator_order(item["source_locator"]))}
            by_task.setdefault((bench.name, item["task"], v["variant"]), []).append(shot)
            by_group.setdefault((bench.name, item["task_group"], v["variant"]), []).append(shot)
    for pool in [*by_task.values(), *by_group.values()]:
        pool.sort(key=lambda s: s["_order"])
    # the first `most` shots of a group outside one task, found once per (group, variant, task)
    outside_task: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    chosen = None if limit is None else _round_robin(items, variants, bench_of, limit)
    for v in variants:
        item = by_id[v["item_id"]]
        bench = bench_of(item)
        if item["split"] not in bench.evaluated or (chosen is not None and item["item_id"] not in chosen):
            continue
        settings = bench.settings_of(v["variant"])
        if not settings:
            continue
        most = bench.most
        pool = [s for s in by_task.get((bench.name, item["task"], v["variant"]), [])[:most + 1]
                if s["item_id"] != item["item_id"]][:most]
        if len(pool) < most and item["split"] in bench.exemplar_splits:
            key = (bench.name, item["task_group"], v["variant"], item["task"])
            if key not in outside_task:
                # stops after `most` shots: a scan per task never runs through the whole level
                outside_task[key] = list(islice((s for s in by_group.get(key[:3], []) if s["task"] != item["task"]),
                                                most))
            pool += outside_task[key][:most - len(pool)]
        options = options_text(list(v.get("choices") or []))
        for name, setting in settings:
            if setting.spec.loglikelihood and item["format"] not in LOGLIKELIHOOD_FORMATS:
                continue   # only single-answer choices can be scored by their options
            text, max_tokens = setting.render(item, v, pool, options, cache_examples=True)
            yield item, v["variant"], name, text, max_tokens


def _round_robin(items: list[dict[str, Any]], variants: list[dict[str, Any]], bench_of, limit: int) -> set[str]:
    """The ids of at most `limit` evaluated items per benchmark: the first item of each task (tasks
    in the order they first appear), then the second of each, and so on."""
    with_variants = {v["item_id"] for v in variants}
    queues: dict[str, dict[str, list[str]]] = {}
    for item in items:
        if item["item_id"] in with_variants and item["split"] in bench_of(item).evaluated:
            queues.setdefault(item["benchmark"], {}).setdefault(item["task"], []).append(item["item_id"])
    chosen: set[str] = set()
    for tasks in queues.values():
        picked, depth, longest = 0, 0, max(map(len, tasks.values()))
        while picked < limit and depth < longest:
            for ids in tasks.values():
                if depth < len(ids) and picked < limit and ids[depth] not in chosen:
                    chosen.add(ids[depth])
                    picked += 1
            depth += 1
    return chosen


def _locator_order(locator: str) -> tuple[int, str]:
    digits = "".join(ch for ch in str(locator) if ch.isdigit())
    return (int(digits) if digits else 0, str(locator))
