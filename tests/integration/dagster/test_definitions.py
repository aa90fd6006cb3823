"""The code location loads, and the Dagster boundary stays where the design puts it."""

from __future__ import annotations

import ast

import dagster as dg
from conftest import ROOT, write_yaml

from pipeline.definitions import defs, models_sensor

DAGSTER_MODULES = {"pipeline/definitions.py", "pipeline/runner.py"}


def test_definitions_load_with_every_stage():
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    assert {"raw_wenmind", "raw_aceval", "raw_wyweb", "items", "quarantine", "dedup_clusters", "contamination",
            "item_variants", "prompts", "responses", "scores", "warehouse"} <= keys
    for job in ("prepare", "evaluate", "publish"):
        assert defs.resolve_job_def(job)
    assert defs.resolve_schedule_def("nightly_rebuild")


def test_lineage_reads_left_to_right():
    """Edges say what each asset is made from: raw_<b> -> items and quarantine, items ->
    corrections_audit; the warehouse hangs off the assets nothing else leads to, and still has
    every table it loads upstream of it."""
    from pipeline.warehouse import BASE_TABLES

    graph = defs.resolve_asset_graph()

    def parents(name: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(dg.AssetKey(name)).parent_keys}

    def upstream(names: set[str]) -> set[str]:
        seen, todo = set(), list(names)
        while todo:
            for parent in parents(todo.pop()) - seen:
                seen.add(parent)
                todo.append(parent)
        return seen

    raw = {k.to_user_string() for k in graph.get_all_asset_keys() if k.to_user_string().startswith("raw_")}
    assert parents("items") == parents("quarantine") == raw
    assert parents("corrections_audit") == {"items"}
    deps = parents("warehouse")
    assert set(BASE_TABLES) <= deps | upstream(deps)
    assert not any(dep in upstream(deps - {dep}) for dep in deps)   # none implied by another


def test_domain_logic_does_not_import_dagster():
    offenders = []
    for path in (ROOT / "pipeline").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        if any(name.split(".")[0].startswith("dagster") for name in names) and rel not in DAGSTER_MODULES:
            offenders.append(rel)
    assert not offenders


def test_models_sensor_adds_a_partition_per_configured_model(workdir, monkeypatch):
    models = write_yaml(workdir / "models.yaml", "models:\n  oracle: {engine: baseline, strategy: oracle}\n")
    monkeypatch.setenv("WENHENG_MODELS", str(models))
    with dg.instance_for_test() as instance:
        result = models_sensor(dg.build_sensor_context(instance=instance))
        (request,) = result.dynamic_partitions_requests
        assert list(request.partition_keys) == ["oracle"]


def test_source_changes_sensor_fires_when_a_correction_lands(workdir, monkeypatch):
    from pipeline.definitions import source_changes_sensor

    corrections = workdir / "corrections"
    corrections.mkdir()
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(corrections))
    with dg.instance_for_test() as instance:
        first = source_changes_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(first, dg.RunRequest)
        context = dg.build_sensor_context(instance=instance, cursor=first.run_key)
        assert isinstance(source_changes_sensor(context), dg.SkipReason)
        (corrections / "fix.yaml").write_text("corrections: []\n", encoding="utf-8")
        again = source_changes_sensor(dg.build_sensor_context(instance=instance, cursor=first.run_key))
        assert isinstance(again, dg.RunRequest) and again.run_key != first.run_key
