"""`wenheng cache info` and `wenheng cache prune`: answers per model, dropping a model's or the
older ones, a cache file from before the model column, and the command line's one-line mistakes."""

from __future__ import annotations

import sqlite3
from datetime import date

import pytest

from pipeline import cli
from pipeline.engines import Completion
from pipeline.engines.cache import ResponseCache
from pipeline.engines.cache_admin import UNRECORDED, info, prune


def _fill(path, model: str, n: int, start: int = 0) -> None:
    with ResponseCache(path) as cache, cache.writer(model=model) as writer:
        for i in range(start, start + n):
            writer.put(f"{model}-{i}", Completion(f"answer {i}"))


def test_info_counts_each_models_answers_and_prune_drops_them(tmp_path):
    path = tmp_path / "responses.sqlite"
    assert info(path).entries == 0   # no file yet
    _fill(path, "a", 3)
    _fill(path, "judge-x", 2)
    found = info(path)
    assert found.entries == 5 and found.bytes > 0
    assert [(m, n) for m, n, *_ in found.per_model] == [("a", 3), ("judge-x", 2)]
    assert prune(path, model="a", dry_run=True) == 3 and info(path).entries == 5
    assert prune(path, model="a") == 3
    assert [(m, n) for m, n, *_ in info(path).per_model] == [("judge-x", 2)]
    assert prune(path, before=date(2000, 1, 1)) == 0
    assert prune(path, before=date(2999, 1, 1)) == 2 and info(path).entries == 0
    with pytest.raises(ValueError):
        prune(path)


def test_a_cache_from_before_the_model_column_keeps_its_answers_unrecorded(tmp_path):
    path = tmp_path / "responses.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, text TEXT, finish_reason TEXT, tokens_in "
                   "INTEGER, tokens_out INTEGER, latency_s REAL, error TEXT, created_at TEXT)")
        db.execute("INSERT INTO responses VALUES ('old', 'x', 'stop', 1, 1, 0.1, NULL, '2025-01-01T00:00:00.000Z')")
    _fill(path, "a", 1)
    assert sorted((m, n) for m, n, *_ in info(path).per_model) == sorted([("a", 1), (UNRECORDED, 1)])
    with ResponseCache(path) as cache:
        assert cache.get_many(["old"])["old"].text == "x"
    assert prune(path, model=UNRECORDED) == 1


def test_the_commands(tmp_path, monkeypatch, capsys):
    for name, sub in [("WENHENG_CACHE", "cache"), ("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "w.duckdb")]:
        monkeypatch.setenv(name, str(tmp_path / sub))
    _fill(tmp_path / "cache" / "responses.sqlite", "gemma", 4)
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "4 answers" in out and "gemma" in out
    assert cli.main(["cache", "prune"]) == 2
    assert capsys.readouterr().err == "wenheng: cache prune: say what to drop: --model NAME, --before YYYY-MM-DD, or both\n"
    assert cli.main(["cache", "prune", "--model", "nosuch"]) == 2
    assert "no answers of model 'nosuch' in the cache (models there: gemma)" in capsys.readouterr().err
    assert cli.main(["cache", "prune", "--model", "gemma"]) == 0
    assert "dropped 4 answers of gemma" in capsys.readouterr().out
