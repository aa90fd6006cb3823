"""Judging one partition's responses (benchmark x evaluated model): route each response with its
card, render the judge prompt, send it through the engine layer and the response cache, read the
verdict, retry unreadable ones with a reminder, and return one row per routed response.

Cache keys are the engine layer's own (`pipeline.engines.cache.cache_key`): the judge's model
name and engine identity, the rendered prompt (which holds the question, the gold and the
response) and the sampling (temperature 0, max_tokens, the structured-output schema). So a
re-run with nothing changed sends nothing; a changed answer, gold or judge prompt sends exactly
the affected items; a retry appends a reminder, so its key is new too. Judge errors are not
cached (the response cache never stores errors): the next run sends them again."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipeline.benchmarks import card
from pipeline.engines import Engine, Request
from pipeline.engines.cache import ResponseCache, cache_key, run_with_cache
from pipeline.judge.prompts import OFFICIAL, Judged, NotJudged, PromptSet, load_card_prompts, load_official
from pipeline.judge.verdicts import (
    CHOICES,
    REASON_CHARS,
    REPEAT_REASON_CHARS,
    SCHEMAS,
    Unparseable,
    Verdict,
    parse,
    schema,
)
from pipeline.redact import redact

if TYPE_CHECKING:   # the configuration is read above the judge, which only takes its entries
    from pipeline.config import JudgeSpec

RESPONSE_KEYS = ("item_id", "benchmark", "variant", "setting", "model")
TEXT_KEPT = 300   # characters of a failed attempt's text kept in details


@dataclass
class JudgeStats:
    routed: int = 0           # responses the card sends to the judge
    judged: int = 0           # ... that got a readable verdict
    calls: int = 0            # judge prompts asked (all attempts), from the cache or sent
    cache_hits: int = 0
    sent: int = 0
    retries: int = 0          # attempts after the first
    unparseable: int = 0      # null after every attempt
    errors: int = 0           # the judge engine failed (not cached: sent again next run)
    skipped: int = 0          # routed but not judgeable: no response, no gold, no prompt


@dataclass
class _Pending:
    response: dict[str, Any]
    judged: Judged
    failures: list[dict[str, str]] = field(default_factory=list)


def prompt_set(spec: JudgeSpec) -> PromptSet:
    """The prompts a judge configuration asks with: its card's judge.yaml, with the official
    file's prompts when `prompts: {official: ...}`."""
    official = load_official(spec.official, spec.benchmark) if spec.prompts == OFFICIAL and spec.official else None
    return PromptSet(load_card_prompts(card(spec.benchmark).judge_file), official)


def judge_identity(spec: JudgeSpec, engine: Engine) -> dict[str, Any]:
    return {"model": spec.model, "engine": engine.identity()}


def sampling(spec: JudgeSpec, score_type: str, temperature: float = 0.0, seed: int | None = None,
             reason_chars: int = REASON_CHARS) -> dict[str, Any]:
    """The sampling part of a judge call's cache key (and what the request carries)."""
    params: dict[str, Any] = {"temperature": temperature, "max_tokens": spec.max_tokens}
    if spec.structured_output:
        if score_type in CHOICES:
            params["choice"] = list(CHOICES[score_type])
        elif score_type in SCHEMAS:
            params["json_schema"] = schema(score_type, reason_chars)
    if seed is not None:
        params["seed"] = seed
    return params


def request(spec: JudgeSpec, identity: Mapping[str, Any], score_type: str, text: str,
            temperature: float = 0.0, seed: int | None = None, reason_chars: int = REASON_CHARS) -> Request:
    params = sampling(spec, score_type, temperature, seed, reason_chars)
    messages = ({"role": "user", "content": text},)
    return Request(cache_key=cache_key(spec.model, dict(identity["engine"]), messages, params), messages=messages,
                   max_tokens=spec.max_tokens, temperature=temperature,
                   constrain_to=tuple(params.get("choice", ())), json_schema=params.get("json_schema"), seed=seed)


def with_reminder(prompts: PromptSet, judged: Judged, attempt: int) -> str:
    """The prompt of attempt `attempt` (1: as rendered; later: the type's reminder appended)."""
    return judged.text if attempt == 1 else f"{judged.text}\n\n{prompts.reminder(judged.score_type, attempt)}"


def judge_responses(spec: JudgeSpec, prompts: PromptSet, engine: Engine, responses: Iterable[Mapping[str, Any]],
                    items_by_id: Mapping[str, Mapping[str, Any]], cache: ResponseCache,
                    log: Callable[[str], None] = lambda _: None) -> tuple[list[dict[str, Any]], JudgeStats]:
    """One schema.JUDGEMENTS row per response the card routes to the judge."""
    responses = list(responses)
    identity = judge_identity(spec, engine)
    stats = JudgeStats()
    rows, pending = _route(prompts, responses, items_by_id, _base(spec, prompts, identity), stats)
    for attempt in range(1, spec.retries + 2):
        if not pending:
            break
        pending = _attempt(spec, prompts, engine, identity, cache, log, pending, attempt, rows, stats)
    order = {tuple(r[k] for k in RESPONSE_KEYS): n for n, r in enumerate(responses)}
    rows.sort(key=lambda r: order.get(tuple(r[k] for k in RESPONSE_KEYS), len(order)))
    return rows, stats


def _route(prompts: PromptSet, responses: list[Mapping[str, Any]], items_by_id: Mapping[str, Mapping[str, Any]],
           base: Mapping[str, Any], stats: JudgeStats) -> tuple[list[dict[str, Any]], list[_Pending]]:
    """The responses the card routes to the judge: a row at once for each that cannot be judged
    (no response, no gold, no prompt), the others pending."""
    rows: list[dict[str, Any]] = []
    pending: list[_Pending] = []
    for response in responses:
        item = items_by_id[response["item_id"]]
        head = {k: response[k] for k in RESPONSE_KEYS} | base
        prepared = prompts.prepare(item, response.get("text") or "")
        if prepared is None:
            continue
        stats.routed += 1
        reason = None
        if response.get("error") or response.get("text") is None:
            reason = f"no response: {redact(response.get('error')) or 'missing'}"
        elif not item.get("answer"):
            reason = "no gold answer (withheld by the benchmark)"
        elif isinstance(prepared, NotJudged):
            reason = prepared.reason
        if reason is not None:
            stats.skipped += 1
            rows.append(_row(head, prepared.score_type, None, 0, None, None, reason))
            continue
        pending.append(_Pending(head, prepared))
    return rows, pending


def _attempt(spec: JudgeSpec, prompts: PromptSet, engine: Engine, identity: Mapping[str, Any], cache: ResponseCache,
             log: Callable[[str], None], pending: list[_Pending], attempt: int, rows: list[dict[str, Any]],
             stats: JudgeStats) -> list[_Pending]:
    """Attempt `attempt` (1, 2, ...) of the pending judgements: a row in `rows` for each verdict read,
    judge error, or verdict still unreadable after the last retry; returns the ones to ask again."""
    batch = [(p, request(spec, identity, p.judged.score_type, with_reminder(prompts, p.judged, attempt)))
             for p in pending]
    completions, run = run_with_cache(engine, [req for _, req in batch], cache, log=log,
                                      label=f"judge {spec.model} ({spec.benchmark})", model=spec.model)
    stats.calls += run.requested
    stats.cache_hits += run.cache_hits
    stats.sent += run.sent
    stats.retries += len(batch) if attempt > 1 else 0
    still: list[_Pending] = []
    for p, req in batch:
        done = completions[req.cache_key]
        if done.error:
            stats.errors += 1
            rows.append(_row(p.response, p.judged.score_type, p.judged, attempt, req.cache_key, done.text,
                             f"judge error: {redact(done.error)}", failures=p.failures, messages=req.messages))
            continue
        try:
            verdict = parse(p.judged.score_type, done.text)
        except Unparseable as exc:
            p.failures.append({"text": (done.text or "")[:TEXT_KEPT], "error": str(exc)})
            if attempt <= spec.retries:
                still.append(p)
            else:
                stats.unparseable += 1
                rows.append(_row(p.response, p.judged.score_type, p.judged, attempt, req.cache_key, done.text,
                                 f"unparseable verdict after {attempt} attempts: {exc}", failures=p.failures,
                                 messages=req.messages))
            continue
        stats.judged += 1
        rows.append(_row(p.response, p.judged.score_type, p.judged, attempt, req.cache_key, done.text, None,
                         verdict, p.failures, messages=req.messages))
    return still


def _base(spec: JudgeSpec, prompts: PromptSet, identity: Mapping[str, Any]) -> dict[str, Any]:
    return {"judge_model": spec.model, "prompt_set": prompts.name, "prompt_version": prompts.version,
            "_identity": dict(identity)}


def _row(head: Mapping[str, Any], score_type: str, judged: Judged | None, attempts: int, key: str | None,
         text: str | None, reason: str | None, verdict: Verdict | None = None,
         failures: list[dict[str, str]] = (), messages: Sequence[Mapping[str, str]] | None = None) -> dict[str, Any]:
    row = {k: v for k, v in head.items() if not k.startswith("_")}
    details: dict[str, Any] = {"judge": head["_identity"]}
    if verdict is not None:
        details |= {"values": verdict.values, "judge_reason": verdict.reason}
        if verdict.notes:
            details["notes"] = verdict.notes
    if failures:
        details["failed_attempts"] = list(failures)
    return row | {
        "score_type": score_type, "prompt_id": judged.prompt_id if judged else None, "attempts": attempts,
        "cache_key": key, "verdict": text, "score": verdict.score if verdict else None,
        "p_all": verdict.p_all if verdict else None, "p_obtain": verdict.p_obtain if verdict else None,
        "extracted": verdict.extracted() if verdict else None, "reason": reason, "details": details,
        "messages": [dict(m) for m in messages] if messages is not None else None,
        "created_at": datetime.now(UTC),
    }


def scorer_name(row: Mapping[str, Any]) -> str:
    """`judge:scoring_points@wenheng-1`, `judge:binary@wenheng-1`, `judge:mcq_single@official-<hash>`."""
    return f"judge:{row['score_type']}@{row['prompt_set']}-{row['prompt_version']}"


def judge_score_rows(judgements: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """schema.SCORES rows (kind 'judge') from schema.JUDGEMENTS rows."""
    out = []
    for j in judgements:
        kept = j["details"] or {}
        details = {"verdict": kept.get("values"), "judge_reason": kept.get("judge_reason"),
                   "judge": kept.get("judge"), "prompt_set": j["prompt_set"],
                   "prompt_version": j["prompt_version"], "prompt_id": j["prompt_id"], "attempts": j["attempts"],
                   "cache_key": j["cache_key"]}
        if j["p_all"] is not None:
            details |= {"p_all": j["p_all"], "p_obtain": j["p_obtain"]}
        out.append({k: j[k] for k in RESPONSE_KEYS} | {
            "kind": "judge", "scorer": scorer_name(j), "score": j["score"], "reason": j["reason"],
            "extracted": j["extracted"], "judge_model": j["judge_model"], "details": details})
    return out


def combine_scores(rule_rows: list[dict[str, Any]], judgements: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every rule row (kind 'rule'), each followed by the judge's row for the same response, if any."""
    judged: dict[tuple, list[dict[str, Any]]] = {}
    for row in judge_score_rows(judgements):
        judged.setdefault(tuple(row[k] for k in RESPONSE_KEYS), []).append(row)
    out = []
    for row in rule_rows:
        out.append(row | {"kind": "rule"})
        out += judged.pop(tuple(row[k] for k in RESPONSE_KEYS), [])
    for rows in judged.values():   # a judgement without a rule row (never, unless inputs disagree)
        out += rows
    return out


def repeat_scores(spec: JudgeSpec, prompts: PromptSet, engine: Engine, picked: Iterable[Mapping[str, Any]],
                  responses: Mapping[tuple, Mapping[str, Any]], items_by_id: Mapping[str, Mapping[str, Any]],
                  cache: ResponseCache, log: Callable[[str], None] = lambda _: None,
                  ) -> tuple[dict[tuple, list[float | None]], JudgeStats]:
    """The picked judgements judged again `reliability.repeats` times at `reliability.temperature`,
    each repeat with its own sampling seed (part of its key, so repeats are cached apart and
    differ where the engine honours seeds). (item_id, variant, setting) -> one score per repeat,
    None where the verdict was unreadable or the call failed (no retries: the spread is the point).
    Under a JSON schema the repeats' reasons are capped at REPEAT_REASON_CHARS: the score comes
    first, so its spread is the same, for a fraction of the tokens."""
    rel = spec.reliability
    identity = judge_identity(spec, engine)
    stats = JudgeStats()
    batch: list[tuple[tuple, Request, str]] = []
    for j in picked:
        key = (j["item_id"], j["variant"], j["setting"])
        response = responses.get(key)
        if response is None or response.get("text") is None:
            continue
        prepared = prompts.prepare(items_by_id[j["item_id"]], response["text"])
        if not isinstance(prepared, Judged):
            continue
        for r in range(rel.repeats):
            seed = rel.seed * 1000 + r + 1
            batch.append((key, request(spec, identity, prepared.score_type, prepared.text, rel.temperature, seed,
                                       REPEAT_REASON_CHARS), prepared.score_type))
    out: dict[tuple, list[float | None]] = defaultdict(list)
    if not batch:
        return dict(out), stats
    completions, run = run_with_cache(engine, [req for _, req, _ in batch], cache, log=log,
                                      label=f"judge {spec.model} repeats ({spec.benchmark})", model=spec.model)
    stats.calls, stats.cache_hits, stats.sent = run.requested, run.cache_hits, run.sent
    for key, req, score_type in batch:
        done = completions[req.cache_key]
        try:
            out[key].append(None if done.error else parse(score_type, done.text).score)
        except Unparseable:
            out[key].append(None)
        stats.errors += bool(done.error)
    return dict(out), stats
