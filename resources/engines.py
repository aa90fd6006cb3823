"""Which engine answers for which model: models.yaml, read when a run needs it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from pipeline import paths
from pipeline.config import ModelSpec, load_models
from pipeline.engines.registry import build_engine, release_engines
from pipeline.settings import settings

if TYPE_CHECKING:
    from pipeline.engines.cache import ResponseCache


class ModelsResource(dg.ConfigurableResource):
    models_file: str = ""   # empty: data/models.yaml (or WENHENG_MODELS)
    cache_dir: str = ""     # response cache directory; empty: data/cache (or WENHENG_CACHE)

    def specs(self) -> dict[str, ModelSpec]:
        return load_models(Path(self.models_file) if self.models_file else paths.models_file())

    def spec(self, name: str) -> ModelSpec:
        specs = self.specs()
        if name not in specs:
            raise dg.Failure(f"model {name!r} is not in {self.models_file or paths.models_file()}; "
                             f"configured: {', '.join(specs)}")
        return specs[name]

    def engine(self, name: str):
        return build_engine(self.spec(name))

    def response_cache(self) -> ResponseCache:
        """The response cache, opened for a `with` block."""
        from pipeline.engines.cache import open_cache  # imported here: it imports pandas and pyarrow

        return open_cache(self.cache_dir or None)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        # After the run (in-process executor) or each step (multiprocess): the engines it loaded
        # are stopped, or their processes outlive it and keep the run's own process from exiting.
        release_engines()


class SourcesResource(dg.ConfigurableResource):
    sources_file: str = ""  # empty: data/sources.yaml (or WENHENG_SOURCES)

    def path(self) -> Path:
        return Path(self.sources_file) if self.sources_file else paths.sources_file()

    def limit(self) -> int | None:
        """At most this many evaluated items per benchmark (WENHENG_LIMIT, set by `wenheng run
        --limit`); None when unset. Read at run time, so one definitions object serves every run."""
        return settings().limit


class WarehouseResource(dg.ConfigurableResource):
    database: str = ""      # empty: data/warehouse.duckdb (or WENHENG_WAREHOUSE)

    def path(self) -> Path:
        return Path(self.database) if self.database else paths.warehouse_file()


class CorporaResource(dg.ConfigurableResource):
    """The corpora scanned for contamination: data/corpora.yaml (or WENHENG_CORPORA), plus those
    scanned from the command line."""
    corpora_file: str = ""  # empty: data/corpora.yaml (or WENHENG_CORPORA)

    def path(self) -> Path:
        return Path(self.corpora_file) if self.corpora_file else paths.corpora_file()

    def specs(self) -> dict:
        from pipeline.contamination.corpora import load_corpora

        return load_corpora(self.path(), paths.scanned_corpora_file())
