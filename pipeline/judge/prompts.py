"""Judge prompts as data: a card's `judge.yaml` (its prompts, routes and version), or WenMind's
official Task_Score_Prompt.json read from the user's own copy, and the routing of an item to
its score type and prompt.

`judge.yaml` (see pipeline/benchmarks/wenmind/judge.yaml):
  version   names the prompt set's scorer (judge:<type>@wenheng-<version>)
  types     score type -> {template, reminder}; templates use {question} {answer} {response}
            (WenMind's names), {input} {output} {prediction} (Fùxì's) and {criteria}
  criteria  the subjective type's review points, by kind; `forms`: poem form -> kind and shape
  routes    first match wins: {when: {field: value | [values]}, type, criteria?, official?}

The official file holds 28 records {id, type, prompt} with positional `{}` slots filled as
`prompt.format(response, answer, question)`, as WenMind's LLM_Scoring.py does. `prompts: official`
downloads it once from WenMind's repository at the commit pinned below (OFFICIAL_URL), verified
against OFFICIAL_SHA256, into the download cache (pipeline/config.py, through
pipeline/sources/fetch.py); `prompts: {official: <path>}` reads the user's own copy. Its text
(CC BY-NC-SA) is never stored in wenheng's repository."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pipeline.judge.verdicts import SCORE_TYPES
from pipeline.schema import stable_hash

WENHENG, OFFICIAL = "wenheng", "official"
ROUTE_FIELDS = ("task", "task_group", "format", "split", "domain", "capability")
# The official file's first eight prompts, by id; ids 8-27 are QA-Poem-<form>.
OFFICIAL_TYPES = ("MCQ-Single", "MCQ-Multi", "QA-General", "QA-Idiom", "QA-Couplet-A", "QA-Couplet-B",
                  "QA-Couplet-C", "QA-WYW")
OFFICIAL_POEM = "QA-Poem-"
OFFICIAL_COUNT = 28
# WenMind's official judge prompts, pinned: the file as added in this commit (unchanged since, as
# of the repository's head 91e8c05), and the sha256 of its bytes.
OFFICIAL_REPO = "SCUT-DLVCLab/WenMind"
OFFICIAL_COMMIT = "586481c5202493d23e3ad8eb02550dd1ec1b858b"
OFFICIAL_FILE = "JSON/Task_Score_Prompt.json"
OFFICIAL_URL = f"https://raw.githubusercontent.com/{OFFICIAL_REPO}/{OFFICIAL_COMMIT}/{OFFICIAL_FILE}"
OFFICIAL_SHA256 = "88256fd2b05f1d86d8f8dd52055a7375284bbbaaefff4542caa7f398441eacc0"


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
    """WenMind's Task_Score_Prompt.json: the verified download or the user's copy."""

    path: Path
    prompts: tuple[str, ...]        # by id
    poem_forms: tuple[tuple[str, int], ...]   # (form, id) in id order
    version: str                    # sha256 of the file's records, first 12 hex digits


@cache
def load_official(path: Path) -> OfficialPrompts:
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PromptError(f"{path}: cannot read the official prompts: {exc}") from exc
    if not isinstance(records, list) or len(records) != OFFICIAL_COUNT:
        raise PromptError(f"{path}: expected WenMind's {OFFICIAL_COUNT} prompt records (Task_Score_Prompt.json)")
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not {"id", "type", "prompt"} <= set(record) or int(record["id"]) != index:
            raise PromptError(f"{path}: record {index} must be {{id: {index}, type, prompt}}")
        expected = OFFICIAL_TYPES[index] if index < len(OFFICIAL_TYPES) else OFFICIAL_POEM
        if not str(record["type"]).startswith(expected):
            raise PromptError(f"{path}: record {index} has type {record['type']!r}, expected {expected!r}")
    forms = tuple((str(r["type"])[len(OFFICIAL_POEM):], int(r["id"])) for r in records[len(OFFICIAL_TYPES):])
    return OfficialPrompts(path, tuple(str(r["prompt"]) for r in records), forms, stable_hash(records)[:12])


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
            text = template.format(fields["response"], fields["answer"], fields["question"])
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
