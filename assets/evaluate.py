"""model_inputs, responses and scores, partitioned benchmark x model (models come from
data/models.yaml); the LLM judge's judgements between them are in assets/judge.py. Each reads its
benchmark's partition of `items` or `prompts`; the responses read the items only through
model_inputs."""

import warnings

import dagster as dg

from assets.sources import benchmark_partitions, content_version, observed, partition_check
from pipeline.groups import EVALUATE
from resources.engines import ModelsResource
from resources.lake import Frame

models_partitions = dg.DynamicPartitionsDefinition(name="models")
benchmark_x_model = dg.MultiPartitionsDefinition({"benchmark": benchmark_partitions, "model": models_partitions})
# benchmark x model reads the benchmark's partition of an item-stage asset
with warnings.catch_warnings():   # a beta class in Dagster 1.13
    warnings.simplefilter("ignore", dg.BetaWarning)
    by_benchmark = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="benchmark")
ITEM_STAGE_INS = {"items": dg.AssetIn("items", partition_mapping=by_benchmark)}

def _partition(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return keys["benchmark"], keys["model"]


error_rate_check = partition_check(
    "error_rate", "responses", blocking=True, partitions_def=benchmark_x_model,
    description="share of prompts that failed after retries, at most WENHENG_MAX_ERROR_RATE (default 0.05); "
                "above it the partition is not written, scored or published")


# What data/models.yaml asks of a model for a benchmark, observed as data (assets/sources.py: observed)
model_settings = observed(
    "model_settings", "The model's entry in data/models.yaml as the responses read it for this benchmark: its "
    "name, engine identity, sampling, variants and settings.", EVALUATE, benchmark_x_model)


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="1",
    kinds={"parquet"}, ins=ITEM_STAGE_INS,
)
def model_inputs(context: dg.AssetExecutionContext, models: ModelsResource, items: Frame) -> dg.Output[Frame]:
    """What the model's answers read of the benchmark's items: ids, tasks, formats, options and
    metadata, and the golds only for a baseline that answers from them. Its data version is its
    content, so a corrected gold leaves a served model's responses up to date (Dagster's stale rule
    included) while its scores are made again."""
    from pipeline.engines.baseline import gold_use
    from pipeline.inference import model_inputs as read_by_model

    _, model = _partition(context)
    frame = read_by_model(items, gold_use(models.engine(model).identity()))
    return dg.Output(frame, data_version=content_version(frame),
                     metadata={"items": len(frame), "golds_read": int(frame["answer"].notna().sum())})


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="1",
    kinds={"parquet"}, pool="inference", output_required=False,
    check_specs=[error_rate_check],
    ins={"prompts": dg.AssetIn("prompts", partition_mapping=by_benchmark)}, deps=[model_settings],
)
def responses(context: dg.AssetExecutionContext, models: ModelsResource, prompts: Frame, model_inputs: Frame):
    """The model's answer to every prompt of the benchmark, served from the response cache where
    the same model, engine parameters, prompt and sampling parameters were seen before."""
    from pipeline import schema
    from pipeline.engines.cache import run_with_cache
    from pipeline.inference import give_golds, plan, prompts_for, response_rows

    benchmark, model = _partition(context)
    threshold = max_error_rate()   # read before any model is asked: a bad value fails at once
    spec = models.spec(model)
    engine = models.engine(model)
    items_by_id = {it["item_id"]: it for it in schema.records(model_inputs)}
    planned = plan(spec, engine.identity(), benchmark, schema.records(prompts_for(prompts, spec, benchmark)),
                   items_by_id)
    with models.response_cache() as cache:
        completions, stats = run_with_cache(give_golds(engine, planned, items_by_id), [req for _, req in planned],
                                            cache, log=context.log.info, label=f"{benchmark} x {model}",
                                            model=model)
    frame = schema.to_frame(response_rows(model, planned, completions), schema.RESPONSES)
    rate = stats.errors / stats.requested if stats.requested else 0.0
    passed = rate <= threshold
    if passed:  # a failing partition is not written: nothing downstream, nor the warehouse, sees it
        yield dg.Output(frame, metadata={
            "prompts": stats.requested, "cache_hits": stats.cache_hits, "prompts_sent": stats.sent,
            "prompts_collapsed": stats.collapsed, "engine": spec.engine,
            "errors": stats.errors, "engine_seconds": round(stats.seconds, 3),
            "output_tokens_per_s": round(stats.tokens_out / stats.seconds, 1) if stats.seconds else 0.0,
        })
    first = frame["error"].dropna().value_counts().head(3)
    yield dg.AssetCheckResult(check_name="error_rate", passed=passed, severity=dg.AssetCheckSeverity.ERROR,
                              metadata={"error_rate": rate, "errors": stats.errors, "prompts": stats.requested,
                                        "threshold": threshold,
                                        "first_errors": "\n".join(f"{n} x {text[:300]}" for text, n in first.items())})


def max_error_rate() -> float:
    """The share of failed prompts above which a responses partition fails (WENHENG_MAX_ERROR_RATE)."""
    from pipeline.settings import settings

    return settings().max_error_rate


@dg.asset(
    group_name=EVALUATE, partitions_def=benchmark_x_model, io_manager_key="lake", code_version="2",
    kinds={"parquet"}, ins=ITEM_STAGE_INS,
)
def scores(context: dg.AssetExecutionContext, responses: Frame, items: Frame, judgements: Frame) -> dg.Output[Frame]:
    """Rule scores for each response (kind 'rule'): option extraction, label match,
    fill-in-the-blank, chrF/BLEU; items only a judge can score get a null score with the reason.
    Beside each judged response, the judge's score (kind 'judge', from `judgements`)."""
    from pipeline import schema
    from pipeline.judge.run import combine_scores
    from pipeline.scoring.rules import score_rows

    answered = schema.records(items[items["item_id"].isin(responses["item_id"])])
    rows = combine_scores(score_rows(schema.records(responses), answered), schema.records(judgements))
    frame = schema.to_frame(rows, schema.SCORES)
    rule, judge = frame["kind"] == "rule", frame["kind"] == "judge"
    scored, judge_scored = rule & frame["score"].notna(), judge & frame["score"].notna()
    # A plain mean over this partition's scored rows (every setting and variant together), named
    # for what it is: the benchmark's own numbers, by its paper's rule, are the paper_tables_<benchmark>
    # and leaderboard assets.
    return dg.Output(frame, data_version=content_version(frame), metadata={
        "responses": int(rule.sum()), "scored": int(scored.sum()),
        "item_mean_rule_score": round(float(frame.loc[scored, "score"].mean()), 4) if scored.any() else None,
        "judged": int(judge.sum()), "judge_scored": int(judge_scored.sum()),
        "item_mean_judge_score": (round(float(frame.loc[judge_scored, "score"].mean()), 4)
                                  if judge_scored.any() else None),
    })
