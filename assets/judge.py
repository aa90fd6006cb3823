"""The LLM judge's assets, partitioned benchmark x model like responses: `judgements` (a verdict
for each response the benchmark's card routes to the judge) and `judge_reliability` (how far the
judge can be trusted on that partition). Who judges what: models.yaml `judges:`; the logic is
pipeline/judge."""

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from assets.evaluate import ITEM_STAGE_INS, _partition, benchmark_x_model
from assets.sources import partition_check
from pipeline import paths
from pipeline.config import JudgeSpec, load_judges
from pipeline.groups import EVALUATE
from resources.engines import ModelsResource
from resources.lake import Frame

if TYPE_CHECKING:
    from pipeline.judge.run import JudgeStats


def _judge(models: ModelsResource, benchmark: str) -> JudgeSpec | None:
    return load_judges(Path(models.models_file) if models.models_file else paths.models_file()).get(benchmark)


def _stats(stats: "JudgeStats") -> dict[str, int]:
    return {"judge_calls": stats.calls, "judge_cache_hits": stats.cache_hits, "judge_calls_sent": stats.sent,
            "judge_errors": stats.errors}


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="1",
    kinds={"parquet"}, pool="inference", ins=ITEM_STAGE_INS,
    check_specs=[partition_check("verdict_rate", "judgements", "share of judgeable responses with a readable verdict",
                                 partitions_def=benchmark_x_model)],
)
def judgements(context: dg.AssetExecutionContext, models: ModelsResource, responses: Frame, items: Frame):
    """The judge's verdict on every response the card routes to it (temperature 0, through the
    response cache, unreadable verdicts retried with a format reminder). Empty when models.yaml
    names no judge for the benchmark."""
    from pipeline import schema
    from pipeline.judge.run import judge_responses, prompt_set

    benchmark, _ = _partition(context)
    judge = _judge(models, benchmark)
    if judge is None:
        yield dg.Output(schema.to_frame([], schema.JUDGEMENTS), metadata={"judge": "none configured", "routed": 0})
        yield dg.AssetCheckResult(check_name="verdict_rate", passed=True, metadata={"routed": 0})
        return
    items_by_id = {it["item_id"]: it for it in schema.records(items[items["item_id"].isin(responses["item_id"])])}
    with models.response_cache() as cache:
        rows, stats = judge_responses(judge, prompt_set(judge), models.engine(judge.model), schema.records(responses),
                                      items_by_id, cache, log=context.log.info)
    judgeable = stats.routed - stats.skipped
    rate = stats.judged / judgeable if judgeable else 1.0
    yield dg.Output(schema.to_frame(rows, schema.JUDGEMENTS), metadata={
        "judge": judge.model, "prompts": f"{judge.prompts}", "routed": stats.routed, "judged": stats.judged,
        "retries": stats.retries, "unparseable": stats.unparseable, "skipped": stats.skipped, **_stats(stats)})
    yield dg.AssetCheckResult(check_name="verdict_rate", passed=rate >= 0.95, severity=dg.AssetCheckSeverity.WARN,
                              metadata={"verdict_rate": rate, "unparseable": stats.unparseable,
                                        "judge_errors": stats.errors})


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="2",
    kinds={"parquet"}, pool="inference", ins=ITEM_STAGE_INS,
)
def judge_reliability(context: dg.AssetExecutionContext, models: ModelsResource, judgements: Frame,
                      scores: Frame, responses: Frame, items: Frame):
    """Per task: the spread of k repeat verdicts at a temperature above 0 on a seeded sample,
    judge vs rule agreement (accuracy, Cohen's kappa) on exact-answer items, and option-order
    swap consistency (n/a: no pairwise or ordered judge prompts)."""
    from pipeline import schema
    from pipeline.judge import reliability
    from pipeline.judge.run import JudgeStats, prompt_set, repeat_scores

    benchmark, model = _partition(context)
    judge = _judge(models, benchmark)
    judged = schema.records(judgements)
    if judge is None or not judged:
        table: list[dict] = []
        yield dg.Output(schema.to_frame(table, schema.JUDGE_RELIABILITY),
                        metadata={"table": dg.MetadataValue.md(reliability.markdown(table))})
        return
    items_by_id = {it["item_id"]: it for it in schema.records(items[items["item_id"].isin(judgements["item_id"])])}
    task_of = {item_id: it["task"] for item_id, it in items_by_id.items()}
    picked = reliability.sample(judged, task_of, judge.reliability)
    repeats, stats = {}, JudgeStats()
    if judge.reliability.repeats and picked:
        by_key = {(r["item_id"], r["variant"], r["setting"]): r for r in schema.records(responses)}
        with models.response_cache() as cache:
            repeats, stats = repeat_scores(judge, prompt_set(judge), models.engine(judge.model), picked, by_key,
                                           items_by_id, cache, log=context.log.info)
    first = judged[0]
    table = reliability.rows(benchmark, model, judged, schema.records(scores), task_of, repeats, judge.reliability,
                             first["judge_model"], f"{first['prompt_set']}-{first['prompt_version']}")
    yield dg.Output(schema.to_frame(table, schema.JUDGE_RELIABILITY), metadata={
        "table": dg.MetadataValue.md(reliability.markdown(table)), "sampled": len(picked), **_stats(stats)})


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="1",
    kinds={"parquet"}, pool="inference", ins=ITEM_STAGE_INS,
)
def judge_validity(context: dg.AssetExecutionContext, models: ModelsResource, items: Frame):
    """Per task: whether the judge tells right from wrong, on known answers (each sampled item's
    gold, and another item's gold, an off-topic or an empty answer), with Youden's J and its
    interval. The same controls for every model of the benchmark: sent once, then from the cache."""
    from pipeline import schema
    from pipeline.judge import validity
    from pipeline.judge.run import judge_responses, prompt_set

    benchmark, model = _partition(context)
    judge = _judge(models, benchmark)
    if judge is None or not judge.validity.sample_per_task:
        yield dg.Output(schema.to_frame([], schema.JUDGE_VALIDITY),
                        metadata={"table": dg.MetadataValue.md(validity.markdown([]))})
        return
    prompts = prompt_set(judge)
    bench_items = schema.records(items)
    controls = validity.controls(bench_items, prompts, judge.validity, benchmark)
    items_by_id = {it["item_id"]: it for it in bench_items if it["item_id"] in {c["item_id"] for c in controls}}
    with models.response_cache() as cache:
        judged, stats = judge_responses(judge, prompts, models.engine(judge.model), controls, items_by_id, cache,
                                        log=context.log.info)
    task_of = {item_id: it["task"] for item_id, it in items_by_id.items()}
    first = judged[0] if judged else {}
    table = validity.rows(benchmark, model, judged, task_of, judge.validity, judge.model,
                          f"{first.get('prompt_set')}-{first.get('prompt_version')}" if judged else None)
    uninformative = sorted(r["task"] for r in table if r["task"] != validity.ALL and not r["informative"])
    yield dg.Output(schema.to_frame(table, schema.JUDGE_VALIDITY), metadata={
        "table": dg.MetadataValue.md(validity.markdown(table)), "controls": len(controls),
        "uninformative_tasks": len(uninformative), **_stats(stats)})
