"""The DuckDB warehouse: base tables from the lake, then every view and aggregate in sql/."""


import dagster as dg

from assets.judge import judge_reliability
from pipeline import paths
from pipeline.warehouse import build as build_warehouse
from pipeline.warehouse import connect_readonly
from resources.engines import WarehouseResource


@dg.asset(
    group_name="warehouse", code_version="1", kinds={"duckdb"}, pool="duckdb",
    # It loads every lake table (BASE_TABLES in pipeline/warehouse.py); its deps are those no other
    # dep already implies: judge_reliability, which items, dedup_clusters, item_variants, prompts,
    # responses, judgements and scores all lead to, and the three side reports no other asset reads.
    deps=[judge_reliability, "quarantine", "corrections_audit", "contamination"],
    automation_condition=dg.AutomationCondition.eager(),
    check_specs=[dg.AssetCheckSpec("scores_match_responses", asset="warehouse",
                                   description="one rule score row per response row")],
)
def warehouse(context: dg.AssetExecutionContext, warehouse_db: WarehouseResource):
    """items, quarantine, corrections_audit, dedup_clusters, contamination, item_variants, prompts,
    responses (to the current prompts) and their scores, plus the views and aggregates of sql/ and
    of the benchmark cards (model_task_scores, leaderboard, ...)."""
    db_path = warehouse_db.path()
    counts = build_warehouse(db_path, paths.lake_dir(), paths.SQL_DIR)
    context.log.info(f"warehouse {db_path}: {counts}")
    yield dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(db_path)),
                                         "tables": dg.MetadataValue.json(counts)})
    # one rule score per response; judged responses also have a judge row beside it
    with connect_readonly(db_path) as con:
        rule_scores = con.execute("SELECT count(*) FROM scores WHERE coalesce(kind, 'rule') = 'rule'").fetchone()[0]
    yield dg.AssetCheckResult(check_name="scores_match_responses", passed=rule_scores == counts["responses"],
                              metadata={"responses": counts["responses"], "rule scores": rule_scores,
                                        "judge scores": counts["scores"] - rule_scores})
