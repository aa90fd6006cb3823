"""A benchmark card: everything that makes up one benchmark, kept in its own folder.

    pipeline/benchmarks/<name>/
      __init__.py     CARD = BenchmarkCard(...): names, paper, adapter, scorer routing (the
                      card's folder is this package's)
      adapter.py      the benchmark's own files -> item rows + quarantine rows (and the
                      card's `layout`: where those files lie, which splits they hold)
      protocol.yaml   how the benchmark asks its questions (prompt templates as data), read as a
                      `Protocol` (below); a setting may `extends:` another
      judge.yaml      optional: the LLM judge's prompts, routes and version (pipeline/judge)
      tables.yaml     the tables its paper publishes (pipeline/aggregate/ computes them)
      published.yaml  optional: its paper's model rows, shown beside a user's as reference rows
      *.sql           optional: views of its own, run after sql/

The lm-evaluation-harness habit (one folder per task holds prompt, metric and aggregation): to
add a benchmark, add a folder and one line in the registry (`pipeline/benchmarks/__init__.py`).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator, model_validator

from pipeline.config.entries import Entry, Flag, a_mapping, expect, null_is, typed
from pipeline.config.problems import Problems, problem, problems_at
from pipeline.config.yaml_loading import load_yaml

if TYPE_CHECKING:
    from pipeline.sources.layout import Layout

# What a setting's templates may name: the item's fields (pipeline/prompts.py fills them in)
TEMPLATE_FIELDS = ("question", "context", "options", "topic", "examples")
EXAMPLE_FIELDS = ("n", "question", "options", "answer", "explanation")   # one few-shot example's
DEFAULT_MAX_TOKENS = 256   # a setting's budget where it names none (null: none of its own)
LOGLIKELIHOOD = ("letters", "texts")   # what a log-likelihood setting scores as continuations
# The items a log-likelihood setting asks: one answer among given options (or labels)
LOGLIKELIHOOD_FORMATS = ("mcq_single", "classification")


def _placeholders(allowed: tuple[str, ...]):
    """A template whose {placeholders} are all in `allowed` (a typo fails when the card is read,
    not on the first item rendered)."""
    def check(text: Any) -> Any:
        if text is None:
            return text
        try:
            named = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        except ValueError as exc:   # a lone { or }
            raise problem(f"not a template ({exc}; write {{{{ and }}}} for a literal brace) (got {text!r})") from None
        unknown = sorted(n for n in named if n not in allowed)
        if unknown:
            raise problem(f"unknown placeholder {{{unknown[0]}}}; expected some of {', '.join(allowed)} "
                          f"(got {text!r})")
        return text
    return check


def _template(allowed: tuple[str, ...], nullable: bool = True) -> Any:
    return Annotated[typed(str | None if nullable else str), AfterValidator(_placeholders(allowed))]


def _one_of(allowed: tuple[str, ...], key: str):
    def check(value: Any) -> Any:
        if value is not None and value not in allowed:
            raise problem(f"{key} must be one of {', '.join(allowed)} (got {value!r})")
        return value
    return check


def _not_empty(text: str) -> str:
    if not text:
        raise problem("a stop sequence cannot be empty")
    return text


Count = typed(int, ge=0)
Budget = typed(int | None, ge=1)


class Setting(Entry):
    """One way of asking a benchmark's items: its prompt template(s), few-shot examples, budget.
    `extends: <setting>` takes every key of that setting (resolved in `Protocol`) and overrides
    the ones given; a mapping value (`templates`, `max_tokens_per_format`) is replaced whole."""

    SHAPE: ClassVar[str] = "a mapping {template or templates, shots, max_tokens, ...}"
    extends: typed(str | None) = None          # the setting this one was written on top of
    template: _template(TEMPLATE_FIELDS) = None  # one template for every item ...
    # ... or one per task or format (looked up by task, then format, then `default`)
    # (null_is last: before-validators run last one first, so null is {} before the mapping check)
    templates: Annotated[dict[str, _template(TEMPLATE_FIELDS, nullable=False)],
                         a_mapping("a mapping task or format -> template"), null_is({})] = {}
    example: _template(EXAMPLE_FIELDS) = None   # one few-shot example, {n} its number from 1
    shots: Count = 0                           # few-shot examples asked for (fewer if the prompt is too long)
    max_tokens: Budget = DEFAULT_MAX_TOKENS    # the generation budget; null: none (up to the model's context)
    max_tokens_per_format: Annotated[dict[str, Budget], a_mapping("a mapping format -> max_tokens"),
                                     null_is({})] = {}
    temperature: typed(float | None, ge=0, le=2) = None   # fixed by the protocol (wins over the model's)
    constrained_choice: Flag = False           # decode only an option letter (structured outputs)
    # Log-likelihood instead of generation (lm-eval's `multiple_choice`, OpenCompass's PPL): each
    # option is scored as a continuation of the prompt. `letters`: the option letters, the highest
    # wins (acc); `texts`: the option texts, the highest per character wins (acc_norm). Only the
    # single-answer choice items are asked (LOGLIKELIHOOD_FORMATS); not the papers' protocol.
    loglikelihood: Annotated[typed(str | None), AfterValidator(_one_of(LOGLIKELIHOOD, "loglikelihood"))] = None
    # Where a base model's answer ends (a model without a chat template runs on into the next
    # question): generation stops at the first, and the answer is read only up to it.
    stop: Annotated[list[Annotated[str, AfterValidator(_not_empty)]], expect("a list of non-empty strings"),
                    null_is([])] = []

    @model_validator(mode="after")
    def _complete(self) -> Setting:
        if bool(self.template) == bool(self.templates):
            raise problem("needs either a 'template' or 'templates' (by task or format), not both"
                          if self.template else "needs a 'template' or 'templates' (by task or format)")
        if self.shots and not self.example:
            raise problem(f"shots: {self.shots} needs an 'example' template", at=("example",))
        if self.loglikelihood and self.constrained_choice:
            raise problem("loglikelihood scores the options; constrained_choice decodes one: not both")
        return self

    def max_tokens_for(self, fmt: str) -> int | None:
        """The budget of an item of format `fmt`: its format's, else the setting's."""
        return self.max_tokens_per_format.get(fmt, self.max_tokens)


class Protocol(Entry):
    """A card's protocol.yaml: how the benchmark asks its questions, one `Setting` per setting."""

    SHAPE: ClassVar[str] = "a mapping {default_settings, settings, ...}"
    default_settings: Annotated[list[str], expect("a list of setting names")] = []   # left out: the first setting
    settings: Annotated[dict[str, Setting], a_mapping("a mapping setting name -> setting")]
    shots_per_task: Annotated[dict[str, Count], a_mapping("a mapping task -> shots"), null_is({})] = {}
    max_prompt_chars: typed(int | None, ge=1) = None   # shots are dropped from the end until the prompt fits

    @model_validator(mode="before")
    @classmethod
    def _resolve_extends(cls, data: Any) -> Any:
        """Each setting with `extends:` as the whole setting it names (chains resolved), its own
        keys over that setting's; `default_settings` left out: the first setting."""
        if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
            return data
        raw: dict[Any, Any] = data["settings"]
        resolved: dict[Any, Any] = {}
        found: list[tuple[tuple, str]] = []

        def resolve(name: Any, chain: tuple) -> Any:
            if name in resolved:
                return resolved[name]
            entry = raw[name]
            parent = entry.get("extends") if isinstance(entry, dict) else None
            if parent is None:
                resolved[name] = entry
                return entry
            if not isinstance(parent, str) or parent not in raw or parent == name or parent in chain:
                others = ", ".join(str(n) for n in raw if n != name)
                why = (f"extends itself through {' -> '.join(map(str, (*chain, name, parent)))}"
                       if parent in chain or parent == name else
                       f"unknown setting (got {parent!r}); expected one of {others}")
                found.append((("settings", name, "extends"), why))
                resolved[name] = entry
                return entry
            base = resolve(parent, (*chain, name))
            resolved[name] = {**base, **entry} if isinstance(base, dict) else entry
            return resolved[name]

        for name in raw:
            resolve(name, ())
        if found:
            raise problems_at(found)
        out = {**data, "settings": resolved}
        if out.get("default_settings") is None:
            out["default_settings"] = list(resolved)[:1]
        return out

    @model_validator(mode="after")
    def _known_defaults(self) -> Protocol:
        if not self.settings:
            raise problem("needs at least one setting", at=("settings",))
        unknown = [s for s in self.default_settings if s not in self.settings]
        if unknown:
            raise problem(f"unknown settings {unknown}; expected some of {', '.join(self.settings)}",
                          at=("default_settings",))
        if not self.default_settings:
            raise problem("names no setting; leave it out for the first one", at=("default_settings",))
        return self


def read_protocol(path: Path) -> Protocol:
    """A card's protocol.yaml as a Protocol, or a ConfigError: one line per problem, each naming
    the file and the key."""
    problems = Problems()
    data = problems.check(load_yaml, path)
    protocol = problems.validate(Protocol, data, path) if data is not None else None
    problems.raise_any()
    return protocol


@dataclass(frozen=True)
class BenchmarkCard:
    name: str                       # the benchmark's id: item ids, partitions, `sources.yaml` keys
    title: str                      # as its paper writes it
    paper: str                      # citation of the paper the card follows
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
    # Where an item's classical passage is (contamination: a corpus that holds only the passage
    # quotes it, it does not leak the item): item -> texts. None: its context
    # (pipeline/contamination/passages.py, which also has the quoted-text layouts).
    passages: Callable[[dict[str, Any]], list[str]] | None = None
    # Where its files lie under sources.yaml's `path` and which splits they hold, checked before
    # any stage (pipeline/sources/layout.py: `JSONL` for the jsonl readers); None: only that the
    # path exists.
    layout: Layout | None = None
    # The card's folder (protocol.yaml, tables.yaml, *.sql): by default the package that defines
    # CARD (set when the registry loads it, `pipeline.benchmarks._load`).
    folder: Path | None = None

    @cached_property
    def protocol(self) -> Protocol:
        """protocol.yaml: `default_settings` and `settings` (templates, shots, budgets), typed."""
        return read_protocol(self.folder / "protocol.yaml")

    @cached_property
    def tables(self):
        """tables.yaml: the tables its paper publishes, how their rows are computed
        (`pipeline.aggregate.CardTables`)."""
        from pipeline.aggregate.spec import load_tables

        path = self.folder / "tables.yaml"
        tables = load_tables(path)
        for where, task, name in _metrics_by_task(tables):
            problem = self._unsummable(task, name)
            if problem:
                raise ValueError(f"{path}: {where}: {problem}")
        return tables

    def _unsummable(self, task: str, name: str) -> str | None:
        """Why the scores of `task` cannot give metric `name`: the rule scorer the card routes the
        task to does not write the details the metric sums. None when it does, or when the task's
        scorer is chosen by format (known only once items are read)."""
        from pipeline.aggregate.metrics import metric
        from pipeline.scoring.rules import DETAILS

        scorer = self.scorers.get(task)
        missing = [key for key in metric(name).reads if scorer in DETAILS and key not in DETAILS[scorer]]
        if not missing:
            return None
        written = ", ".join(sorted(DETAILS[scorer])) or "none"
        return (f"{name!r} sums {', '.join(missing)} from each score's details, which the {scorer} scorer "
                f"({task}'s, `scorers=` in the card) does not write (it writes {written})")

    @cached_property
    def published(self):
        """published.yaml: its paper's model rows placed on the rows of `tables`
        (`pipeline.benchmarks.published.Published`), or None where the card has none."""
        from pipeline.benchmarks.published import read_published, row_labels

        return read_published(self.folder / "published.yaml", row_labels(self.tables))

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


def _metrics_by_task(tables) -> list[tuple[str, str, str]]:
    """(where in tables.yaml, task, metric name) for each metric a card's tables compute over named
    tasks: task_metrics, extra_metrics, and table and cell metrics with `where: {task: [...]}`."""
    found = [(f"task_metrics: {task}", task, name) for task, name in tables.task_metrics.items()]
    found += [(f"extra_metrics: {task}", task, name) for task, names in tables.extra_metrics.items() for name in names]
    for spec in tables.tables:
        if spec.metric:
            found += [(f"table {spec.name}: metric", str(task), spec.metric) for task in spec.where.get("task", [])]
        for label, cell in spec.cells.items():
            if cell.get("metric"):
                found += [(f"table {spec.name}: {label}: metric", str(task), cell["metric"])
                          for task in (cell.get("where") or {}).get("task", [])]
    return found
