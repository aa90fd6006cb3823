"""The DuckDB warehouse: base tables from the lake, then every view and aggregate in sql/; and the
scores it holds as assets the UI shows: `leaderboard` and `paper_tables_<benchmark>`."""

import base64
import functools
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from assets.judge import judge_reliability, judge_validity
from pipeline import paths
from pipeline.benchmarks import cards
from pipeline.groups import WAREHOUSE
from resources.engines import WarehouseResource

if TYPE_CHECKING:
    import pandas as pd

    from pipeline.benchmark_card import BenchmarkCard

# the side reports no other asset reads
SIDE_REPORTS = ("quarantine", "corrections_audit", "contamination", "corpus_overlap", "corpus_quarantine",
                "corpus_reading")


@dg.asset(
    group_name=WAREHOUSE, code_version="2", kinds={"duckdb"}, pool="duckdb",
    # It loads every lake table (BASE_TABLES in pipeline/warehouse/); its deps are those no other
    # dep already implies: judge_reliability, which items, dedup_clusters, item_variants, prompts,
    # responses, judgements and scores all lead to, judge_validity, and the side reports no other
    # asset reads.
    deps=[judge_reliability, judge_validity, *SIDE_REPORTS],
    check_specs=[dg.AssetCheckSpec("scores_match_responses", asset="warehouse",
                                   description="one rule score row per response row")],
)
def warehouse(context: dg.AssetExecutionContext, warehouse_db: WarehouseResource):
    """items, quarantine, corrections_audit, dedup_clusters, contamination, item_variants, prompts,
    responses (to the current prompts) and their scores, plus the views and aggregates of sql/ and
    of the benchmark cards (model_task_scores, leaderboard, ...)."""
    from pipeline.warehouse import connect_readonly, publish

    db_path = warehouse_db.path()
    result = publish(db_path, paths.lake_dir(), paths.SQL_DIR)
    counts = result.counts
    context.log.info(f"warehouse {db_path} ({result.mode}): {counts}")
    for line in result.set_aside:
        context.log.warning(line)
    # shown in `wenheng run`'s line for this asset: a damaged history file is named, never silent
    damaged = {"damaged history": "; ".join(result.set_aside)} if result.set_aside else {}
    yield dg.MaterializeResult(metadata={**damaged,
        "path": dg.MetadataValue.path(str(db_path)), "tables": dg.MetadataValue.json(counts),
        # incremental: only the lake files that changed since the last publish were reloaded
        "mode": result.mode, "files reloaded": sum(len(keys) for keys in result.reloaded.values()),
        "history files written": len(result.recorded),
        "seconds": dg.MetadataValue.json({k: round(v, 2) for k, v in result.seconds.items()})})
    # one rule score per response; judged responses also have a judge row beside it
    with connect_readonly(db_path) as con:
        rule_scores = con.execute("SELECT count(*) FROM scores WHERE kind = 'rule'").fetchone()[0]
    yield dg.AssetCheckResult(check_name="scores_match_responses", passed=rule_scores == counts["responses"],
                              metadata={"responses": counts["responses"], "rule scores": rule_scores,
                                        "judge scores": counts["scores"] - rule_scores})


# ---- the scores as assets: what `wenheng leaderboard` prints, readable in the UI ----------------
# They read the built warehouse and return metadata only (MaterializeResult): the rows stay in
# DuckDB, never copied into the lake.


def chart_markdown(frame: "pd.DataFrame", title: str, cache_dir: Path | None = None,
                   colours: dict[str, str] | None = None, published: "pd.DataFrame | None" = None) -> str:
    """A paper table's bar chart as an inline PNG: the UI's Markdown allows data: image sources.
    With `cache_dir`, a chart drawn before for the same rows is read from there, not drawn;
    `colours`: model -> colour, the same in every chart; `published`: the papers' own rows, drawn
    as a grey series."""
    from pipeline import charts
    from pipeline.reports.published import with_published

    frame, colours = with_published(frame, published, colours)
    png = charts.cached_chart(frame, title, "png", cache_dir, colours)
    from pipeline.reports.text import md

    return f"![{md(title)}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


def _scores_result(key: dg.AssetKey, con, frame: "pd.DataFrame", relation: str,
                   extra: dict | None = None) -> dg.MaterializeResult:
    """`frame`'s rows as the UI's Markdown (tables and charts, unchanged ones from the chart cache),
    with the columns of `relation` (the warehouse table or view the asset stands for) and the row
    count."""
    from pipeline import charts
    from pipeline.reports.text import scores_markdown
    from pipeline.schema import PAPER_TABLES, column_notes
    from pipeline.warehouse import published_scores

    notes = column_notes(PAPER_TABLES)   # the columns whose meaning is not in their name
    schema = dg.TableSchema(columns=[dg.TableColumn(name, str(kind), description=notes.get(name))
                                     for name, kind, *_ in con.execute(f'DESCRIBE "{relation}"').fetchall()])
    titles = {name: c.title for name, c in cards().items()}
    # one colour per model across every asset's charts: from every model in the warehouse
    colours = charts.model_colours(m for (m,) in con.execute("SELECT DISTINCT model FROM paper_tables").fetchall())
    published = published_scores(con)
    chart = functools.partial(chart_markdown, cache_dir=paths.charts_dir(), colours=colours, published=published)
    return dg.MaterializeResult(asset_key=key, metadata={
        "scores": dg.MetadataValue.md(scores_markdown(frame, titles, chart, published)),
        "models": dg.MetadataValue.text(", ".join(sorted(frame["model"].unique()))),
        "dagster/column_schema": schema, "dagster/row_count": len(frame), **(extra or {}),
    })


LEADERBOARD = dg.AssetSpec(
    "leaderboard", group_name=WAREHOUSE, code_version="1", kinds={"duckdb"}, deps=["warehouse"],
    description="Each benchmark's headline rows of its paper tables (the warehouse's `leaderboard` view, as "
                "`wenheng leaderboard` prints them): per model the score x100 with its 95% interval, n scored / "
                "items and coverage, and a bar chart per benchmark (metadata `scores`); metadata `report`: the "
                "HTML report of this warehouse (written here for a run launched from the UI or a sensor, by "
                "`wenheng run` as it ends for its own runs).")


def paper_tables_spec(bench: "BenchmarkCard") -> dg.AssetSpec:
    return dg.AssetSpec(
        f"paper_tables_{bench.name}", group_name=WAREHOUSE, code_version="1", kinds={"duckdb"}, deps=["warehouse"],
        description=f"Every table of {bench.title}'s paper (the warehouse's `{bench.name}_<table>` views), in "
                    "`paper_tables`: per model the score x100 with its 95% interval, n scored / items and "
                    "coverage, and a bar chart per table (metadata `scores`).")


@dg.multi_asset(name="score_tables", specs=[LEADERBOARD, *(paper_tables_spec(b) for b in cards().values())],
                can_subset=True)
def score_tables(context: dg.AssetExecutionContext, warehouse_db: WarehouseResource):
    """`leaderboard` and every `paper_tables_<benchmark>` that the run selects, in one step: they
    read the same warehouse, and a step of its own each cost Dagster more than their work."""
    from pipeline.warehouse import connect_readonly

    db_path = warehouse_db.path()
    selected = context.selected_asset_keys
    # a path, shown as a path: browsers do not open a file:// link from the UI's http:// page
    extra = ({"report": dg.MetadataValue.path(str(_report(context, db_path)))}
             if LEADERBOARD.key in selected else None)
    with connect_readonly(db_path) as con:
        if LEADERBOARD.key in selected:
            frame = con.execute("SELECT * FROM paper_tables WHERE headline ORDER BY benchmark, row_order").df()
            yield _scores_result(LEADERBOARD.key, con, frame, "leaderboard", extra)
        for bench in cards().values():
            key = dg.AssetKey(f"paper_tables_{bench.name}")
            if key in selected:
                yield _scores_result(key, con, _paper_tables(con, bench), "paper_tables")


def _report(context: dg.AssetExecutionContext, db_path: Path) -> Path:
    """The report's index.html: `wenheng run` writes its own (with the run's timings) into
    data/reports/<its run id>/ when it ends; any other run gets one here, in
    data/reports/<UTC time>-<Dagster run id>/."""
    from datetime import UTC, datetime

    from pipeline.reports import build_run_info, write_reports

    cli_run = context.run.tags.get(paths.RUN_TAG)
    if cli_run:
        return paths.reports_dir() / cli_run / "index.html"
    now = datetime.now(UTC)
    out = paths.reports_dir() / f"{now:%Y%m%d-%H%M%S}-{context.run.run_id[:8]}"
    stats = context.instance.get_run_stats(context.run.run_id)
    started = datetime.fromtimestamp(stats.start_time, UTC) if stats and stats.start_time else now
    info = build_run_info(f"dagster run {context.run.run_id} (job {context.run.job_name})", started)
    context.log.info(f"writing the report into {out}")
    return write_reports(db_path, out, info | {"dagster_run_id": context.run.run_id})


def _paper_tables(con, bench: "BenchmarkCard") -> "pd.DataFrame":
    """The benchmark's rows of `paper_tables`: tables in the order its card declares them
    (tables.yaml), rows in the paper's order."""
    order = {spec.name: i for i, spec in enumerate(bench.tables.tables)}
    frame = con.execute("SELECT * FROM paper_tables WHERE benchmark = ? ORDER BY row_order", [bench.name]).df()
    return frame.sort_values("table_name", key=lambda t: t.map(order), kind="stable")
