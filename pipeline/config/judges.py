"""`judges:` of data/models.yaml: who judges a benchmark's open answers, with which prompts.

    judges:
      wenmind:
        model: qwen-72b              # an entry of `models:` (any engine but a baseline)
        prompts: official            # wenheng (the card's judge.yaml), official (WenMind's file at
                                     # wenheng's pin), or {official: <path or url>, sha256: <hex>}
        max_tokens: 512
        retries: 2                   # extra attempts for an unreadable verdict
        structured_output: true      # JSON schema / choice where the engine supports it
        reliability: {sample_per_task: 5, repeats: 3, temperature: 0.7, seed: 0}
        validity: {sample_per_task: 8, seed: 0, min_j: 0.5}   # known-answer controls

Each key and default is written once, in `JudgeEntry`, `OfficialPrompts`, `ReliabilitySpec` and
`ValiditySpec`.
Validating an entry needs the file's models and the benchmark's card (the validation context):
the judge model must be one of them, and `prompts: official` is resolved to a verified file
(downloaded on the first load, then read from the cache)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from pipeline import benchmarks
from pipeline.config.entries import BENCHMARK, Entry, Flag, expect, not_blank, null_is, typed
from pipeline.config.models import ModelSpec, is_demo_judge
from pipeline.config.problems import EXPECTED, Problems, problem
from pipeline.config.sources import URL_SCHEMES, SourceSpec
from pipeline.paths import cache_dir
from pipeline.sources.fetch import is_archive, local_path

PROMPTS_EXPECTED = ("wenheng, official, or {official: <path or url of Task_Score_Prompt.json>, "
                    "sha256: <64 hex digits; needed for a url>}")


class ReliabilitySpec(Entry):
    """`reliability:` of a judge: how far its verdicts hold when asked again."""

    temperature: typed(float, gt=0, le=2, lead="repeats need") = 0.7   # > 0, so the repeats can disagree
    sample_per_task: typed(int, ge=0) = 5     # judged items per task that are judged again
    repeats: typed(int, ge=0) = 3             # k: how many times each is judged again (0: no repeats)
    seed: typed(int, ge=0) = 0                # the sample and the repeats' sampling seeds


class ValiditySpec(Entry):
    """`validity:` of a judge: known-answer controls, per judged task, in every run with a judge."""

    sample_per_task: typed(int, ge=0) = 8    # items per task judged with their gold, and as many negatives (0: none)
    seed: typed(int, ge=0) = 0               # which items
    min_j: typed(float, ge=0, le=1) = 0.5    # Youden's J below this (or an interval reaching 0): uninformative


class OfficialPrompts(Entry):
    """`prompts: {official: ..., sha256: ...}`: the user's copy of the official file (a path,
    relative to the models file; `sha256` checks it when given) or a url with its sha256."""

    official: Annotated[str, AfterValidator(not_blank), expect("a path or url of Task_Score_Prompt.json")]
    sha256: Annotated[str, Field(pattern=r"^([0-9a-fA-F]{64})?$"), expect("the file's sha256, 64 hex digits"),
                      AfterValidator(str.lower)] = ""


@dataclass(frozen=True)
class Prompts:
    """A judge's prompts once read: wenheng's own (the card's judge.yaml), or the official file."""

    name: str = "wenheng"
    official: Path | None = None   # the verified download or the user's copy


def _prompts(value: Any, info: ValidationInfo) -> Prompts:
    """`prompts:` -> Prompts: `official` (the pinned file), `{official: <path>}` (the user's copy;
    `sha256` checks it when given) or `{official: <url>, sha256: <hex>}`."""
    from pipeline.judge import prompts as judge_prompts

    if isinstance(value, dict):
        given = OfficialPrompts.model_validate(value)
        location, sha256, pinned = given.official, given.sha256, "sha256 in the models file"
    elif value == judge_prompts.WENHENG:
        return Prompts(judge_prompts.WENHENG)
    elif value == judge_prompts.OFFICIAL:
        location, sha256 = judge_prompts.OFFICIAL_URL, judge_prompts.OFFICIAL_SHA256
        pinned = f"wenheng's pin of {judge_prompts.OFFICIAL_REPO}@{judge_prompts.OFFICIAL_COMMIT[:7]}"
    else:
        raise PydanticCustomError(EXPECTED, f"expected {PROMPTS_EXPECTED}")
    context = info.context
    if not context["supports_official"]:
        raise problem(f"the {context['bench']} card has no routing for official prompts (got {value!r}); "
                      "expected wenheng")
    if location.startswith(URL_SCHEMES):
        official = _fetch_official(location, sha256, pinned)
    else:
        official = (context["path"].parent / location).resolve()
        if not official.is_file():
            raise problem(f"{official} not found (got {location!r}); expected a copy of Task_Score_Prompt.json, "
                          "or `prompts: official` to download WenMind's", at=("official",))
        if sha256:
            _check_sha256(official, sha256, pinned)
    try:
        judge_prompts.load_official(official)
    except judge_prompts.PromptError as exc:
        raise problem(str(exc)) from None
    return Prompts(judge_prompts.OFFICIAL, official)


def _fetch_official(url: str, sha256: str, pinned: str) -> Path:
    """The official prompt file through the sources' download machinery: fetched once into
    `<cache>/downloads/<sha256>/`, verified, then read from there with no request."""
    from pipeline.sources.fetch import ChecksumMismatch, FetchError, file_name, materialize

    if not sha256:
        raise problem(f"a url ({url}) needs the file's sha256 (64 hex digits), so a changed download is never "
                      "used by mistake", at=("sha256",))
    if is_archive(file_name(url)):
        raise problem(f"expected the JSON file itself, not an archive (got {url!r})", at=("official",))
    spec = SourceSpec(benchmark="official judge prompts", path=local_path(url, sha256, "", cache_dir() / "downloads"),
                      version=sha256[:12], url=url, sha256=sha256)
    try:
        return materialize(spec)
    except ChecksumMismatch as exc:
        raise problem(f"{exc.url} has sha256 {exc.actual}, expected {exc.expected} ({pinned}); "
                      "the download was discarded") from None
    except FetchError as exc:
        raise problem(f"{exc}; without a network, download the file yourself and set "
                      "`prompts: {official: path/to/Task_Score_Prompt.json}`") from None


def _check_sha256(path: Path, expected: str, pinned: str) -> None:
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        raise problem(f"{path} has sha256 {actual}, expected {expected} ({pinned})")


class JudgeEntry(Entry):
    """One `judges:` entry. Judge calls run at temperature 0 whatever the judge model's own sampling says."""

    SHAPE: ClassVar[str] = "a mapping {model: <a model>, prompts: wenheng | official}"
    model: str                   # an entry of `models:` (any engine but a baseline)
    prompts: Annotated[Prompts, BeforeValidator(_prompts)] = Prompts()
    max_tokens: typed(int, ge=1) = 512
    retries: typed(int, ge=0) = 2            # extra attempts for an unreadable verdict, each with a reminder
    structured_output: Flag = True           # JSON schema / choice where the engine supports it
    reliability: Annotated[ReliabilitySpec, null_is({})] = ReliabilitySpec()
    validity: Annotated[ValiditySpec, null_is({})] = ValiditySpec()

    @field_validator("model", mode="before")
    @classmethod
    def _a_model_of_the_file(cls, name: Any, info: ValidationInfo) -> Any:
        models: dict[str, ModelSpec] = info.context["models"]
        if not isinstance(name, str) or name not in models:
            raise problem(f"{name!r} is not an entry of models: ({', '.join(models)})")
        if models[name].engine == "baseline":
            raise problem(f"{name!r} is a baseline; a judge must be a real model (vllm or openai)")
        return name


@dataclass(frozen=True)
class JudgeSpec:
    """`judges.<benchmark>` in models.yaml: who judges the benchmark's open answers, with which prompts."""

    benchmark: str
    model: str                   # an entry of `models:` (any engine but a baseline)
    prompts: str = Prompts().name  # "wenheng": the card's judge.yaml; "official": `official` below
    official: Path | None = None  # WenMind's Task_Score_Prompt.json: the verified download or the user's copy
    max_tokens: int = JudgeEntry.default("max_tokens")
    retries: int = JudgeEntry.default("retries")
    structured_output: bool = JudgeEntry.default("structured_output")
    reliability: ReliabilitySpec = field(default_factory=ReliabilitySpec)
    validity: ValiditySpec = field(default_factory=ValiditySpec)


def read_judges(path: Path, data: dict[str, Any], models: dict[str, ModelSpec], problems: Problems
                ) -> dict[str, JudgeSpec]:
    """The valid entries of `judges:` (benchmarks not named are not judged); each problem
    recorded in `problems`. `prompts: official` downloads the official prompt file on the first
    load (then reads the verified copy in the cache)."""
    entries = data.get("judges")
    judges: dict[str, JudgeSpec] = {}
    for bench, entry in entries.items() if isinstance(entries, dict) else ():
        spec = _judge(path, bench, entry, models, problems)
        if spec is not None:
            judges[bench] = spec
    return judges


def _judge(path: Path, bench: Any, entry: Any, models: dict[str, ModelSpec], problems: Problems) -> JudgeSpec | None:
    from pipeline.judge.prompts import PromptError, load_card_prompts

    loc = ("judges", bench)
    if problems.validate(BENCHMARK, bench, path, loc) is None:
        return None
    judge_file = benchmarks.card(bench).judge_file
    if judge_file is None:
        problems.add(f"{path}: judges.{bench}: the {bench} card has no judge prompts (judge.yaml)")
        return None
    try:
        card_prompts = load_card_prompts(judge_file)
    except PromptError as exc:
        problems.add(f"{path}: judges.{bench}: {exc}")
        return None
    context = {"models": models, "path": path, "bench": bench, "supports_official": card_prompts.supports_official}
    parsed = problems.validate(JudgeEntry, entry, path, loc, context)
    if parsed is None:
        return None
    return JudgeSpec(bench, parsed.model, parsed.prompts.name, parsed.prompts.official, max_tokens=parsed.max_tokens,
                     retries=parsed.retries, structured_output=parsed.structured_output,
                     reliability=parsed.reliability, validity=parsed.validity)


def judge_warnings(path: Path, judges: dict[str, JudgeSpec], models: dict[str, ModelSpec]) -> list[str]:
    """One line per strong judge (any model but the bundled demo one) asked with wenheng's own
    prompts on a benchmark whose paper judged with official prompts wenheng can use (WenMind):
    its numbers will not be comparable to the paper's. Fùxì's card prompt is its paper's own, so
    it gets none; nor does the demo judge, whose rows are marked not comparable anyway."""
    from pipeline.judge.prompts import WENHENG, load_card_prompts

    lines = []
    for bench, spec in judges.items():
        card = benchmarks.card(bench)
        if spec.prompts != WENHENG or is_demo_judge(models[spec.model]) or card.judge_file is None:
            continue
        if load_card_prompts(card.judge_file).supports_official:
            lines.append(f"warning: {path}: judges.{bench}: judge {spec.model!r} asks with wenheng's own prompts "
                         f"(prompts: wenheng), so its {card.title} scores will not be comparable to the "
                         f"{card.title} paper's; set `prompts: official` to judge with {card.title}'s official prompts")
    return lines
