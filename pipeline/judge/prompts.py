"""Judge prompts as data: a card's `judge.yaml` (its prompts, routes and version), or the official
prompt file a card pins (read from the user's own copy or a verified download), and the routing
of an item to its score type and prompt.

`judge.yaml` (see pipeline/benchmarks/wenmind/judge.yaml):
  version   names the prompt set's scorer (judge:<type>@wenheng-<version>)
  types     score type -> {template, reminder}; templates use {question} {answer} {response}
            (WenMind's names), {input} {output} {prediction} (Fùxì's) and {criteria}
  criteria  the subjective type's review points, by kind; `forms`: poem form -> kind and shape
  routes    first match wins: {when: {field: value | [values]}, type, criteria?, official?}

An official prompt file is a benchmark's own: its card declares `OFFICIAL_JUDGE_PROMPTS` (an
`OfficialSource`: where the file is pinned, its sha256, and the reader of its format), and the
registry hands it here (`pipeline.benchmarks.hooks`); WenMind's is
pipeline/benchmarks/wenmind/official_prompts.py. `OFFICIAL_REPO`, `OFFICIAL_COMMIT`,
`OFFICIAL_FILE`, `OFFICIAL_URL`, `OFFICIAL_SHA256` and `load_official` name the pin and reader of
the card that declares one (pipeline/config/judges.py reads them for `prompts: official`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pipeline import benchmarks
from pipeline.judge.verdicts import SCORE_TYPES

WENHENG, OFFICIAL = "wenheng", "official"
ROUTE_FIELDS = ("task", "task_group", "format", "split", "domain", "capability")
OFFICIAL_HOOK = "OFFICIAL_JUDGE_PROMPTS"   # a card's hook: its OfficialSource (pipeline/benchmarks/__init__.py)


class PromptError(ValueError):
    """A judge prompt file is malformed; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Judged:
    """One item's judge prompt: the score type, which prompt (the type's name, or the official
    id), and the rendered text."""

    score_type: str
    prompt_id: str
    text: str


@dataclass(frozen=True)
class NotJudged:
    """An item routed to the judge that cannot be judged (its null score's reason)."""

    score_type: str
    reason: str


@dataclass(frozen=True)
class CardPrompts:
    """A card's judge.yaml, validated."""

    path: Path
    version: str
    types: Mapping[str, Mapping[str, str]]
    criteria: Mapping[str, str]
    forms: Mapping[str, Mapping[str, str]]
    routes: tuple[Mapping[str, Any], ...]

    @property
    def supports_official(self) -> bool:
        return all("official" in route for route in self.routes)

    def route(self, item: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The first route whose `when` matches the item; None: the judge does not score it."""
        for route in self.routes:
            if all(_matches(item.get(name), wanted) for name, wanted in (route.get("when") or {}).items()):
                return route
        return None

    def form_of(self, question: str | None) -> str | None:
        """The first poem form (in `forms` order, WenMind's) the question names."""
        return next((form for form in self.forms if form in (question or "")), None)

    def criteria_for(self, route: Mapping[str, Any], item: Mapping[str, Any]) -> str:
        key = route.get("criteria")
        if key is None:
            return ""
        if key == "form":
            form = self.form_of(item.get("question"))
            if form is None:
                return self.criteria["poem"]
            spec = self.forms[form]
            return self.criteria[spec["kind"]].format(form=form, shape=spec.get("shape", ""))
        return self.criteria[key]


def _matches(value: Any, wanted: Any) -> bool:
    return value in wanted if isinstance(wanted, list) else value == wanted


@cache
def load_card_prompts(path: Path) -> CardPrompts:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PromptError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(data, dict):
        raise PromptError(f"{path}: expected a mapping")
    version = data.get("version")
    if not isinstance(version, (str, int)) or str(version) == "":
        raise PromptError(f"{path}: version: a non-empty version is required")
    types = data.get("types") or {}
    for name, spec in types.items():
        if name not in SCORE_TYPES:
            raise PromptError(f"{path}: types.{name}: unknown score type; expected one of {SCORE_TYPES}")
        if not isinstance(spec, dict) or not isinstance(spec.get("template"), str):
            raise PromptError(f"{path}: types.{name}: needs a template")
        if "{attempt}" not in str(spec.get("reminder", "")):
            raise PromptError(f"{path}: types.{name}.reminder: needs {{attempt}}, so each retry sends a new prompt")
    criteria = data.get("criteria") or {}
    forms = data.get("forms") or {}
    for form, spec in forms.items():
        if not isinstance(spec, dict) or spec.get("kind") not in criteria:
            raise PromptError(f"{path}: forms.{form}: needs a kind that names one of criteria")
    routes = tuple(data.get("routes") or ())
    if not routes:
        raise PromptError(f"{path}: routes: at least one route is required")
    for n, route in enumerate(routes):
        where = f"{path}: routes[{n}]"
        if not isinstance(route, dict) or route.get("type") not in types:
            raise PromptError(f"{where}: type must name one of types ({', '.join(types)})")
        unknown = set(route.get("when") or {}) - set(ROUTE_FIELDS)
        if unknown:
            raise PromptError(f"{where}: when: unknown item fields {sorted(unknown)}; expected some of {ROUTE_FIELDS}")
        key = route.get("criteria")
        if key is not None and key != "form" and key not in criteria:
            raise PromptError(f"{where}: criteria {key!r} is not defined under criteria")
        if key == "form" and "poem" not in criteria:
            raise PromptError(f"{where}: criteria: form needs a `poem` criteria for questions naming no form")
    return CardPrompts(path, str(version), types, criteria, forms, routes)


@dataclass(frozen=True)
class OfficialPrompts:
    """An official prompt file, read by its card's reader: the verified download or the user's copy."""

    path: Path
    prompts: tuple[str, ...]        # by id
    poem_forms: tuple[tuple[str, int], ...]   # (form, id) in id order
    version: str                    # sha256 of the file's records, first 12 hex digits
    slots: tuple[str, ...]          # the item fields that fill its positional `{}` slots, in order


@dataclass(frozen=True)
class OfficialSource:
    """Where a benchmark's official prompt file is pinned (a repository's file at a commit, and
    the sha256 of its bytes) and the reader of its format: a card's `OFFICIAL_JUDGE_PROMPTS`."""

    repo: str
    commit: str
    file: str
    sha256: str
    load: Callable[[Path], OfficialPrompts]

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.file}"


def official_source(bench: str | None = None) -> OfficialSource:
    """The official prompt file `bench`'s card pins; without `bench`, that of the one card that
    pins any (`prompts: official` in models.yaml names no benchmark's file)."""
    declared = benchmarks.hooks(OFFICIAL_HOOK)
    if bench is not None:
        if bench not in declared:
            raise PromptError(f"the {bench} card pins no official judge prompts")
        return declared[bench]
    if len(declared) != 1:
        raise PromptError(f"expected one card with official judge prompts, found {sorted(declared) or 'none'}")
    return next(iter(declared.values()))


def load_official(path: Path, bench: str | None = None) -> OfficialPrompts:
    """The official prompt file at `path`, read by the reader of the card that pins it."""
    return official_source(bench).load(path)


# The pin of the card's official file, by the names pipeline/config/judges.py reads (`OFFICIAL_URL`, ...).
_PINNED = {"OFFICIAL_REPO": "repo", "OFFICIAL_COMMIT": "commit", "OFFICIAL_FILE": "file",
           "OFFICIAL_URL": "url", "OFFICIAL_SHA256": "sha256"}


def __getattr__(name: str) -> Any:
    if name in _PINNED:
        return getattr(official_source(), _PINNED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PromptSet:
    """What the judge of one benchmark is asked: the card's routes with either the card's own
    templates (`wenheng`) or the official file's prompts (`official`)."""

    def __init__(self, card_prompts: CardPrompts, official: OfficialPrompts | None = None):
        self.card = card_prompts
        self.official = official
        self.name = OFFICIAL if official else WENHENG
        self.version = official.version if official else card_prompts.version

    def label(self) -> str:
        """`wenheng-1`, `official-<hash>`: the scorer's version."""
        return f"{self.name}-{self.version}"

    def prepare(self, item: Mapping[str, Any], response: str) -> Judged | NotJudged | None:
        """The judge prompt for one response; None when the card does not route the item to the judge."""
        route = self.card.route(item)
        if route is None:
            return None
        score_type = route["type"]
        fields = _fields(item, response)
        if self.official:
            prompt_id = route["official"]
            if prompt_id == "form":
                form = next((f for f, _ in self.official.poem_forms if f in (item.get("question") or "")), None)
                if form is None:
                    return NotJudged(score_type, "no official prompt: the question names none of its poem forms")
                prompt_id = dict(self.official.poem_forms)[form]
            template = self.official.prompts[int(prompt_id)]
            text = template.format(*(fields[slot] for slot in self.official.slots))
            return Judged(score_type, str(prompt_id), text)
        criteria = self.card.criteria_for(route, item)
        text = self.card.types[score_type]["template"].format(**fields, criteria=criteria)
        prompt_id = score_type if route.get("criteria") is None else f"{score_type}/{route['criteria']}"
        if route.get("criteria") == "form":
            prompt_id += f"/{self.card.form_of(item.get('question')) or 'poem'}"
        return Judged(score_type, prompt_id, text)

    def reminder(self, score_type: str, attempt: int) -> str:
        """Appended to the prompt for retry `attempt` (2, 3, ...): wenheng's words, whichever set."""
        return self.card.types[score_type]["reminder"].format(attempt=attempt)


def _fields(item: Mapping[str, Any], response: str) -> dict[str, str]:
    question = item.get("question") or ""
    if item.get("context"):
        question = f"{item['context']}\n{question}"
    answer = item.get("answer") or ""
    return {"question": question, "answer": answer, "response": response,
            "input": question, "output": answer, "prediction": response}
