"""Reading and validating data/sources.yaml and data/models.yaml, with errors that say what to fix.

Each file is parsed into typed entries (pydantic models that refuse unknown keys; each key and
default written once, in its model) and every problem of a file is one line naming the file, the
key path, the value and what is expected, all reported together as one ConfigError.

    problems.py      ConfigError; pydantic's errors as one line each
    entries.py       the typed entry base and value types, worded for those lines
    yaml_loading.py  UTF-8, YAML, no key given twice
    sources.py       sources.yaml: SourceSpec, load_sources, load_duplicate_policy, load_dedup_params
    models.py        models.yaml `models:`: ModelSpec, engine parameters from the engines' constructors
    judges.py        models.yaml `judges:`: JudgeSpec, ReliabilitySpec, the official prompts' pin
    loading.py       load_models, load_judges, load_config (both files, before any stage)
"""

from pipeline.config.judges import JudgeSpec, ReliabilitySpec, ValiditySpec, judge_warnings
from pipeline.config.loading import load_config, load_judges, load_models
from pipeline.config.models import ENGINES, MODEL_NAME, PARAM_RULES, ModelSpec, is_demo_judge
from pipeline.config.problems import ConfigError
from pipeline.config.sources import SourceSpec, load_dedup_params, load_duplicate_policy, load_sources
from pipeline.config.yaml_loading import load_yaml

__all__ = ["ENGINES", "MODEL_NAME", "PARAM_RULES", "ConfigError", "JudgeSpec", "ModelSpec", "ReliabilitySpec",
           "SourceSpec", "ValiditySpec", "is_demo_judge", "judge_warnings", "load_config", "load_dedup_params",
           "load_duplicate_policy", "load_judges", "load_models", "load_sources", "load_yaml"]
