"""Reading both configuration files, as `wenheng run` does before any stage starts."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pipeline.config.judges import JudgeSpec, judge_warnings, read_judges
from pipeline.config.models import ModelsFile, ModelSpec, api_key_set, read_models
from pipeline.config.problems import Problems
from pipeline.config.sources import SourceSpec, read_sources, source_files
from pipeline.config.yaml_loading import load_yaml


def load_models(path: Path) -> dict[str, ModelSpec]:
    """`models:` of the models file, its `judges:` checked too (a broken one fails here, not in
    the middle of a run)."""
    return _models_and_judges(path)[0]


def load_judges(path: Path, models: dict[str, ModelSpec] | None = None) -> dict[str, JudgeSpec]:
    """`judges:` of the models file: benchmark -> JudgeSpec; benchmarks not named are not judged.
    Judge calls run at temperature 0 whatever the judge model's own sampling says. `models`: the
    file's models when the caller has loaded them already. `prompts: official` downloads WenMind's
    official prompt file on the first load (then reads the verified copy in the cache)."""
    return _models_and_judges(path, models)[1]


def _models_and_judges(path: Path, models: dict[str, ModelSpec] | None = None
                       ) -> tuple[dict[str, ModelSpec], dict[str, JudgeSpec]]:
    problems = Problems()
    models_and_judges = _read_models_file(path, problems, models)
    problems.raise_any()
    return models_and_judges


def _read_models_file(path: Path, problems: Problems, models: dict[str, ModelSpec] | None = None
                      ) -> tuple[dict[str, ModelSpec] | None, dict[str, JudgeSpec]]:
    """The file's valid models (None when it cannot be read) and, when nothing else is wrong, its
    judges; each problem recorded in `problems`."""
    data = problems.check(load_yaml, path)
    if data is None:
        return None, {}
    before = len(problems.lines)
    problems.validate(ModelsFile, data, path)
    if models is None:
        models = read_models(path, data, problems)
    judges = {}
    if len(problems.lines) == before:  # a broken `judges:` fails here, not in the middle of a run
        judges = read_judges(path, data, models, problems)
    return models, judges


def load_config(sources_path: Path, models_path: Path, corrections_path: Path | None = None,
                warn: Callable[[str], None] | None = None, run_models: Collection[str] | None = None,
                run_benchmarks: Collection[str] | None = None
                ) -> tuple[dict[str, SourceSpec], dict[str, ModelSpec]]:
    """Both files and the corrections (default: `paths.corrections_dir()`), every problem of all
    of them reported together (one ConfigError, one line each): what `wenheng run` checks before
    any stage starts. Beyond the files' own text: each source's files (`source_files`) and the
    API key variable of each model to be run (`run_models`, default all) and of the judges of the
    benchmarks to be run (`run_benchmarks`, default every configured one). `warn` gets each
    warning line of a valid configuration (`judge_warnings`)."""
    from pipeline.corrections import CorrectionsError, load_corrections
    from pipeline.paths import corrections_dir

    problems = Problems()
    sources = read_sources(sources_path, problems)
    for spec in sources.values():   # the valid entries' files, whatever else is wrong
        problems.check(source_files, sources_path, spec)
    models, judges = _read_models_file(models_path, problems)
    if models is not None:
        benches = set(sources) if run_benchmarks is None else set(run_benchmarks)
        run = set(models if run_models is None else run_models) | {j.model for b, j in judges.items() if b in benches}
        for name in (m for m in models if m in run):
            problems.check(api_key_set, models_path, models[name])
    try:
        load_corrections(corrections_path or corrections_dir())
    except CorrectionsError as exc:
        problems.lines.extend(str(exc).splitlines())
    problems.raise_any()
    if warn is not None:
        for line in judge_warnings(models_path, judges, models):
            warn(line)
    return sources, models
