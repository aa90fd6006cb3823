"""The fuzz tests' budget and their example database, shared by every file of tests/fuzz.

`ci` (the default): 200 examples per test, first those saved in tests/fuzz/examples, the
committed example database: a failure found once (by a big run, or a local `ci` run) is saved
there and replayed by every later run until it passes. With CI=true the database is read-only (a
CI run replays, never writes into the checkout); elsewhere a new failure is written to it, to be
committed beside its fix (and pinned with @example where it reads well as one).

Determinism. Hypothesis's `derandomize=True` and `@seed` both turn the database off, so neither is
used. Instead `seeded` (an autouse fixture each fuzz module imports) seeds the random generator
Hypothesis draws a test's seed from, per test id, before the test: every run tries the same
generated examples, after those of the database. (It sets `hypothesis.core.threadlocal`'s
generator, which Hypothesis reads when no seed is given; should a Hypothesis release move it, the
fixture does nothing and the examples are random again, the database still replayed.) Under
`big` the examples are random.

`big`: WENHENG_FUZZ_EXAMPLES random examples per test (default 10,000), same database.

    WENHENG_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest tests/fuzz
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, ReadOnlyDatabase

EXAMPLES = Path(__file__).resolve().parent / "examples"
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
          HealthCheck.filter_too_much]


def database() -> ExampleDatabase:
    """The committed example database; read-only when CI=true."""
    saved = DirectoryBasedExampleDatabase(EXAMPLES)
    return ReadOnlyDatabase(saved) if os.environ.get("CI", "").lower() in ("1", "true", "yes") else saved


BIG = bool(os.environ.get("WENHENG_FUZZ_EXAMPLES"))
settings.register_profile("ci", max_examples=200, database=database(), deadline=None,
                          suppress_health_check=HEALTH, print_blob=True)
settings.register_profile("big", max_examples=int(os.environ.get("WENHENG_FUZZ_EXAMPLES") or 10_000),
                          database=database(), deadline=None, suppress_health_check=HEALTH, print_blob=True)
PROFILE = settings.get_profile("big" if BIG else "ci")


def budget(n: int | None = None) -> Callable:
    """A decorator (over @given): the profile, with at most `n` examples under `ci` (a test whose
    example costs more, a file on disk)."""
    return PROFILE if BIG or n is None else settings(PROFILE, max_examples=n)


FUZZ = budget()


@pytest.fixture(autouse=True)
def seeded(request: pytest.FixtureRequest) -> Iterator[None]:
    """The same generated examples on every `ci` run of a test (see the module's docstring)."""
    import hypothesis.core

    local = getattr(hypothesis.core, "threadlocal", None)
    if not BIG and local is not None and hasattr(local, "_hypothesis_global_random"):
        local._hypothesis_global_random = random.Random(zlib.crc32(request.node.nodeid.encode()))
    yield
