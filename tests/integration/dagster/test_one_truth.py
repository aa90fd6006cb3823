"""One staleness system (pipeline/staleness.py): `wenheng run` and the daemon's stale_sensor plan from
the same fingerprints, so neither repeats the other's work, a revert is a change, and a build
reached step by step, by either launcher, equals the build from scratch on the final inputs.

The daemon is played in this process: each tick evaluates the definitions' own stale_sensor, and
the runs it requests are executed with its tags and asset selections, a run key used once never
again, as the daemon's run launcher would."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest
from conftest import ROOT, write_yaml

from pipeline.definitions import defs
from pipeline.runner import run_pipeline
from pipeline.staleness import unsynced

MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n  random: {engine: baseline, strategy: random, seed: %d}\n"
# the corrections audit is left out: it is history (a correction applied once, then removed, is
# audited `reverted`), which a build from scratch never saw
CORPORA = "corpora:\n  web: {paths: [web.jsonl], fields: [title, paragraphs], id_field: id, version: one}\n"
TABLES = ("items", "responses", "scores", "judgements", "model_task_scores", "paper_tables", "corpus_overlap")
# what differs between two builds of the same inputs: when and how fast, and the runs' names
VOLATILE = ("latency", "time", "_at", "run_id", "seconds", "duration", "created", "tag")
QUESTION = "秦始皇统一六国后，在全国推行的地方行政制度是"


class Project:
    """A lake, warehouse, Dagster instance and response cache of their own; the sources, models
    and corrections files are shared (every launcher builds the same inputs)."""

    def __init__(self, root: Path, inputs: Path, monkeypatch: pytest.MonkeyPatch):
        self.root, self.inputs, self.monkeypatch = root, inputs, monkeypatch
        (root / "dagster_home").mkdir(parents=True)
        shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", root / "dagster_home" / "dagster.yaml")
        self.used: set[str] = set()   # the run keys the daemon has launched

    def enter(self) -> dg.DagsterInstance:
        for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                          ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
            self.monkeypatch.setenv(name, str(self.root / sub))
        from pipeline.definitions import export_path_defaults

        export_path_defaults()
        from pipeline.runner import _instance

        return _instance()

    def cli(self) -> list[str]:
        """`wenheng run`: the runs it launched (job [partition])."""
        self.enter()
        from pipeline import paths
        from pipeline.contamination.corpora import load_corpora

        summary = run_pipeline(["aceval"], models(self.inputs), log=lambda _: None,
                               corpora=list(load_corpora(paths.corpora_file())))   # as the CLI does
        assert summary.ok
        return sorted({m["asset"] + (f" [{m['partition']}]" if m["partition"] else "")
                       for m in summary.materializations})

    def daemon(self, most: int = 8) -> list[str]:
        """Ticks of the stale sensor (after the partition sensors), each tick's runs executed, until
        a tick requests nothing new. Returns the runs launched."""
        from assets.evaluate import benchmark_x_model
        from pipeline.definitions import corpora_sensor, defs, models_sensor, stale_sensor

        instance = self.enter()
        launched = []
        for _ in range(most):
            for sensor in (models_sensor, corpora_sensor):
                result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
                for request in getattr(result, "dynamic_partitions_requests", None) or []:
                    instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
            result = stale_sensor(dg.build_sensor_context(instance=instance, definitions=defs))
            requests = [r for r in (result if isinstance(result, list) else []) if r.run_key not in self.used]
            if not requests:
                return launched
            for request in requests:
                self.used.add(request.run_key)
                key = request.partition_key
                partition = benchmark_x_model.get_partition_key_from_str(key) if request.job_name == "evaluate" else key
                run = defs.resolve_job_def(request.job_name).execute_in_process(
                    instance=instance, partition_key=partition, asset_selection=list(request.asset_selection),
                    tags=request.tags, raise_on_error=False)
                assert run.success, (request.job_name, key)
                launched.append(f"{request.job_name} [{key}]" if key else request.job_name)
        raise AssertionError(f"the sensor still requests runs after {most} ticks: {launched}")

    def tables(self) -> dict[str, pd.DataFrame]:
        con = duckdb.connect(str(self.root / "warehouse.duckdb"), read_only=True)
        try:
            out = {}
            for name in TABLES:
                frame = con.execute(f"select * from {name}").df()
                frame = frame[[c for c in frame.columns if not any(v in c for v in VOLATILE)]]
                out[name] = frame.astype(str).sort_values(list(frame.columns)).reset_index(drop=True)
            return out
        finally:
            con.close()


def models(inputs: Path) -> list[str]:
    return ["oracle", "random"] + (["random_b"] if "random_b" in (inputs / "models.yaml").read_text() else [])


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The AC-EVAL sample (its dev split), two baselines, an empty corrections folder."""
    folder = tmp_path / "inputs"
    shutil.copytree(ROOT / "data" / "samples" / "aceval", folder / "aceval")
    write_yaml(folder / "sources.yaml", f"benchmarks:\n  aceval: {{path: {folder / 'aceval'}, version: v1, "
                                        "evaluate: [dev]}\n")
    write_yaml(folder / "models.yaml", MODELS % 0)
    (folder / "corrections").mkdir()
    shutil.copy(ROOT / "data" / "samples" / "corpora" / "sample_web.jsonl", folder / "web.jsonl")
    write_yaml(folder / "corpora.yaml", CORPORA)
    monkeypatch.setenv("WENHENG_CORPORA", str(folder / "corpora.yaml"))
    monkeypatch.setenv("WENHENG_SOURCES", str(folder / "sources.yaml"))
    monkeypatch.setenv("WENHENG_MODELS", str(folder / "models.yaml"))
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(folder / "corrections"))
    monkeypatch.delenv("WENHENG_LIMIT", raising=False)
    return folder


def _correct(inputs: Path) -> None:
    write_yaml(inputs / "corrections" / "aceval.yaml", """benchmark: aceval
corrections:
  - item_id: aceval/dev/historical_facts/0
    field: answer
    old: A
    new: B
    reason: a test of a correction and its revert
    date: 2026-11-27
""")


def _release(inputs: Path) -> None:
    csv = inputs / "aceval" / "dev" / "historical_facts.csv"
    csv.write_text(csv.read_text(encoding="utf-8").replace(QUESTION, "秦统一六国后推行的地方制度是"), encoding="utf-8")
    sources = inputs / "sources.yaml"
    sources.write_text(sources.read_text(encoding="utf-8").replace("version: v1", "version: v2"), encoding="utf-8")


def _add_corpus(inputs: Path) -> None:
    shutil.copy(inputs / "web.jsonl", inputs / "web2.jsonl")
    write_yaml(inputs / "corpora.yaml", CORPORA + CORPORA.split("\n")[1].replace("web:", "web2:").replace(
        "web.jsonl", "web2.jsonl") + "\n")


def _change_corpus(inputs: Path) -> None:
    """A document that quotes an AC-EVAL question appended to the second corpus."""
    with (inputs / "web2.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"id": "web-new", "title": "抄录", "paragraphs": [QUESTION * 2]}, ensure_ascii=False) + "\n")


STEPS = [
    ("a correction", _correct),
    ("its revert", lambda inputs: os.remove(inputs / "corrections" / "aceval.yaml")),
    ("a new release", _release),
    ("a model's setting changed", lambda inputs: write_yaml(inputs / "models.yaml", MODELS % 1)),
    ("a model added", lambda inputs: write_yaml(
        inputs / "models.yaml", MODELS % 1 + "  random_b: {engine: baseline, strategy: random, seed: 7}\n")),
    ("a corpus added", _add_corpus),
    ("a corpus file changed", _change_corpus),
    ("nothing changed", lambda inputs: None),
]


def test_the_cli_and_the_sensor_leave_nothing_for_each_other(inputs, tmp_path, monkeypatch):
    """After `wenheng run` the sensor's first tick launches nothing; after the sensor's runs the next
    `wenheng run` is up to date; a revert is launched, under a run key not used before."""
    project = Project(tmp_path / "p", inputs, monkeypatch)
    assert project.cli()
    assert project.daemon() == []                      # the CLI's runs are the sensor's history
    _correct(inputs)
    # prepare, then what the changed items make stale: both partitions, the corpus's verdicts, publish
    assert project.daemon() == ["prepare [aceval]", "evaluate [aceval|oracle]", "evaluate [aceval|random]",
                                "scan [web]", "publish"]
    assert project.cli() == []                          # the daemon's runs are the CLI's history
    os.remove(inputs / "corrections" / "aceval.yaml")   # back to the state of the first build
    assert "prepare [aceval]" in project.daemon()       # a revert is a change
    assert project.cli() == []


def test_a_build_reached_step_by_step_equals_the_build_from_scratch(inputs, tmp_path, monkeypatch):
    """Each step taken by `wenheng run` in one project and by the sensor in another; both end with
    the warehouse of a fresh build from the final inputs (times and latencies set aside). After
    each step, no partition is stale by Dagster's own rule (the UI's "unsynced") either."""
    cli, daemon = Project(tmp_path / "cli", inputs, monkeypatch), Project(tmp_path / "daemon", inputs, monkeypatch)
    cli.cli()
    daemon.daemon()
    for name, step in STEPS:
        step(inputs)
        print(f"step: {name}")
        cli.cli()
        launched = daemon.daemon()
        if name == "nothing changed":
            assert launched == [] and cli.cli() == []
        for project in (cli, daemon):   # what both launchers left up to date, Dagster's own rule does too
            assert unsynced(project.enter(), defs)[1] == [], (name, project.root.name)
    scratch = Project(tmp_path / "scratch", inputs, monkeypatch)
    scratch.cli()
    expected = scratch.tables()
    for project in (cli, daemon):
        got = project.tables()
        for table in TABLES:
            pd.testing.assert_frame_equal(got[table], expected[table], obj=f"{project.root.name}: {table}")
