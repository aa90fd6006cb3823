"""No API key in anything a run leaves behind, even when the endpoint echoes the request's headers
(the key among them) in its error bodies: the whole graph runs against such an endpoint, then the
warehouse, the lake, the cache, the Dagster instance and the run's output are searched for the key."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq
from conftest import ROOT, write_yaml

from pipeline.redact import MASK, redact, watch_env
from pipeline.runner import run_pipeline
from pipeline.testing.openai_server import Fault, OpenAIServer

SECRET = "sk-wenheng-test-7f3a9c2e51d84b06"
BENCHMARKS = ["wenmind", "fuxi"]


def _hits_in_files(roots: list[Path], needle: str) -> dict[str, int]:
    """Raw occurrences per file, plus the decoded text of parquet and DuckDB files (compressed
    pages would hide a key from a byte search)."""
    hits: dict[str, int] = {}
    for root in roots:
        for path in [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file()):
            count = path.read_bytes().count(needle.encode())
            if path.suffix == ".parquet":
                count += str(pq.read_table(path).to_pylist()).count(needle)
            elif path.suffix == ".duckdb":
                count += _hits_in_duckdb(path, needle)
            if count:
                hits[str(path)] = count
    return hits


def _hits_in_duckdb(path: Path, needle: str) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        columns = con.execute("""SELECT table_name, column_name FROM information_schema.columns
            WHERE data_type = 'VARCHAR' OR data_type LIKE '%JSON%' OR data_type LIKE '%STRUCT%'
            OR data_type LIKE '%MAP%' OR data_type LIKE '%[]'""").fetchall()
        return sum(con.execute(f'SELECT count(*) FROM "{table}" WHERE CAST("{column}" AS VARCHAR) LIKE ?',
                               [f"%{needle}%"]).fetchone()[0] for table, column in columns)


def test_echoed_key_is_stored_nowhere(workdir, monkeypatch, capfd):
    monkeypatch.setenv("WENHENG_TEST_KEY", SECRET)
    monkeypatch.setenv("WENHENG_MAX_ERROR_RATE", "1")  # keep the failed partitions: their errors are stored
    samples = ROOT / "data" / "samples"
    paths = {"wenmind": samples / "wenmind" / "WenMind_sample.json", "fuxi": samples / "fuxi"}
    sources = write_yaml(workdir / "sources.yaml", "benchmarks:\n" + "".join(
        f"  {b}: {{path: {paths[b]}, version: sample-1}}\n" for b in BENCHMARKS))
    # every other request gets a JSON 401 quoting the headers, the rest a plain-text 502 listing them
    odd = frozenset(range(1, 100_000, 2))
    with OpenAIServer(faults=[Fault("echo-text", times=None, requests=odd), Fault("echo", times=None)]) as server:
        models = write_yaml(workdir / "models.yaml", f"""models:
  served:
    engine: openai
    base_url: {server.base_url}
    model: {server.model}
    api_key_env: WENHENG_TEST_KEY
    max_retries: 0
    concurrency: 4
  oracle: {{engine: baseline, strategy: oracle}}
judges:
  wenmind: {{model: served, max_tokens: 64}}
""")
        monkeypatch.setenv("WENHENG_MODELS", str(models))
        monkeypatch.setenv("WENHENG_SOURCES", str(sources))
        run_pipeline(BENCHMARKS, ["served", "oracle"], log=print)
        assert f"Bearer {SECRET}" in server.authorization  # the key was really sent, and so echoed
        assert server.requests_total > 20
    out, err = capfd.readouterr()

    warehouse = workdir / "warehouse.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        masked = con.execute("SELECT count(*) FROM responses WHERE error LIKE ?", [f"%{MASK}%"]).fetchone()[0]
        judged = con.execute("SELECT count(*) FROM scores WHERE reason LIKE ?",
                             [f"judge error:%{MASK}%"]).fetchone()[0]
    assert masked > 10 and judged > 0  # the echoes were stored, with the key masked
    roots = [warehouse, workdir / "lake", workdir / "cache", workdir / "dagster_home"]
    assert _hits_in_files(roots, SECRET) == {}
    assert out.count(SECRET) == 0 and err.count(SECRET) == 0


def test_redact_by_value_and_by_header_shape(monkeypatch):
    monkeypatch.setenv("WENHENG_OTHER_KEY", "abc-secret-value-42")
    watch_env("WENHENG_OTHER_KEY")
    assert redact("quoted abc-secret-value-42 back") == f"quoted {MASK} back"
    assert redact('{"Authorization": "Bearer tok_123456"}') == f'{{"Authorization": "Bearer {MASK}"}}'
    assert redact("x-api-key: k1234; api-key=k5678") == f"x-api-key: {MASK}; api-key={MASK}"
    assert redact("{'Api-Key': 'zzzz9999'}") == f"{{'Api-Key': '{MASK}'}}"
    assert redact('\\"authorization\\": \\"Bearer qqqq1111\\"') == f'\\"authorization\\": \\"Bearer {MASK}\\"'
    assert redact(f"Authorization: Bearer {MASK}") == f"Authorization: Bearer {MASK}"
    assert redact("authorization failed for this request") == "authorization failed for this request"
    assert redact(None) is None
