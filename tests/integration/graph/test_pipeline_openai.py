"""Every benchmark's protocols end to end through an OpenAI-compatible endpoint (the loopback
server from pipeline/testing/openai_server.py, with faults), next to the baselines."""

from __future__ import annotations

import json

import duckdb
from conftest import ROOT, write_yaml

from pipeline import benchmarks
from pipeline.prompts import protocol
from pipeline.runner import run_pipeline
from pipeline.testing.openai_server import Fault, OpenAIServer

BENCHMARKS = list(benchmarks.names())


def _settings(b: str, scored: bool) -> list[str]:
    """The benchmark's generation settings, or its log-likelihood ones."""
    return [name for name, s in protocol(b).settings.items() if bool(s.loglikelihood) == scored]


def test_openai_endpoint_runs_every_protocol(workdir, monkeypatch):
    # a chat endpoint is asked every generation setting; a completions endpoint the log-likelihood ones
    every_setting = "".join(f"      {b}: [{', '.join(_settings(b, False))}]\n" for b in BENCHMARKS)
    every_scored = "".join(f"      {b}: [{', '.join(_settings(b, True))}]\n" for b in BENCHMARKS)
    with OpenAIServer(latency_s=0.01, faults=[Fault("500", times=1, requests=frozenset({3, 7})),
                                              Fault("429", times=1, requests=frozenset({5}), retry_after=0.2)]
                      ) as server:
        models = write_yaml(workdir / "models.yaml", f"""models:
  served:
    engine: openai
    base_url: {server.base_url}
    model: {server.model}
    api_key_env: null
    chat: true
    concurrency: 8
    settings:
{every_setting}  served-base:
    engine: openai
    base_url: {server.base_url}
    model: {server.model}
    api_key_env: null
    chat: false
    settings:
{every_scored}  oracle: {{engine: baseline, strategy: oracle}}
""")
        monkeypatch.setenv("WENHENG_MODELS", str(models))
        monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
        summary = run_pipeline(BENCHMARKS, ["served", "served-base", "oracle"], log=lambda _: None)
        assert summary.ok
        answered = sum(server.successes.values())
    sent = sum(summary.metadata("responses", f"{b}|{m}")["prompts_sent"] for b in BENCHMARKS
               for m in ("served", "served-base"))
    # retried calls still produced exactly one answer each (a scored item: one call per question)
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        extra_rounds = con.execute("""SELECT coalesce(sum(rounds - 1), 0) FROM (SELECT DISTINCT cache_key,
            len(logprobs) // len(continuations) AS rounds FROM responses WHERE model = 'served-base')""").fetchone()[0]
        assert answered == sent + extra_rounds and sent > 150
        for model, scored in (("served", False), ("served-base", True)):
            settings = {(b, s) for b, s in con.execute(
                "SELECT DISTINCT benchmark, setting FROM responses WHERE model = ?", [model]).fetchall()}
            assert settings == {(b, s) for b in BENCHMARKS for s in _settings(b, scored)}
        errors, rows = con.execute(
            "SELECT count(error), count(*) FROM responses WHERE model LIKE 'served%'").fetchone()
        assert errors == 0 and rows == con.execute(
            "SELECT count(*) FROM prompts WHERE variant = 'original'").fetchone()[0]
        # a scored answer: the option with the highest log-probability (per character for _norm),
        # its numbers beside it; never a generated text
        scored = con.execute("""SELECT r.setting, r.text, r.continuations, r.logprobs, i.format, i.choices
            FROM responses r JOIN items i USING (item_id) WHERE r.model = 'served-base'""").fetchall()
        assert len(scored) > 30
        for setting, text, continuations, logprobs, fmt, choices in scored:
            assert fmt in ("mcq_single", "classification") and len(logprobs) % len(continuations) == 0
            n = len(continuations)
            per_char = setting.endswith("_norm")
            best = [max(range(n), key=lambda k: (logprobs[r + k] / (len(continuations[k]) if per_char else 1), -k))
                    for r in range(0, len(logprobs), n)]
            letters = choices and len(choices) == n
            assert text == "".join(("ABCDEFGHIJ"[k] if letters or continuations[k] in "ABCDEFGHIJ"
                                    else continuations[k]) for k in best)
        marked = con.execute("""SELECT bool_and(NOT comparable), bool_and(note LIKE '%log-likelihood%')
            FROM paper_tables WHERE model = 'served-base'""").fetchone()
        assert marked == (True, True)
        constrained = con.execute("""SELECT count(*) FROM responses WHERE model = 'served'
            AND setting = 'zero_shot_ao_constrained' AND text NOT IN ('A', 'B', 'C', 'D')""").fetchone()[0]
        assert constrained == 0  # the server honoured structured_outputs.choice
        assert con.execute("SELECT count(*) FROM leaderboard WHERE model = 'served'").fetchone()[0] >= 5
    # the report: lm-eval's resps / filtered_resps in samples_<benchmark>.jsonl, the options ranked in the browser
    from pipeline.reports import write_reports

    index = write_reports(workdir / "warehouse.duckdb", workdir / "report")
    written = (index.parent / "samples_aceval.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in written.splitlines()]
    scored_lines = [line for line in lines if line["model"] == "served-base"]
    assert scored_lines and all(len(line["resps"]) == len(line["continuations"]) == len(line["filtered_resps"])
                                and line["filtered_resps"][0][1] is None for line in scored_lines)
    assert all("resps" not in line for line in lines if line["model"] == "served")
    assert "by log-likelihood (options ranked" in (index.parent / "samples.html").read_text(encoding="utf-8")
