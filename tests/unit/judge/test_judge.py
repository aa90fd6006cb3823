"""The LLM judge: verdict parsing per score type, routing, prompts as data, judging through the
engine layer and the response cache with a scripted judge on the loopback server (retries, nulls
with reasons, error rows, nothing re-judged on a re-run), reliability statistics, config errors."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, upstream, write_yaml
from scripted_judge import GARBLED, GARBLED_ONCE, ITEMS, OUT_OF_RANGE, item, scripted_judge

from pipeline.benchmarks import card
from pipeline.config import ConfigError, JudgeSpec, ReliabilitySpec, load_judges, load_models
from pipeline.engines.cache import open_cache
from pipeline.engines.openai_engine import OpenAIEngine
from pipeline.judge import reliability
from pipeline.judge.prompts import PromptSet, load_card_prompts, load_official
from pipeline.judge.run import combine_scores, judge_responses, prompt_set, repeat_scores
from pipeline.judge.verdicts import REASON_CHARS, SCHEMAS, Unparseable, parse
from pipeline.testing.openai_server import Fault

# -- reading verdicts ---------------------------------------------------------------------------


@pytest.mark.parametrize(("score_type", "text", "score"), [
    ("mcq_single", '["1"]', 1.0),
    ("mcq_single", '["0"]', 0.0),
    ("mcq_single", "评分：[\"1\"]。", 1.0),                # inside other text
    ("mcq_single", "[1]", 1.0),                          # a number, not a string
    ("mcq_multi", '["0.5"]', 0.5),
    ("mcq_multi", '["1”]', 1.0),                          # WenMind's own clean-up of a closing ”]
    ("subjective", '["0.8", "意境尚可"]', 0.8),
    ("subjective", '结果如下：\n[“0.6”, “平仄不合”]', 0.6),  # typographic quotes
    ("scoring_points", '["4", "3", "少一点"]', 0.75),
    ("scoring_points", '["2", "5", "多数了"]', 1.0),       # P_obtain clamped to P_all
    ("scoring_points", '["0.5", "只有分数"]', 0.5),        # the official rule: 1-2 elements are a score
    ("binary", "Y", 1.0),
    ("binary", "N", 0.0),
    ("binary", "[评价结果]:\n N \n 判断理由: 不一致", 0.0),
    ("binary", "Y/N\nY", 1.0),                            # the echoed format line is not an answer
])
def test_verdicts_are_read_per_score_type(score_type, text, score):
    assert parse(score_type, text).score == score


def test_points_are_kept_and_clamping_is_noted():
    verdict = parse("scoring_points", '["2", "5", "x"]')
    assert (verdict.p_all, verdict.p_obtain, verdict.extracted()) == (2.0, 2.0, "2/2")
    assert verdict.notes == ["P_obtain 5 clamped to P_all 2"]


@pytest.mark.parametrize(("score_type", "text", "why"), [
    ("subjective", '["1.2", "太好了"]', "outside [0, 1]"),
    ("subjective", '["-0.1", "x"]', "outside [0, 1]"),
    ("mcq_single", '["0.5"]', "not one of"),
    ("mcq_multi", '["0.3"]', "not one of"),
    ("scoring_points", '["0", "0", "x"]', "below 1"),
    ("scoring_points", '["1", "1", "x", "y"]', "4 elements"),
    ("mcq_single", '["3", "2", "x"]', "points"),
    ("subjective", "写得很好", "no JSON array"),
    ("subjective", '["很好", "x"]', "not a number"),
    ("binary", "正确", "no Y or N"),
    ("binary", "", "empty"),
])
def test_unreadable_verdicts_say_why(score_type, text, why):
    with pytest.raises(Unparseable, match=re.escape(why)):
        parse(score_type, text)


# -- routing and prompts ------------------------------------------------------------------------

WENHENG = PromptSet(load_card_prompts(card("wenmind").judge_file))


def test_wenmind_items_route_to_the_four_score_types_as_the_official_code():
    routed = [WENHENG.prepare(item, "答") for item in ITEMS]
    assert [(r.score_type, r.prompt_id) for r in routed] == [
        ("mcq_single", "mcq_single"), ("mcq_multi", "mcq_multi"),
        ("scoring_points", "scoring_points"),            # sentiment MCQs: scoring points, as officially
        ("scoring_points", "scoring_points"),            # fill-in-the-blank: scoring points
        ("subjective", "subjective/couplet_next"), ("subjective", "subjective/form/五言绝句"),
        ("subjective", "subjective/prose"), ("subjective", "subjective/idiom_synonym"),
        ("scoring_points", "scoring_points"), ("subjective", "subjective/hengpi")]
    poem = routed[5].text
    assert "体裁为五言绝句：四句，每句五字" in poem and "以“秋月”为题" in poem and "【学生作品】\n答" in poem


def test_fuxi_judges_exactly_its_ten_qa_tasks_with_the_figure_4_prompt():
    fuxi = prompt_set(JudgeSpec("fuxi", "judge"))
    judged = {task for task in ("ACRC", "IRC", "TCMSRC", "ASQA", "LCQA", "BA", "BD", "BCC", "PG", "PLST", "FQST",
                                "IST", "IPT", "PT", "ACT", "PA", "IE", "TCMQA", "PE", "CG", "CiG")
              if fuxi.prepare(item(0, task, "x", "open_qa", "问", "答", "fuxi"), "预测") is not None}
    assert judged == {"ASQA", "LCQA", "BA", "BD", "BCC", "PG", "PLST", "FQST", "IST", "IPT"}
    text = fuxi.prepare(item(0, "ASQA", "x", "open_qa", "外甥打灯笼", "照舅", "fuxi"), "照旧").text
    assert text.startswith("作为一名阅卷老师,请根据以下评分标准对以下回答进行评价")
    assert text.endswith("<start> *** [任务输入]: 外甥打灯笼 *** [标准答案]: 照舅 *** [预测答案]: 照旧 *** <end> [评价结果]:")
    assert card("fuxi").paper_scorer_for("ASQA") == "judge" and card("fuxi").paper_scorer_for("PT") == "rule"
    assert card("wenmind").paper_scorer_for("anything") == "judge" and card("aceval").paper_scorer_for("x") == "rule"


def test_every_structured_schema_accepts_its_own_example():
    from jsonschema import validate

    for score_type, example in [("mcq_single", ["1"]), ("mcq_multi", ["0.5"]), ("subjective", ["0.6", "理由"]),
                                ("scoring_points", ["3", "2", "理由"])]:
        validate(example, SCHEMAS[score_type])
        assert parse(score_type, json.dumps(example, ensure_ascii=False)).score is not None


def test_official_prompts_are_read_from_the_users_file_and_routed_by_id(tmp_path):
    official = load_official(upstream("wenmind", "Task_Score_Prompt.json"))
    prompts = PromptSet(WENHENG.card, official)
    assert prompts.label() == f"official-{official.version}" and len(official.version) == 12
    routed = [prompts.prepare(item, "学生的回答") for item in ITEMS]
    assert [r.prompt_id for r in routed] == ["0", "1", "2", "2", "4", "11", "7", "3", "2", "6"]
    assert [r.score_type for r in routed] == [r.score_type for r in (WENHENG.prepare(i, "x") for i in ITEMS)]
    # slots filled as (response, answer, question); the MCQ prompts never show the question
    assert "学生的回答" in routed[0].text and "B" in routed[0].text and "说话" not in routed[0].text
    assert "一丝不苟" in routed[7].text and "精益求精" in routed[7].text
    unknown_form = item(10, "poetry writing", "ancient poetry writing", "open_qa", "写一首古风。", "x")
    assert "names none of its poem forms" in prompts.prepare(unknown_form, "x").reason
    # nothing of the official file is kept in the repository
    for path in (ROOT / "pipeline").rglob("*.yaml"):
        assert official.prompts[2][:30] not in path.read_text(encoding="utf-8")


# -- judging through the engine layer -----------------------------------------------------------

def _response(item, text, model="m", error=None):
    return {"item_id": item["item_id"], "benchmark": item["benchmark"], "variant": "original",
            "setting": "question_only", "model": model, "text": text, "error": error}


def _engine(server):
    return OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None, max_retries=0, timeout_s=5)


SPEC = JudgeSpec("wenmind", "judge", retries=2, max_tokens=64)


def _judge(server, responses, cache_dir, spec=SPEC, prompts=WENHENG, items=ITEMS):
    with open_cache(cache_dir) as cache:
        return judge_responses(spec, prompts, _engine(server), responses, {i["item_id"]: i for i in items}, cache)


def test_scripted_verdicts_become_scores_per_type(monkeypatch, tmp_path):
    answers = ["B", "A", "喜悦", "不亦说乎", "瑞雪红梅万户春", "诗", "文", "精益求精", "唐代诗人", "万象更新"]
    with scripted_judge(monkeypatch) as server:
        rows, stats = _judge(server, [_response(i, a) for i, a in zip(ITEMS, answers, strict=True)], tmp_path)
    by_task = {r["item_id"].split("/")[2]: r for r in rows}
    assert [r["item_id"] for r in rows] == [i["item_id"] for i in ITEMS]   # response order kept
    assert by_task["function words"]["score"] == 1.0
    assert by_task["poets and works"]["score"] == 0.5                      # A of A、C: not all, none wrong
    assert by_task["couplet following"]["score"] == 0.8
    assert by_task["couplet following"]["details"]["notes"] == ["array found inside other text"]
    point = by_task["comprehension dictation"]
    assert (point["score"], point["p_all"], point["p_obtain"], point["extracted"]) == (1.0, 2.0, 2.0, "2/2")
    assert by_task["poet introduction"]["score"] == 0.25                   # 1 of 4 points
    assert all(r["judge_model"] == "judge" and r["prompt_set"] == "wenheng" and r["prompt_version"] == "1"
               and r["attempts"] == 1 and r["reason"] is None for r in rows)
    assert rows[0]["details"]["judge"] == {"model": "judge", "engine": _engine(server).identity()}
    assert stats.routed == stats.judged == stats.sent == 10 and stats.retries == 0
    # every call ran at temperature 0 and asked for the type's JSON schema (response_format)
    bodies = list(server.last_body.values())
    assert {b["temperature"] for b in bodies} == {0.0}
    schemas = {json.dumps(b["response_format"]["json_schema"]["schema"], sort_keys=True) for b in bodies}
    assert schemas == {json.dumps(SCHEMAS[t], sort_keys=True) for t in SCHEMAS}
    assert all(b["response_format"]["type"] == "json_schema" for b in bodies)


def test_fuxi_verdicts_are_a_constrained_y_n_choice_and_unstructured_when_asked(monkeypatch, tmp_path):
    fuxi = prompt_set(JudgeSpec("fuxi", "judge"))
    items = [item(0, "ASQA", "question answering", "open_qa", "外甥打灯笼", "照舅", "fuxi"),
             item(1, "IST", "question answering", "open_qa", "卧薪尝胆", "《史记》", "fuxi")]
    with scripted_judge(monkeypatch) as server:
        rows, _ = _judge(server, [_response(items[0], "照舅"), _response(items[1], "不知道")], tmp_path,
                         spec=JudgeSpec("fuxi", "judge"), prompts=fuxi, items=items)
        assert [(r["score_type"], r["score"], r["verdict"]) for r in rows] == [("binary", 1.0, "Y"), ("binary", 0.0, "N")]
        assert [b["structured_outputs"] for b in server.last_body.values()] == [{"choice": ["Y", "N"]}] * 2
        server.last_body.clear()
        plain = JudgeSpec("fuxi", "judge", structured_output=False)
        _judge(server, [_response(items[0], "照舅")], tmp_path, spec=plain, prompts=fuxi, items=items)
        (body,) = server.last_body.values()
        assert "structured_outputs" not in body and "response_format" not in body


def test_unreadable_verdicts_are_retried_with_a_reminder_then_null_with_the_reason(monkeypatch, tmp_path):
    items = [item(0, "poet introduction", "poet introduction", "open_qa", f"介绍李白。{GARBLED_ONCE}", "诗仙"),
             item(1, "poet introduction", "poet introduction", "open_qa", f"介绍杜甫。{GARBLED}", "诗圣"),
             item(2, "couplet writing", "couplet", "open_qa", f"写一副春联。{OUT_OF_RANGE}", "x")]
    with scripted_judge(monkeypatch) as server:
        rows, stats = _judge(server, [_response(i, i["answer"]) for i in items], tmp_path, items=items)
        prompts_seen = list(server.attempts)
    once, never, out_of_range = rows
    assert (once["score"], once["attempts"], once["reason"]) == (1.0, 2, None)
    assert once["details"]["failed_attempts"][0]["error"].startswith("no JSON array")
    assert never["score"] is None and never["attempts"] == 3
    assert never["reason"].startswith("unparseable verdict after 3 attempts: no JSON array")
    assert out_of_range["score"] is None and "outside [0, 1]" in out_of_range["reason"]
    assert stats.retries == 5 and stats.unparseable == 2 and stats.sent == 8   # 2 + 3 + 3 attempts
    # each retry is a new prompt (temperature 0 would repeat itself): the reminder, numbered
    reminders = [p for p in prompts_seen if "介绍杜甫" in p]
    assert len(reminders) == 3 and "第2次" in reminders[1] and "第3次" in reminders[2]


def test_judge_errors_are_rows_and_are_sent_again_next_run(monkeypatch, tmp_path):
    broken = ITEMS[8]
    failing = WENHENG.prepare(broken, broken["answer"]).text
    with scripted_judge(monkeypatch, [Fault("500", prompt=failing, times=None)]) as server:
        rows, stats = _judge(server, [_response(i, i["answer"]) for i in ITEMS[7:9]], tmp_path)
        assert rows[1]["score"] is None and rows[1]["reason"].startswith("judge error: ")
        assert rows[0]["score"] is not None and stats.errors == 1 and len(rows) == 2
        server.faults.clear()
        again, stats = _judge(server, [_response(i, i["answer"]) for i in ITEMS[7:9]], tmp_path)
    assert stats.sent == 1 and stats.cache_hits == 1 and again[1]["score"] == 1.0


def test_responses_without_text_or_gold_are_null_rows_not_judge_calls(monkeypatch, tmp_path):
    withheld = dict(ITEMS[8], item_id="wenmind/test/x/99", answer=None)
    with scripted_judge(monkeypatch) as server:
        rows, stats = _judge(server, [_response(ITEMS[8], None, error="RuntimeError: boom"), _response(withheld, "x")],
                             tmp_path, items=[ITEMS[8], withheld])
    assert [r["reason"] for r in rows] == ["no response: RuntimeError: boom", "no gold answer (withheld by the benchmark)"]
    assert stats.sent == 0 and stats.skipped == 2 and server.stats()["requests"] == 0


def test_a_rerun_sends_nothing_and_changes_rejudge_exactly_the_affected_items(monkeypatch, tmp_path):
    answers = [_response(i, i["answer"]) for i in ITEMS]
    with scripted_judge(monkeypatch) as server:
        first, stats = _judge(server, answers, tmp_path)
        assert stats.sent == 10
        again, stats = _judge(server, answers, tmp_path)
        assert stats.sent == 0 and stats.cache_hits == 10 and again == [r | {"created_at": a["created_at"]}
                                                                        for r, a in zip(first, again, strict=True)]
        # one answer changed: one call
        changed = [*answers[:3], _response(ITEMS[3], "不亦乐乎"), *answers[4:]]
        _, stats = _judge(server, changed, tmp_path)
        assert stats.sent == 1
        # the scoring-points prompt changed: exactly its items (sentiment, fill-in, poet introduction)
        card_prompts = WENHENG.card
        types = dict(card_prompts.types) | {"scoring_points": dict(card_prompts.types["scoring_points"],
                                                                   template="改过的提示。\n" + card_prompts.types[
                                                                       "scoring_points"]["template"])}
        edited = PromptSet(dataclasses.replace(card_prompts, types=types))
        _, stats = _judge(server, answers, tmp_path, prompts=edited)
        assert stats.sent == 3
        # a different judge engine is a different key: everything is judged again
        _, stats = _judge(server, answers, tmp_path, spec=dataclasses.replace(SPEC, max_tokens=65))
        assert stats.sent == 10


def test_scores_keep_one_rule_row_per_response_with_the_judges_beside_it(monkeypatch, tmp_path):
    with scripted_judge(monkeypatch) as server:
        judged, _ = _judge(server, [_response(i, i["answer"]) for i in ITEMS[:2]], tmp_path)
    rule = [_response(i, i["answer"]) | {"scorer": "option@1", "score": 1.0} for i in ITEMS[:3]]
    rule = [{k: r[k] for k in ("item_id", "benchmark", "variant", "setting", "model", "scorer", "score")} for r in rule]
    rows = combine_scores(rule, judged)
    assert [(r["item_id"][-1], r["kind"]) for r in rows] == [("0", "rule"), ("0", "judge"), ("1", "rule"),
                                                            ("1", "judge"), ("2", "rule")]
    judge_row = rows[1]
    assert judge_row["scorer"] == "judge:mcq_single@wenheng-1" and judge_row["judge_model"] == "judge"
    assert judge_row["details"]["verdict"] == ["1"] and judge_row["details"]["prompt_set"] == "wenheng"
    assert rows[3]["scorer"] == "judge:mcq_multi@wenheng-1" and rows[3]["extracted"] == "1"


# -- reliability --------------------------------------------------------------------------------

def test_cohen_kappa():
    assert reliability.cohen_kappa(["1", "0", "1", "0"], ["1", "0", "1", "0"]) == 1.0
    assert reliability.cohen_kappa(["1", "1", "0", "0"], ["1", "0", "1", "0"]) == 0.0
    assert reliability.cohen_kappa(["1", "1"], ["1", "1"]) is None                 # undefined: one label only
    assert reliability.cohen_kappa([], []) is None
    # 20 items: 15 agree; marginals 10/10 and 11/9 -> p_e = (10*11 + 10*9) / 400 = 0.5, kappa 0.5
    a = ["1"] * 10 + ["0"] * 10
    b = ["1"] * 8 + ["0"] * 2 + ["1"] * 3 + ["0"] * 7
    assert reliability.cohen_kappa(a, b) == pytest.approx(0.5)


def test_reliability_repeats_a_seeded_sample_and_compares_with_the_rules(monkeypatch, tmp_path):
    spec = dataclasses.replace(SPEC, reliability=ReliabilitySpec(sample_per_task=1, repeats=3, temperature=0.7))
    responses = [_response(i, i["answer"]) for i in ITEMS]
    with scripted_judge(monkeypatch) as server:
        judged, _ = _judge(server, responses, tmp_path, spec=spec)
        task_of = {i["item_id"]: i["task"] for i in ITEMS}
        picked = reliability.sample(judged, task_of, spec.reliability)
        assert picked == reliability.sample(list(reversed(judged)), task_of, spec.reliability)  # order-free
        assert len(picked) == len(ITEMS)                                       # one task per item here
        with open_cache(tmp_path) as cache:
            by_key = {(r["item_id"], r["variant"], r["setting"]): r for r in responses}
            repeats, stats = repeat_scores(spec, WENHENG, _engine(server), picked, by_key,
                                           {i["item_id"]: i for i in ITEMS}, cache)
            assert stats.sent == 30                          # k=3 per item: the seed is part of each key
            _, stats = repeat_scores(spec, WENHENG, _engine(server), picked, by_key, {i["item_id"]: i for i in ITEMS},
                                     cache)
            assert stats.sent == 0                                             # repeats are cached too
    repeat_bodies = [b for b in server.last_body.values() if b["temperature"] == 0.7]
    assert repeat_bodies and all(b["seed"] in (1, 2, 3) for b in repeat_bodies)   # each repeat its own seed
    # the score comes before the reason in every schema: repeats ask for none (the first judgements'
    # schemas, with REASON_CHARS, are checked above)
    reasons = [item.get("maxLength") for b in repeat_bodies if "response_format" in b
               for item in b["response_format"]["json_schema"]["schema"]["prefixItems"] if "maxLength" in item]
    assert reasons and set(reasons) == {0} and REASON_CHARS > 0
    rule = [_response(ITEMS[0], "B") | {"kind": "rule", "scorer": "option@1", "score": 1.0},
            _response(ITEMS[1], "A、C") | {"kind": "rule", "scorer": "option_multi@1", "score": 0.5}]
    table = reliability.rows("wenmind", "m", judged, rule, task_of, repeats, spec.reliability, "judge", "wenheng-1")
    overall = table[-1]
    assert overall["task"] == "(all)" and overall["n_judged"] == 10 and overall["repeat_items"] == 10
    assert overall["repeat_sd"] == 0.0 and overall["repeat_all_equal"] == 1.0   # a deterministic judge
    assert overall["exact_items"] == 2 and overall["exact_accuracy"] == 0.5    # the multi-answer item: 1 vs 0.5
    assert overall["swap_consistency"] is None and "n/a" in overall["note"]
    text = reliability.markdown(table)
    assert text.count("\n| ") == len(table) + 1 and "| (all) | 10 | 10 |" in text


# -- configuration ------------------------------------------------------------------------------

MODELS = "models:\n  oracle: {engine: baseline, strategy: oracle}\n  j: {engine: openai, model: x, api_key_env: null}\n"


@pytest.mark.parametrize(("judges", "message"), [
    ("judges:\n  nope: {model: j}\n", "judges.nope: unknown benchmark"),
    ("judges:\n  aceval: {model: j}\n", "judges.aceval: the aceval card has no judge prompts"),
    ("judges:\n  wenmind: {model: missing}\n", "judges.wenmind.model: 'missing' is not an entry of models:"),
    ("judges:\n  wenmind: {model: oracle}\n", "judges.wenmind.model: 'oracle' is a baseline"),
    ("judges:\n  wenmind: {model: j, prompts: theirs}\n", "judges.wenmind.prompts: expected wenheng, official, or"),
    ("judges:\n  wenmind: {model: j, prompts: {official: nowhere.json}}\n", "judges.wenmind.prompts.official: "),
    ("judges:\n  fuxi: {model: j, prompts: {official: x.json}}\n", "no routing for official prompts"),
    ("judges:\n  wenmind: {model: j, retries: -1}\n", "judges.wenmind.retries: expected an integer >= 0"),
    ("judges:\n  wenmind: {model: j, temperature: 0}\n", "judges.wenmind.temperature: unknown key (got 0)"),
    ("judges:\n  wenmind: {model: j, reliability: {temperature: 0}}\n", "reliability.temperature: repeats need"),
])
def test_judge_config_errors_are_one_line_and_name_file_and_key(tmp_path, judges, message):
    path = write_yaml(tmp_path / "models.yaml", MODELS + judges)
    with pytest.raises(ConfigError) as raised:
        load_models(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_a_bad_official_file_is_refused_at_load(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps([{"id": 0, "type": "MCQ-Single", "prompt": "{}"}]), encoding="utf-8")
    path = write_yaml(tmp_path / "models.yaml", MODELS + "judges:\n  wenmind: {model: j, prompts: {official: bad.json}}\n")
    with pytest.raises(ConfigError, match=r"judges.wenmind.prompts: .*bad.json: expected WenMind's 28 prompt records"):
        load_judges(path)


def test_the_default_models_file_names_the_bundled_model_as_judge_of_wenmind_and_fuxi():
    judges = load_judges(ROOT / "data" / "models.yaml")
    assert {b: (j.model, j.prompts) for b, j in judges.items()} == {
        "wenmind": ("gemma3-270m", "wenheng"), "fuxi": ("gemma3-270m", "wenheng")}
    assert "swap in a strong judge" in (ROOT / "data" / "models.yaml").read_text(encoding="utf-8")


def test_official_prompts_through_the_config(tmp_path):
    official = upstream("wenmind", "Task_Score_Prompt.json")
    path = write_yaml(tmp_path / "models.yaml", MODELS + f"judges:\n  wenmind: {{model: j, prompts: {{official: '{official}'}}}}\n")
    spec = load_judges(path)["wenmind"]
    assert spec.prompts == "official" and spec.official == Path(official).resolve()
    assert prompt_set(spec).name == "official"
