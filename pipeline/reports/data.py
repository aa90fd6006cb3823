"""What the reports read from the warehouse: paper-table rows and samples (one per item x model x
setting x variant, with prompt, response, gold, both scorers' scores and the judge's verdict text)."""

from __future__ import annotations

import json
import math
from typing import Any

import duckdb
import pandas as pd

from pipeline.benchmarks import cards
from pipeline.scoring.extract import AMBIGUOUS, EMPTY, NO_ANSWER, UNMATCHED

CSV_COLUMNS = ["table", "row", "model", "value", "ci_low", "ci_high", "n_items", "n_scored", "coverage", "notes",
               "metric", "split", "setting", "variant", "capped", "title", "scored_by", "comparable", "chance"]
MAX_SAMPLES = 20_000
MAX_TEXT = 6_000   # characters of one prompt, response or gold kept in the sample browser
MAX_BYTES = 30_000_000   # the sample browser's embedded text, so that a page still opens quickly
MAX_VERDICT = 4_000   # characters of the judge's verdict text kept in the sample browser


def paper_rows(con: duckdb.DuckDBPyConnection, benchmark: str | None = None) -> pd.DataFrame:
    """`paper_tables` rows in the paper's order: the card's tables in tables.yaml order, then run
    setting, row order, metric and model. Missing numbers are None."""
    where, params = ("WHERE benchmark = ?", [benchmark]) if benchmark else ("", [])
    frame = con.execute(f"SELECT * FROM paper_tables {where}", params).df()
    order = {}
    for name, card in cards().items():
        specs = card.tables.tables
        order.update({(name, spec.name): k for k, spec in enumerate(specs)})
    frame["_table_order"] = [order.get(key, len(order)) for key in zip(frame["benchmark"], frame["table_name"])]
    frame = frame.sort_values(["benchmark", "_table_order", "table_name", "split", "setting", "variant",
                               "row_order", "metric", "model"], kind="stable").drop(columns="_table_order")
    frame = frame.reset_index(drop=True)
    return frame.astype(object).where(frame.notna(), None)


def csv_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """A benchmark's paper rows in the report's CSV columns (value = `paper_tables.score`, 0-100)."""
    out = rows.rename(columns={"table_name": "table", "row_label": "row", "score": "value", "note": "notes"})
    return out.reindex(columns=CSV_COLUMNS)


# ---- samples ---------------------------------------------------------------------------------

SAMPLES_SQL = """
WITH rule AS (SELECT * FROM scores WHERE kind = 'rule'),
     judge AS (SELECT * FROM scores WHERE kind = 'judge'),
     verdicts AS (   -- the latest verdict of a response and judge: never a sample twice
       SELECT item_id, variant, setting, model, judge_model,
              arg_max(verdict, coalesce(created_at, TIMESTAMPTZ '1970-01-01 00:00:00+00')) AS verdict,
              arg_max(messages, coalesce(created_at, TIMESTAMPTZ '1970-01-01 00:00:00+00')) AS judge_messages
       FROM judgements GROUP BY ALL),
     picked AS (
       SELECT r.*, row_number() OVER (PARTITION BY r.benchmark, r.model, r.setting, r.variant
                                      ORDER BY i.task, r.item_id) AS rank_in_run
       FROM responses r JOIN items i USING (item_id)
       WHERE ($benchmarks IS NULL OR list_contains($benchmarks, r.benchmark))
         AND ($models IS NULL OR list_contains($models, r.model)))
SELECT p.item_id, p.benchmark, i.split, i.task, p.model, p.setting, p.variant,
       pr.messages, p.text AS response, p.error, p.finish_reason, p.continuations, p.logprobs,
       i.answer, i."references", i.choices,
       ru.score AS rule_score, ru.extracted AS rule_extracted, ru.reason AS rule_reason, ru.scorer AS rule_scorer,
       ju.score AS judge_score, ju.extracted AS judge_extracted, ju.reason AS judge_reason,
       ju.judge_model, jv.verdict AS judge_verdict, jv.judge_messages, p.rank_in_run
FROM picked p
JOIN items i USING (item_id)
LEFT JOIN prompts pr ON pr.item_id = p.item_id AND pr.variant = p.variant AND pr.setting = p.setting
LEFT JOIN rule ru ON ru.item_id = p.item_id AND ru.variant = p.variant AND ru.setting = p.setting
                 AND ru.model = p.model
LEFT JOIN judge ju ON ju.item_id = p.item_id AND ju.variant = p.variant AND ju.setting = p.setting
                  AND ju.model = p.model
LEFT JOIN verdicts jv ON jv.item_id = p.item_id AND jv.variant = p.variant AND jv.setting = p.setting
                     AND jv.model = p.model AND jv.judge_model = ju.judge_model
"""


# One line per response of one benchmark, every one (the browser caps, this file does not): the
# lm-evaluation-harness `samples_<task>.jsonl` habit, with both scorers and the judge's own words.
SAMPLES_JSONL_SQL = """
SELECT r.item_id, i.split, i.task, r.model, r.setting, r.variant, i.content_hash AS doc_hash, r.prompt_hash,
       i.answer_hash AS target_hash, pr.messages AS prompt, r.text AS response,
       r.error, r.finish_reason, i.answer, i."references", i.choices,
       ru.score AS rule_score, ru.extracted AS rule_extracted, ru.reason AS rule_reason, ru.scorer AS rule_scorer,
       ju.score AS judge_score, ju.extracted AS judge_extracted, ju.reason AS judge_reason, ju.judge_model,
       ju.scorer AS judge_scorer, jv.verdict AS judge_verdict, jv.messages AS judge_messages,
       r.tokens_in, r.tokens_out, r.latency_s, r.max_tokens, r.stop, r.continuations, r.logprobs
FROM responses r
JOIN items i USING (item_id)
LEFT JOIN prompts pr ON pr.item_id = r.item_id AND pr.variant = r.variant AND pr.setting = r.setting
LEFT JOIN scores ru ON ru.item_id = r.item_id AND ru.variant = r.variant AND ru.setting = r.setting
                   AND ru.model = r.model AND coalesce(ru.kind, 'rule') = 'rule'
LEFT JOIN scores ju ON ju.item_id = r.item_id AND ju.variant = r.variant AND ju.setting = r.setting
                   AND ju.model = r.model AND ju.kind = 'judge'
LEFT JOIN judgements jv ON jv.item_id = r.item_id AND jv.variant = r.variant AND jv.setting = r.setting
                       AND jv.model = r.model AND jv.judge_model = ju.judge_model
WHERE r.benchmark = $benchmark AND ($models IS NULL OR list_contains($models, r.model))
ORDER BY i.task, r.item_id, r.model, r.setting, r.variant
"""


def write_samples_jsonl(con: duckdb.DuckDBPyConnection, benchmark: str, path, models: list[str] | None = None,
                        batch: int = 5_000) -> int:
    """`samples_<benchmark>.jsonl`: every response with its prompt, gold, extracted answers, rule
    and judge scores, the judge's verdict text, tokens and latency. Returns the lines written."""
    cursor = con.execute(SAMPLES_JSONL_SQL, {"benchmark": benchmark, "models": models or None})
    names = [d[0] for d in cursor.description]
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while rows := cursor.fetchmany(batch):
            for row in rows:
                r = dict(zip(names, row))
                line = {"item_id": r["item_id"], "benchmark": benchmark, "split": r["split"], "task": r["task"],
                        "model": r["model"], "setting": r["setting"], "variant": r["variant"],
                        # lm-evaluation-harness's three hashes: the item (context, question, options),
                        # the prompt as sent, the gold (answer and references); sha256 of canonical JSON
                        "doc_hash": r["doc_hash"], "prompt_hash": r["prompt_hash"], "target_hash": r["target_hash"],
                        "prompt": _prompt_messages(r["prompt"]), "response": r["response"], "error": r["error"],
                        "finish_reason": r["finish_reason"], "gold": r["answer"],
                        "references": list(r["references"]) if r["references"] is not None else None,
                        "choices": list(r["choices"]) if r["choices"] is not None else None,
                        "rule": {"score": _none(r["rule_score"]), "extracted": r["rule_extracted"],
                                 "reason": r["rule_reason"], "scorer": r["rule_scorer"]},
                        "judge": None if r["judge_model"] is None else {
                            "model": r["judge_model"], "scorer": r["judge_scorer"], "score": _none(r["judge_score"]),
                            "extracted": r["judge_extracted"], "reason": r["judge_reason"],
                            "verdict": r["judge_verdict"], "prompt": _prompt_messages(r["judge_messages"])},
                        "status": status(r["rule_score"], r["judge_score"]),
                        "tokens_in": r["tokens_in"], "tokens_out": r["tokens_out"],
                        "latency_s": _none(r["latency_s"]), "max_tokens": r["max_tokens"],
                        "stop": _listed(r["stop"]), **_scored(r["continuations"], r["logprobs"])}
                f.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
                written += 1
    return written


def _listed(values: Any) -> list | None:
    return None if values is None else list(values)


def _scored(continuations: Any, logprobs: Any) -> dict[str, Any]:
    """A log-likelihood answer in lm-eval's shape: `arguments` (each continuation scored), `resps`
    (per continuation [[log-probability, is_greedy]]) and `filtered_resps` ([log-probability,
    is_greedy] each); is_greedy is null: wenheng does not compute it. Nothing for a generated one."""
    if logprobs is None:
        return {}
    values = [float(x) for x in logprobs]
    return {"continuations": _listed(continuations), "resps": [[[v, None]] for v in values],
            "filtered_resps": [[v, None] for v in values]}


def ranked(answer: str | None, continuations: Any, logprobs: Any) -> str:
    """A log-likelihood answer as the sample browser shows it: per question, the options ranked by
    their log-probability (and per character); `answer` is the one chosen, by the setting's rule."""
    conts, values = ([] if continuations is None else list(continuations)), [float(x) for x in logprobs]
    n = len(conts) or 1
    blocks = []
    for start in range(0, len(values), n):
        part = sorted(zip(conts, values[start:start + n]), key=lambda cv: -cv[1])
        lines = [f"{c}  {v:.3f}" + (f"  ({v / len(c):.3f} per character)" if len(c) > 1 else "")
                 for c, v in part]
        blocks.append("\n".join(lines))
    head = f"answer {answer} by log-likelihood (options ranked, log-probability in nats):"
    return "\n\n".join([head, *blocks])


# The extractor's answers for "nothing found" (pipeline/scoring/extract.py), in the browser's words
_SENTINELS = {NO_ANSWER: "no answer (the response says none is right)", AMBIGUOUS: "several or contradictory",
              UNMATCHED: "not found in the response", EMPTY: "empty response"}


def shown_extracted(value: str | None) -> str | None:
    """An extracted answer as the sample browser shows it: a judge's values (a JSON list, e.g.
    ["1"]) as text, the extractor's "nothing found" answers in English; anything else as it is."""
    if value is None:
        return None
    if value.startswith("["):
        try:
            values = json.loads(value)
        except ValueError:
            values = None
        if isinstance(values, list) and all(isinstance(v, (str, int, float)) for v in values):
            return ", ".join(str(v) for v in values) or "(none)"
    return _SENTINELS.get(value, value)


def _prompt_messages(messages: str | None) -> Any:
    """The prompt as sent: chat messages as a list, a completion prompt as its text."""
    if messages is None:
        return None
    try:
        return json.loads(messages)
    except ValueError:
        return messages


def _none(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def status(rule_score: float | None, judge_score: float | None) -> str:
    """correct / partial / wrong / unscored by the score that counts (the judge's where it judged,
    as in the paper tables), and `disagree` when rule and judge both scored and differ by half a
    point or more (one says right, the other wrong)."""
    rule_score, judge_score = _none(rule_score), _none(judge_score)
    if rule_score is not None and judge_score is not None and abs(rule_score - judge_score) >= 0.5:
        return "disagree"
    score = judge_score if judge_score is not None else rule_score
    if score is None:
        return "unscored"
    return "correct" if score >= 1 else "wrong" if score <= 0 else "partial"


def _clip(text: str | None, limit: int = MAX_TEXT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [{len(text) - limit:,} more characters: see the warehouse]"


def _prompt_text(messages: str | None) -> str | None:
    """Chat messages as `role:` blocks; a plain completion prompt as it is."""
    if messages is None:
        return None
    try:
        parsed = json.loads(messages)
    except ValueError:
        return messages
    if isinstance(parsed, list):
        return "\n\n".join(f"[{m.get('role', '?')}]\n{m.get('content', '')}" if isinstance(m, dict) else str(m)
                           for m in parsed)
    return str(parsed)


def _gold(answer: str | None, references: Any, choices: Any) -> str | None:
    parts = []
    if answer is not None:
        parts.append(answer)
    refs = [r for r in (references if references is not None else []) if r is not None and r != answer]
    if len(refs):
        parts.append("references:\n" + "\n".join(refs))
    if choices is not None and len(choices):
        parts.append("choices:\n" + "\n".join(f"{chr(65 + k)}. {c}" for k, c in enumerate(choices)))
    return "\n\n".join(parts) if parts else None


def samples(con: duckdb.DuckDBPyConnection, cap: int = MAX_SAMPLES, benchmarks: list[str] | None = None,
            models: list[str] | None = None, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The sample browser's data: `samples` (at most `cap` and about `max_bytes` of text, spread
    evenly over every benchmark x model x setting x variant run: the first of each run by task, then
    the second...), `prompts` and `golds` stored once and referenced by index, `total` (before the
    cap) and `capped`."""
    params = {"benchmarks": benchmarks or None, "models": models or None}
    total = con.execute(f"SELECT count(*) FROM ({SAMPLES_SQL})", params).fetchall()[0][0]
    rows = con.execute(f"SELECT * FROM ({SAMPLES_SQL}) ORDER BY rank_in_run, benchmark, model, setting, variant "
                       "LIMIT $cap", {**params, "cap": cap}).df()
    prompt_index: dict[str, int] = {}
    gold_index: dict[str, int] = {}
    out = []
    size = 0
    for r in rows.astype(object).where(rows.notna(), None).itertuples(index=False):   # round-robin order
        prompt = _clip(_prompt_text(r.messages)) or ""
        gold = _clip(_gold(r.answer, r.references, r.choices)) or ""
        response = _clip(r.response if r.logprobs is None else ranked(r.response, r.continuations, r.logprobs))
        verdict = _clip(r.judge_verdict, MAX_VERDICT)
        judge_prompt = _clip(_prompt_text(r.judge_messages)) if r.judge_messages else None
        size += 300 + 3 * (len(response or "") + len(verdict or "")
                           + (len(judge_prompt) if judge_prompt and judge_prompt not in prompt_index else 0)
                           + (len(prompt) if prompt not in prompt_index else 0)
                           + (len(gold) if gold not in gold_index else 0))   # UTF-8: up to 3 bytes a character
        if out and size > max_bytes:
            break
        out.append({
            "id": r.item_id, "benchmark": r.benchmark, "split": r.split, "task": r.task, "model": r.model,
            "setting": r.setting, "variant": r.variant,
            "p": prompt_index.setdefault(prompt, len(prompt_index)),
            "g": gold_index.setdefault(gold, len(gold_index)),
            "response": response, "error": _clip(r.error, 1000), "finish": r.finish_reason,
            "rule": None if r.rule_scorer is None and r.rule_score is None else {
                "score": r.rule_score, "extracted": _clip(shown_extracted(r.rule_extracted), 1000),
                "reason": _clip(r.rule_reason, 2000),
                "scorer": r.rule_scorer},
            "judge": None if r.judge_model is None and r.judge_score is None else {
                "score": r.judge_score, "extracted": _clip(shown_extracted(r.judge_extracted), 1000),
                "reason": _clip(r.judge_reason, 2000), "verdict": verdict, "model": r.judge_model,
                # the judge's prompt, stored once among the prompts (index), None before judgements kept it
                "p": None if judge_prompt is None else prompt_index.setdefault(judge_prompt, len(prompt_index))},
            "status": status(r.rule_score, r.judge_score),
        })
    out.sort(key=lambda x: (x["benchmark"], x["task"] or "", x["id"], x["model"], x["setting"], x["variant"]))
    return {"samples": out, "prompts": list(prompt_index), "golds": list(gold_index),
            "total": int(total), "capped": int(total) > len(out), "cap": cap}
