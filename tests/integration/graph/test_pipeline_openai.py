"""Every benchmark's protocols end to end through an OpenAI-compatible endpoint (the loopback
server from pipeline/testing/openai_server.py, with faults), next to the baselines."""

from __future__ import annotations

import duckdb
from conftest import ROOT, write_yaml

from pipeline import benchmarks
from pipeline.prompts import protocol
from pipeline.runner import run_pipeline
from pipeline.testing.openai_server import Fault, OpenAIServer

BENCHMARKS = list(benchmarks.names())


def test_openai_endpoint_runs_every_protocol(workdir, monkeypatch):
    every_setting = "".join(f"      {b}: [{', '.join(protocol(b).settings)}]\n" for b in BENCHMARKS)
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
{every_setting}  oracle: {{engine: baseline, strategy: oracle}}
""")
        monkeypatch.setenv("WENHENG_MODELS", str(models))
        monkeypatch.setenv("WENHENG_SOURCES", str(ROOT / "data" / "sources.yaml"))
        summary = run_pipeline(BENCHMARKS, ["served", "oracle"], log=lambda _: None)
        assert summary.ok
        answered = sum(server.successes.values())
    sent = sum(summary.metadata("responses", f"{b}|served")["prompts_sent"] for b in BENCHMARKS)
    assert answered == sent > 150  # retried calls still produced exactly one answer each
    with duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True) as con:
        settings = {(b, s) for b, s in con.execute(
            "SELECT DISTINCT benchmark, setting FROM responses WHERE model = 'served'").fetchall()}
        assert settings == {(b, s) for b in BENCHMARKS for s in protocol(b).settings}
        errors, rows = con.execute(
            "SELECT count(error), count(*) FROM responses WHERE model = 'served'").fetchone()
        assert errors == 0 and rows == con.execute(
            "SELECT count(*) FROM prompts WHERE variant = 'original'").fetchone()[0]
        constrained = con.execute("""SELECT count(*) FROM responses WHERE model = 'served'
            AND setting = 'zero_shot_ao_constrained' AND text NOT IN ('A', 'B', 'C', 'D')""").fetchone()[0]
        assert constrained == 0  # the server honoured structured_outputs.choice
        assert con.execute("SELECT count(*) FROM leaderboard WHERE model = 'served'").fetchone()[0] >= 5
