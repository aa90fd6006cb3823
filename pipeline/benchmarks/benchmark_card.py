"""A benchmark card: everything that makes up one benchmark, kept in its own folder.

    pipeline/benchmarks/<name>/
      __init__.py     CARD = BenchmarkCard(...): names, paper, adapter, scorer routing
      adapter.py      the benchmark's own files -> item rows + quarantine rows
      protocol.yaml   how the benchmark asks its questions (prompt templates as data)
      judge.yaml      optional: the LLM judge's prompts, routes and version (pipeline/judge)
      tables.yaml     the tables its paper publishes (pipeline/aggregate.py computes them)
      judge.yaml      its LLM judge prompts, where its paper uses a judge
      *.sql           optional: views of its own, run after sql/

The lm-evaluation-harness habit (one folder per task holds prompt, metric and aggregation): to
add a benchmark, add a folder and one line in the registry (`pipeline/benchmarks/__init__.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class BenchmarkCard:
    name: str                       # the benchmark's id: item ids, partitions, `sources.yaml` keys
    title: str                      # as its paper writes it
    paper: str                      # citation of the paper the card follows
    folder: Path                    # the card's folder: protocol.yaml and *.sql live here
    parse: Callable[..., Any]       # SourceSpec -> pipeline.sources.accounting.ParseResult
    # Which rule scorer (pipeline/scoring/rules.py SCORERS) an item gets: looked up by task, then
    # by format; formats not named here use the scoring module's defaults.
    scorers: Mapping[str, str] = field(default_factory=dict)
    # The splits its paper evaluates (others are ingested for dedup and contamination, never
    # asked unless sources.yaml says `evaluate:`), and the splits few-shot examples come from.
    eval_splits: tuple[str, ...] = ("test",)
    exemplar_splits: tuple[str, ...] = ("dev",)
    # Optional: predictions keyed by item_id -> the benchmark's official submission object, for
    # splits whose answers are withheld (`wenheng submission <name>`).
    submission: Callable[..., Any] | None = None
    # Which score its paper reports per unit: "judge" (the LLM judge's verdict, pipeline/judge;
    # prompts and routes in the card's judge.yaml) or "rule"; one value, or a mapping by task
    # with "default". Where the judge is named but not configured (models.yaml `judges:`), or
    # did not judge the unit, the rule score stands in (sql/templates/units.sql).
    paper_scorer: str | Mapping[str, str] = "rule"

    @cached_property
    def protocol(self) -> dict[str, Any]:
        """protocol.yaml: `default_settings` and `settings` (templates, shots, budgets)."""
        path = self.folder / "protocol.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
        if not isinstance(data, dict) or not isinstance(data.get("settings"), dict) or not data["settings"]:
            raise ValueError(f"{path}: a card's protocol needs a 'settings' mapping")
        data.setdefault("default_settings", list(data["settings"])[:1])
        return data

    @property
    def sql_files(self) -> list[Path]:
        """The card's aggregation SQL, run in name order after sql/ (see pipeline/warehouse/)."""
        return sorted(self.folder.glob("*.sql"))

    def scorer_for(self, task: str, fmt: str) -> str | None:
        return self.scorers.get(task) or self.scorers.get(fmt)

    @property
    def judge_file(self) -> Path | None:
        """judge.yaml: the LLM judge's prompts, routes and version (pipeline/judge/prompts.py)."""
        path = self.folder / "judge.yaml"
        return path if path.is_file() else None

    def paper_scorer_for(self, task: str) -> str:
        if isinstance(self.paper_scorer, str):
            return self.paper_scorer
        return self.paper_scorer.get(task, self.paper_scorer.get("default", "rule"))
