"""An item's identity: its `item_id` (`benchmark/split/task/key`), the provenance fields every
item carries, and content keys for files whose rows carry no id (pipeline/sources/README.md,
"Stable ids")."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: pipeline.config reaches this module (the source layout check)
    from pipeline.config import SourceSpec

CONTENT_KEY_CHARS = 12   # hex digits of sha256: 48 bits, collision-free in practice at benchmark sizes


def item_id(benchmark: str, split: str, task: str, key: Any) -> str:
    """`benchmark/split/task/key`: the key is the row's upstream id (or index, or content key),
    unique within its split and task; the last segment of the id."""
    return f"{benchmark}/{split}/{task}/{key}"


def provenance(spec: SourceSpec, source_file: str, locator: Any, default_license: str) -> dict[str, Any]:
    """The fields every item carries about where it came from."""
    return {"benchmark": spec.benchmark, "source_version": spec.version, "source_file": source_file,
            "source_locator": str(locator), "license": spec.license or default_license}


class ContentKeys:
    """Item keys for files whose rows carry no id (WYWEB): the first 12 hex digits of the SHA-256
    of the text that defines the item, so a row keeps its key when rows around it are added,
    removed or reordered, and its line number is only its `source_locator`. Rows with the same
    defining text within one scope (a split and task) are told apart by order of appearance: the
    first keeps the bare hash, later ones get `-2`, `-3`, ... One instance per parse."""

    def __init__(self) -> None:
        self._seen: Counter = Counter()

    def key(self, scope: Any, *parts: Any) -> str:
        digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()
        base = digest[:CONTENT_KEY_CHARS]
        self._seen[(scope, base)] += 1
        n = self._seen[(scope, base)]
        return base if n == 1 else f"{base}-{n}"
