"""Reading a configuration file: UTF-8 text, valid YAML, a mapping at the top, no key given twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipeline.config.problems import ConfigError

# libyaml's parser where PyYAML was built with it: the pure-Python one is most of the 0.1 s that
# reading the configuration costs when the definitions load
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SAFE_LOADER):
    """SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last silently)."""


def _no_duplicates(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (list, dict, set)):   # YAML's `? [a, b]`: no name a setting could have
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a name or a number, not {key!r}", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}; each key may appear once per mapping", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def load_yaml(path: Path) -> dict[str, Any]:
    """The file's mapping, or a one-line ConfigError saying why there is none."""
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.load(path.read_bytes().decode("utf-8"), Loader=_UniqueKeyLoader) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level (got {type(data).__name__})")
    return data
