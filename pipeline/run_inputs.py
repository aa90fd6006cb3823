"""What each asset of a `wenheng run` is computed from, as one fingerprint per asset, recorded
on the Dagster run that materializes it (the tag INPUTS_TAG): the runner launches no run whose
assets' fingerprints are those their latest materializations recorded (pipeline/runner.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

INPUTS_TAG = "wenheng/inputs"   # JSON: asset -> the fingerprint of the inputs the run computed it from


class Inputs:
    """What each asset of a run is computed from, as one fingerprint per asset, recorded on the
    Dagster run that materializes it (the tag INPUTS_TAG). An asset whose latest materialization
    came from a run that recorded the fingerprint it has now, and whose output is still stored,
    has nothing to do; nor has what follows it in the same run, unless something before it has.

    Every fingerprint holds wenheng's code (each file of pipeline/, assets/, resources/, sql/ and
    the extra card folders) and the settings that change outputs (_base). Besides:
      prepare      the data versions of the configuration upstream of the stage, observed here:
                   benchmark_files (the benchmark's entry in the sources file and its source
                   files), benchmark_corrections (its corrections), prompt_settings (the pairs
                   models.yaml asks, the duplicate and quality policies, the evaluated splits),
                   dedup_settings (`dedup:`) and index_settings (corpora.yaml's n-gram sizes)
      model_inputs the items' data version, and which golds the model's answers read (gold_use)
      responses    the data version of the benchmark's prompts; the content of model_inputs (ids,
                   tasks, formats, options, metadata; golds only where the answers read them: the
                   oracle's, the random baseline's open items'); the data version of model_settings,
                   observed here (the model's name, identity, sampling, variants and settings):
                   what the response cache keys hold
      judgements, scores, judge_reliability: the responses' fingerprint, the items' data version
                   (golds included), the judge's configuration
      judge_validity the items' data version and the judge's configuration
      scan         the data version of corpus_files, observed here (the corpus's entry, the
                   reference corpora's, their files: path, size, modification time; the scan
                   engine; a remote corpus is always scanned), the data versions of each
                   benchmark's items and their index
      publish      per asset, the latest materialization of everything upstream of it outside the
                   run, observations of configuration included (contamination: dedup_settings)
    and each asset's code version, as the loaded definitions state it.
    An input that cannot be read leaves the fingerprint out: the asset runs, and reports it."""

    def __init__(self, instance, defs):
        self.instance, self.defs = instance, defs   # the Definitions: their asset graph and code versions
        self._recorded: dict[str, dict[str, str]] = {}   # run id -> the fingerprints it recorded
        self._cached: dict[Any, Any] = {}
        self.findings: list[str] = []   # damaged outputs found (pipeline/lake_health.py), one line each

    def _once(self, key, compute: Callable[[], Any]) -> Any:
        if key not in self._cached:
            self._cached[key] = compute()
        return self._cached[key]

    def _base(self) -> str:
        def compute() -> str:
            from pipeline.settings import PROJECT_ROOT, settings

            s = settings()
            return _digest(_code_digest([PROJECT_ROOT / name for name in _CODE] + list(s.cards)),
                           [str(s.lake), str(s.warehouse), str(s.history), s.limit, s.max_error_rate])
        return self._once("base", compute)

    def _specs(self) -> dict:
        from pipeline import paths
        from pipeline.config import load_models

        return self._once("models", lambda: load_models(paths.models_file()))

    def _entry(self, benchmark: str) -> Any:
        """The benchmark's entry in the sources file as written (not the others', nor the file's
        own keys: those are observed as the settings that read them)."""
        from pipeline import paths
        from pipeline.config import load_yaml

        data = self._once("sources file", lambda: load_yaml(paths.sources_file()))
        return (data.get("benchmarks") or {}).get(benchmark)

    def _versioned(self, prints: dict) -> dict:
        """Each fingerprint with its asset's code version, as the loaded definitions state it."""
        graph = self.defs.resolve_asset_graph()
        return {key: _digest(value, graph.get(key).code_version) for key, value in prints.items()}

    def prepare(self, benchmark: str, keys) -> dict:
        from pipeline import paths
        from pipeline.config import load_dedup_params
        from pipeline.contamination.corpora import ngram_sizes
        from pipeline.ingest import corrections_fingerprint, source_fingerprints

        try:
            # the configuration each stage reads, observed as data: the benchmark's files and its
            # corrections, and the settings of the later stages
            observed = {
                "benchmark_files": self.observe("benchmark_files", benchmark, _digest(
                    source_fingerprints(paths.sources_file(), [benchmark])[benchmark], self._entry(benchmark))),
                "benchmark_corrections": self.observe("benchmark_corrections", benchmark,
                                                      corrections_fingerprint(paths.corrections_dir(), benchmark)),
                "prompt_settings": self.observe("prompt_settings", benchmark, self._prompt_settings(benchmark)),
                "dedup_settings": self.observe("dedup_settings", benchmark, _digest(
                    "dedup_settings", dataclasses.asdict(load_dedup_params(paths.sources_file())))),
                "index_settings": self.observe("index_settings", benchmark, _digest(
                    "index_settings", ngram_sizes(paths.corpora_file())))}
            # each stage's fingerprint holds the configuration upstream of it, and no other: the raw
            # rows are parsed from the files alone, a dedup setting leaves the variants alone
            return self._versioned({key: _digest(self._base(), "prepare", [
                (name, observed[name]) for name in self._upstream(key) if name in observed]) for key in keys})
        except Exception:  # noqa: BLE001 - the run reads the same inputs and reports the problem
            return {}

    def _upstream(self, key) -> list[str]:
        """The names of the assets upstream of `key` in the loaded definitions, the observed ones
        included (an asset selection's `upstream()` resolves to materializable assets only)."""
        return self._once(("upstream", key), lambda: sorted(
            k.to_user_string() for k in self.defs.resolve_asset_graph().get_ancestor_asset_keys(key)))

    def _prompt_settings(self, benchmark: str) -> str:
        """What the benchmark's variants and prompts read besides the items: the (variant,
        setting) pairs models.yaml asks of it, the regional variants any model asks, and the
        sources file's duplicate policy and the benchmark's quality policy and evaluated splits."""
        from pipeline import paths
        from pipeline.config import load_duplicate_policy, load_sources
        from pipeline.prompts import asked_pairs, variants_built

        specs = self._specs().values()
        source = self._once("sources", lambda: load_sources(paths.sources_file())).get(benchmark)
        return _digest("prompt_settings", sorted(asked_pairs(specs, benchmark)), variants_built(specs),
                       load_duplicate_policy(paths.sources_file()),
                       None if source is None else [source.quality, list(source.evaluate)])

    def evaluate(self, benchmark: str, model: str, keys) -> dict:
        try:
            prints = self._evaluate(benchmark, model)
            return self._versioned({key: prints[key.to_user_string()] for key in keys
                                    if key.to_user_string() in prints})
        except Exception:  # noqa: BLE001 - as in prepare
            return {}

    def _evaluate(self, benchmark: str, model: str) -> dict[str, str]:
        from pipeline import paths
        from pipeline.config import load_judges
        from pipeline.engines.baseline import gold_use
        from pipeline.engines.registry import build_engine

        specs = self._specs()
        spec, identity = specs[model], build_engine(specs[model]).identity()
        # the responses are what the response cache holds for their keys (pipeline.inference.plan):
        # the model, its identity, each prompt and its sampling, and what the answers read of the
        # items: the content of model_inputs, which holds golds only where the answers read them
        # (gold_use: the oracle every gold, the random baseline the open items')
        uses = gold_use(identity)
        items = self.data_version("items", benchmark)
        # what models.yaml asks of the model for this benchmark, observed as data (model_settings)
        asked = self.observe("model_settings", _pair(benchmark, model), _digest(
            "model_settings", model, identity, spec.sampling, list(spec.variants), spec.settings.get(benchmark)))
        responses = _digest(self._base(), "responses", self.data_version("prompts", benchmark),
                            self._model_inputs(benchmark, uses, items), asked)
        judge = self._once("judges", lambda: load_judges(paths.models_file(), specs)).get(benchmark)
        judged = None if judge is None else [repr(judge), build_engine(specs[judge.model]).identity(),
                                             specs[judge.model].sampling]
        judgements = _digest(self._base(), "judgements", responses, items, judged)
        scores = _digest(self._base(), "scores", responses, judgements, items)
        return {"model_inputs": _digest(self._base(), "model_inputs", items, uses), "responses": responses,
                "judgements": judgements, "scores": scores,
                "judge_reliability": _digest(self._base(), "judge_reliability", judgements, scores, items, judged),
                "judge_validity": _digest(self._base(), "judge_validity", items, judged)}

    def _model_inputs(self, benchmark: str, uses: str | None, version: str | None) -> str:
        """The content digest of the model_inputs the responses read (pipeline.inference.model_inputs),
        made from the items now: what that asset's data version will be."""
        import pandas as pd

        from pipeline import paths
        from pipeline.inference import model_inputs
        from pipeline.schema import MODEL_INPUTS
        from pipeline.sources.digest import frame_digest
        from resources.lake import partition_file

        return self._once(("model inputs", benchmark, uses, version), lambda: frame_digest(model_inputs(
            pd.read_parquet(partition_file(paths.lake_dir(), "items", benchmark), columns=MODEL_INPUTS.names), uses)))

    def scan(self, corpus: str, keys) -> dict:
        from pipeline import benchmarks, paths
        from pipeline.contamination.corpora import is_url, load_corpora, shard_paths
        from pipeline.settings import settings

        try:
            specs = load_corpora(paths.corpora_file(), paths.scanned_corpora_file())
            # the corpus, and the reference corpora its verdict sets apart as source
            read = [specs[corpus], *(v for k, v in sorted(specs.items()) if v.reference and k != corpus)]
            if any(is_url(path) for spec in read for path in spec.paths):
                return {}   # a remote corpus: its files are not listed before the scan
            files = [(file, stat.st_size, stat.st_mtime_ns) for spec in read for file in shard_paths(spec)
                     for stat in [os.stat(file)]]
            observed = self.observe("corpus_files", corpus, _digest(
                [spec.model_dump() for spec in read], files, settings().scan_engine))
            # what the scan reads of the items and their index: their data versions (content), as
            # Dagster's rule compares them, so a prepare that changed neither leaves the scan alone
            built = [(asset, name, self.data_version(asset, name))
                     for asset in ("items", "item_ngrams") for name in sorted(benchmarks.names())]
            value = _digest(self._base(), "scan", observed, built)
            return self._versioned(dict.fromkeys(keys, value))
        except Exception:  # noqa: BLE001 - as in prepare
            return {}

    def publish(self, keys) -> dict:
        import dagster as dg

        try:
            graph = self.defs.resolve_asset_graph()
            upstream = {key: {dg.AssetKey.from_user_string(name) for name in self._upstream(key)} - set(keys)
                        for key in keys}
            latest = {record.asset_entry.asset_key: record.asset_entry.last_materialization_storage_id
                      for record in self.instance.get_asset_records(sorted(set().union(*upstream.values())))}
            # configuration observed as data (contamination reads dedup_settings): its latest observation
            for parent in {key for key in set().union(*upstream.values()) if not graph.get(key).is_materializable}:
                records = self.instance.fetch_observations(parent, limit=1).records
                latest[parent] = records[0].storage_id if records else None
            return self._versioned({key: _digest(self._base(), key.to_user_string(), sorted(
                (parent.to_user_string(), latest.get(parent)) for parent in upstream[key])) for key in keys})
        except Exception:  # noqa: BLE001 - as in prepare
            return {}

    def observe(self, asset: str, partition_key: str, version: str) -> str:
        """Report an observation of the partition `partition_key` of the external asset `asset`
        with data version `version` when its latest observation has another: Dagster's stale rule
        then sees configuration change as wenheng does. Returns `version`."""
        import dagster as dg

        if self.observed(asset, partition_key) != version:
            self.instance.report_runless_asset_event(dg.AssetObservation(
                asset_key=asset, partition=partition_key, tags={_DATA_VERSION_TAG: version}))
            self._cached[("observed", asset, partition_key)] = version
        return version

    def observed(self, asset: str, partition_key: str) -> str | None:
        """The data version of the latest observation of the partition `partition_key` of `asset`."""
        import dagster as dg

        def fetch() -> str | None:
            latest = self.instance.fetch_observations(dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(asset), asset_partitions=[partition_key]), limit=1).records
            return latest[0].asset_observation.tags.get(_DATA_VERSION_TAG) if latest else None
        return self._once(("observed", asset, partition_key), fetch)

    def data_version(self, asset: str, partition_key) -> str | None:
        import dagster as dg

        record = self.latest(dg.AssetKey(asset), partition_key)
        return None if record is None else record.asset_materialization.tags.get(_DATA_VERSION_TAG)

    def up_to_date(self, keys, partition_key, prints: dict) -> set:
        """The assets of `keys` built from the inputs `prints` says they have now, whose output is
        still stored, with nothing upstream of them in `keys` left to do."""
        graph = self.defs.resolve_asset_graph()
        stale = {key for key in keys
                 if key not in prints or not self._built_from(graph, key, partition_key, prints[key])}
        grown = stale
        while grown:
            grown = {key for key in set(keys) - stale
                     if any(parent in stale and parent.to_user_string() not in _CONTENT_READ
                            for parent in graph.get(key).parent_keys)}
            stale |= grown
        return set(keys) - stale

    def _built_from(self, graph, key, partition_key, value: str) -> bool:
        record = self.latest(key, partition_key)
        if record is None:
            return False
        if record.run_id not in self._recorded:
            run = self.instance.get_run_by_id(record.run_id)
            try:
                self._recorded[record.run_id] = json.loads(run.tags.get(INPUTS_TAG) or "{}") if run else {}
            except ValueError:
                self._recorded[record.run_id] = {}
        recorded = self._recorded[record.run_id].get(key.to_user_string())
        return recorded == value and self.stored(graph, key, partition_key)

    def stored(self, graph, key, partition_key) -> bool:
        """Whether the asset's output is where its readers look, and undamaged: its lake file (one
        per partition), or the warehouse for the warehouse and the assets built on it. Damage found
        is a line in `findings`, once."""
        import dagster as dg

        from pipeline import lake_health, paths

        if graph.get(key).io_manager_key != "lake":
            path = paths.warehouse_file()
            finding = self._once(("warehouse", str(path)), lambda: lake_health.warehouse_finding(path))
        else:
            partition = list(partition_key.keys_by_dimension.values()) \
                if isinstance(partition_key, dg.MultiPartitionKey) else [] if partition_key is None else [partition_key]
            parts = [*key.path, *partition]
            path = paths.lake_dir().joinpath(*parts[:-1], parts[-1] + ".parquet")
            where = key.to_user_string() + (f" [{partition_key}]" if partition else "")
            finding = lake_health.lake_file_finding(path, where) if path.is_file() else None
        if finding and finding not in self.findings:
            self.findings.append(finding)
        return finding is None and path.is_file()

    def latest(self, key, partition_key):
        import dagster as dg

        records = self.instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=key, asset_partitions=None if partition_key is None else [str(partition_key)]), limit=1).records
        return records[0] if records else None


# Assets whose readers' fingerprints hold their content (responses: model_inputs'): one that runs
# again leaves its readers up to date unless its content changed, as Dagster's stale rule does.
_CONTENT_READ = frozenset({"model_inputs"})
_DATA_VERSION_TAG = "dagster/data_version"   # where Dagster keeps a materialization's data version
_CODE = ("pipeline", "assets", "resources", "sql")   # wenheng's code, beside the extra card folders


def _pair(benchmark: str, model: str) -> str:
    """The benchmark x model partition key, as Dagster writes it."""
    import dagster as dg

    return str(dg.MultiPartitionKey({"benchmark": benchmark, "model": model}))


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _code_digest(roots: list[Path]) -> str:
    """sha256 over each file under `roots` (its path and its bytes), compiled files left out."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()
