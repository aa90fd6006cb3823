"""Planning one inference partition (benchmark x model) and turning completions into response rows."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from pipeline.config import ModelSpec
from pipeline.engines import Completion, Request, best_option
from pipeline.engines.baseline import Pool, gold_pool, gold_use
from pipeline.engines.cache import key_maker
from pipeline.prompts import protocol, settings_for
from pipeline.schema import MODEL_INPUTS, OPTION_LETTERS, records, stable_hash, to_frame


def prompts_for(prompts: pd.DataFrame, spec: ModelSpec, benchmark: str) -> pd.DataFrame:
    """The rows of a prompts frame that `plan` keeps (this benchmark, the model's variants and
    settings), picked before the frame is turned into dicts: a model answering one variant of
    three needs a third of them."""
    settings = settings_for(benchmark, spec.settings.get(benchmark))
    keep = ((prompts["benchmark"] == benchmark) & prompts["variant"].isin(list(spec.variants))
            & prompts["setting"].isin(settings))
    return prompts[keep]


def plan(spec: ModelSpec, identity: dict[str, Any], benchmark: str, prompts: Iterable[dict[str, Any]],
         items_by_id: dict[str, dict[str, Any]]) -> list[tuple[dict[str, Any], Request]]:
    """The prompts this model answers for this benchmark (its variants x settings), as requests."""
    settings = set(settings_for(benchmark, spec.settings.get(benchmark)))
    protocol_settings = protocol(benchmark).settings
    constrained = {name for name, setting in protocol_settings.items() if setting.constrained_choice}
    model_temperature = float(spec.sampling.get("temperature", 0.0))
    cap = spec.sampling.get("max_tokens")
    key = key_maker(spec.name, identity)
    base = is_base_model(spec)
    rows = [row for row in prompts if row["benchmark"] == benchmark and row["variant"] in spec.variants
            and row["setting"] in settings]
    uses = gold_use(identity)
    pools = {task: stable_hash(pool) for task, pool in open_pools(_asked(rows, items_by_id)).items()} \
        if uses == "pool" else {}
    planned = []
    for row in rows:
        item = items_by_id[row["item_id"]]
        # a protocol that fixes the temperature (CP-DUE: 0) wins over the model's default
        fixed = protocol_settings[row["setting"]].temperature
        temperature = float(model_temperature if fixed is None else fixed)
        messages = row["messages"]
        # the protocol's budget (None: the benchmark sets none, up to the model's context), capped
        # by the model's own max_tokens; responses record it, so tables mark capped runs
        max_tokens = min((int(x) for x in (row["max_tokens"], cap) if x is not None), default=None)
        letters, labels, picks = answer_space(item)
        # constrained-choice settings decode only an option letter (structured outputs); not for
        # multiple answers or a sequence of letters
        constrain_to = (letters if row["setting"] in constrained and item["format"] != "mcq_multi" and picks == 1
                        else ())
        setting = protocol_settings[row["setting"]]
        sampling = {"temperature": temperature, "max_tokens": max_tokens}
        if constrain_to:
            sampling["choice"] = list(constrain_to)
        continuations = continuations_of(item, setting.loglikelihood) if setting.loglikelihood else ()
        stop = tuple(setting.stop) if base and not continuations else ()
        if continuations:   # scored, not generated: no budget, no temperature
            sampling = {"loglikelihood": list(continuations), "picks": picks}
            max_tokens, temperature = None, 0.0
        elif stop:
            sampling["stop"] = list(stop)
        # what a baseline's answer reads of the golds is in its key: the oracle's gold; a random
        # open answer's length and its task's pool
        scope = None
        if uses == "item":
            scope = {"gold": item["answer"]}
        elif uses == "pool" and not letters and not labels:
            scope = {"gold_chars": len(item["answer"] or ""), "pool": pools[item.get("task") or ""]}
        planned.append((row, Request(
            cache_key=key(messages, sampling, scope),
            messages=tuple(messages), max_tokens=max_tokens, temperature=temperature,
            constrain_to=constrain_to, choices=letters, labels=labels, picks=picks,
            stop=stop, continuations=continuations,
        )))
    return planned


def is_base_model(spec: ModelSpec) -> bool:
    """A model asked without a chat template (a pretrained checkpoint, a completions endpoint): it
    does not stop after its answer, so it gets its setting's stop sequences."""
    if spec.engine == "vllm":
        return spec.params.get("chat_template", True) is False
    return spec.engine == "openai" and spec.params.get("chat", True) is False


def continuations_of(item: dict[str, Any], how: str) -> tuple[str, ...]:
    """What a log-likelihood setting scores after the prompt: the option letters (`letters`, and
    options written inline in the question), the option texts (`texts`), or the labels of a
    label-text classification (both). Several questions in one prompt (CP-DUE AU) are scored by
    their letters, since the prompt asks for letters."""
    letters, labels, picks = answer_space(item)
    if labels and not item["choices"]:
        return labels
    if how == "texts" and picks == 1 and item["choices"]:
        return tuple(item["choices"])
    return letters


def chosen_answer(req: Request, logprobs: tuple[float, ...], per_char: bool) -> str:
    """The answer a log-likelihood request gives: per question, the continuation with the highest
    log-probability (`per_char`: divided by its length in characters, lm-eval's acc_norm), ties to
    the first; written as the option letter (the label for label-text classification), the letters
    of several questions one after another."""
    answers = req.choices if req.choices and len(req.choices) == len(req.continuations) else req.continuations
    n = len(req.continuations)
    lengths = [len(c) for c in req.continuations] if per_char else None
    return "".join(answers[best_option(logprobs[start:start + n], lengths)] for start in range(0, len(logprobs), n))


def answer_space(item: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """An item's option letters, its label texts, and how many answers its prompt asks for."""
    meta = item["metadata"]
    # several single-choice questions in one prompt (CP-DUE AU), answered one letter each
    picks = len(meta.get("questions") or ()) or 1
    n_options = len(item["choices"]) if item["choices"] is not None else 0
    if picks > 1:
        n_options = int(meta.get("options_per_question", 4))  # options inline, per question
    elif not n_options and item["format"] in ("mcq_single", "mcq_multi"):
        n_options = 4  # options inline in the question text
    return tuple(OPTION_LETTERS[:n_options]), tuple(meta.get("labels", ())), picks


def open_pools(items: Iterable[dict[str, Any]]) -> dict[str, Pool]:
    """Per task, the characters of the golds of its open items (no letters, no labels), each item
    once: what the random baseline draws an open answer from."""
    golds: dict[str, list[str | None]] = {}
    for item in items:
        if _is_open(item):
            golds.setdefault(item.get("task") or "", []).append(item["answer"])
    return {task: gold_pool(answers) for task, answers in golds.items()}


def model_inputs(items: pd.DataFrame, uses: str | None) -> pd.DataFrame:
    """What a model's answers read of its benchmark's items (`plan`, `give_golds`): each item's id,
    content hash, task, format, options and metadata, and the gold only where the answers read it
    (`uses`, from gold_use): every gold for the oracle ("item"), the open items' golds for the
    random baseline ("pool"), none for a served model. The responses read this and not the items,
    so a corrected gold changes what a served model was asked by neither wenheng's rule nor
    Dagster's."""
    asked = records(items[list(MODEL_INPUTS.names)])
    for item in asked:
        if uses != "item" and (uses != "pool" or not _is_open(item)):
            item["answer"] = None
    return to_frame(asked, MODEL_INPUTS)


def _is_open(item: dict[str, Any]) -> bool:
    """An item answered in free text, not by an option letter or a label."""
    letters, labels, _ = answer_space(item)
    return not letters and not labels


def _asked(rows: Iterable[dict[str, Any]], items_by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The items the rows ask, each once."""
    return [items_by_id[item_id] for item_id in dict.fromkeys(row["item_id"] for row in rows)]


def give_golds(engine: Any, planned: list[tuple[dict[str, Any], Request]],
               items_by_id: dict[str, dict[str, Any]]) -> Any:
    """`engine`, handed the gold behind each planned cache key if it is a baseline that answers from
    the gold (one with a `use_golds` hook). A real engine has no such hook: it is returned as is and
    never sees a gold."""
    use_golds = getattr(engine, "use_golds", None)
    if use_golds is not None:
        pools = open_pools(_asked((row for row, _ in planned), items_by_id)) \
            if gold_use(engine.identity()) == "pool" else None   # the pools the keys' digests are of
        use_golds({req.cache_key: items_by_id[row["item_id"]]["answer"] for row, req in planned},
                  {req.cache_key: items_by_id[row["item_id"]].get("task") or "" for row, req in planned}, pools)
    return engine


def _answered_at(comp: Completion, now: datetime) -> datetime:
    """When the answer was first given: the cache's stamp for an answer served from it, else now."""
    if comp.created_at:
        try:
            return datetime.fromisoformat(comp.created_at).astimezone(UTC)
        except ValueError:
            pass
    return now


def response_rows(model: str, planned: list[tuple[dict[str, Any], Request]],
                  completions: dict[str, Completion]) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    rows = []
    for row, req in planned:
        comp = completions[req.cache_key]
        text, numbers = comp.text, None
        if comp.logprobs is not None and not comp.error:   # a scored answer: the best option, and the numbers
            per_char = protocol(row["benchmark"]).settings[row["setting"]].loglikelihood == "texts"
            text, numbers = chosen_answer(req, comp.logprobs, per_char), list(comp.logprobs)
        rows.append({
            "item_id": row["item_id"], "benchmark": row["benchmark"], "variant": row["variant"],
            "setting": row["setting"], "model": model, "prompt_hash": row["prompt_hash"],
            "cache_key": req.cache_key, "max_tokens": req.max_tokens, "text": text,
            "finish_reason": comp.finish_reason, "tokens_in": comp.tokens_in, "tokens_out": comp.tokens_out,
            "latency_s": comp.latency_s, "error": comp.error, "created_at": _answered_at(comp, now),
            "stop": list(req.stop) or None, "continuations": list(req.continuations) or None,
            "logprobs": numbers,
        })
    return rows
