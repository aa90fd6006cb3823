"""Adding a benchmark is one card folder plus one registry entry: a tiny benchmark written here,
in a temp folder (registered through WENHENG_CARDS), runs through the whole graph."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import duckdb
from conftest import ROOT

CARD = '''
from pathlib import Path

from pipeline.benchmarks.benchmark_card import BenchmarkCard
from pipeline.config import SourceSpec
from pipeline.sources.jsonl import parse_files, record_id
from pipeline.sources.accounting import ParseResult
from pipeline.sources.keys import provenance


def parse(spec: SourceSpec) -> ParseResult:
    def rows(split, shown, objects, result):
        for locator, rec in objects:
            result.raw_counts[shown] += 1
            if record_id(rec) is None or rec.get("answer") not in ("A", "B"):
                result.reject(spec.benchmark, shown, locator, "needs id and answer A or B", rec)
                continue
            result.items.append({
                "item_id": f"toybench/{split}/pairs/{rec['id']}",
                **provenance(spec, shown, locator, "Apache-2.0"),
                "split": split, "task": "pairs", "task_group": "pairs", "domain": None, "capability": None,
                "format": "mcq_single", "context": None, "question": rec["question"],
                "choices": rec["options"], "answer": rec["answer"], "references": [], "metadata": {}})
    return parse_files(spec, rows)


CARD = BenchmarkCard(name="toybench", title="Toy bench", paper="written for this test",
                     folder=Path(__file__).parent, parse=parse)
'''
PROTOCOL = '''
settings:
  ask:
    template: "{question}\\n{options}\\n答案："
    max_tokens: 4
'''
ITEMS = [
    '{"id": 1, "question": "“学而时习之”出自哪部书？", "options": ["论语", "孟子"], "answer": "A"}',
    '{"id": 2, "question": "“床前明月光”的作者是谁？", "options": ["杜甫", "李白"], "answer": "B"}',
    '{"id": 3, "question": "没有答案", "options": ["甲", "乙"]}',
]


def test_a_card_from_a_temp_folder_runs_through_the_graph(tmp_path):
    card = tmp_path / "cards" / "toybench"
    card.mkdir(parents=True)
    (card / "__init__.py").write_text(textwrap.dedent(CARD), encoding="utf-8")
    (card / "protocol.yaml").write_text(PROTOCOL, encoding="utf-8")
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "test.jsonl").write_text("\n".join(ITEMS) + "\n", encoding="utf-8")
    (tmp_path / "sources.yaml").write_text("benchmarks:\n  toybench: {path: toy, version: v1}\n", encoding="utf-8")
    (tmp_path / "models.yaml").write_text(
        "models:\n  oracle: {engine: baseline, strategy: oracle}\n"
        "  random: {engine: baseline, strategy: random, seed: 0}\n", encoding="utf-8")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "WENHENG_CARDS": str(card), "DAGSTER_HOME": str(home),
           "WENHENG_LAKE": str(tmp_path / "lake"), "WENHENG_WAREHOUSE": str(tmp_path / "wh.duckdb"),
           "WENHENG_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--sources", str(tmp_path / "sources.yaml"),
                           "--models", str(tmp_path / "models.yaml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Toy bench - overall" in done.stdout   # the printed leaderboard has the new benchmark (default tables)
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM items WHERE benchmark = 'toybench'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM quarantine WHERE benchmark = 'toybench'").fetchone() == (1,)
    board = dict(con.execute("SELECT model, score FROM leaderboard WHERE benchmark = 'toybench'").fetchall())
    assert con.execute("SELECT count(*) FROM toybench_by_task").fetchone() == (2,)   # a view per table
    assert board["oracle"] == 100.0 and 0 <= board["random"] <= 100
    prompt = con.execute("SELECT messages FROM prompts WHERE item_id = 'toybench/test/pairs/2'").fetchone()[0]
    assert "A. 杜甫\\nB. 李白" in prompt
