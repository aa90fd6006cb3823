"""What the Dagster UI badges "unsynced": the materialized asset partitions that Dagster's own stale
rule (code versions and the data versions of each partition's inputs) calls stale. wenheng plans
by its own fingerprints (pipeline/run_inputs.py); after a build that called everything up to date,
this is empty when the two rules agree (tests/integration/graph/test_incremental.py,
perf/incremental.py). It reads Dagster's internal resolver, the one the UI's GraphQL uses
(Dagster is pinned in pyproject.toml)."""

from __future__ import annotations


def unsynced(instance, defs) -> tuple[int, list[str]]:
    """(materialized asset partitions, those Dagster calls stale as 'asset [partition]')."""
    import dagster as dg
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._time import get_current_datetime

    graph = defs.resolve_asset_graph()
    view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                          instance=instance, asset_graph=graph)
    resolver = CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)
    total, stale = 0, []
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        part_def = graph.get(key).partitions_def
        for part in [None] if part_def is None else sorted(instance.get_materialized_partitions(key)):
            total += 1
            if isinstance(part_def, dg.MultiPartitionsDefinition):
                part = part_def.get_partition_key_from_str(part)
            if resolver.get_status(key, part) != StaleStatus.FRESH:
                stale.append(key.to_user_string() + (f" [{part}]" if part else ""))
    return total, stale
