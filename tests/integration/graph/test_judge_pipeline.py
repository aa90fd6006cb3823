"""The LLM judge in the whole graph: run_pipeline with the baselines as evaluated models and the
scripted judge on the loopback server judging WenMind (every item, four score types) and Fùxì
(its ten QA tasks). Checks the judgements, the scores beside the rules, the paper tables' one
score per unit and WenMind's full coverage, the reliability table, and a re-run that sends no
judge call."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest
from conftest import ROOT, write_yaml
from scripted_judge import GARBLED_ONCE, judge_models_yaml, scripted_judge

from pipeline.runner import run_pipeline
from pipeline.warehouse import UNITS_SQL, paper_judge_tasks

COARSE = {"对联": "couplet", "古诗词创作": "ancient poetry writing", "文言文写作": "ancient prose writing",
          "成语": "idiom", "虚词": "function words", "诗人与作品": "poets and works", "情感分类": "sentiment classification",
          "基础问答": "basic Q&A", "诗人介绍": "poet introduction"}


def _wenmind_item(n, coarse_zh, fine_zh, fine_en, fmt, question, answer):
    return {"id": n, "domain": "ancient poetry", "capability": "generation", "question_format": fmt,
            "coarse_grained_task_zh": coarse_zh, "coarse_grained_task_en": COARSE[coarse_zh],
            "fine_grained_task_zh": fine_zh, "fine_grained_task_en": fine_en, "question": question, "answer": answer}


# wenheng's own test items in WenMind's format: every route of the card, and one verdict that
# needs a retry.
WENMIND = [
    _wenmind_item(1, "虚词", "虚词", "function words", "MCQ", "“之”在句中作：\nA、代词  B、助词  C、动词  D、连词", "B"),
    _wenmind_item(2, "诗人与作品", "诗人与作品", "poets and works", "MCQ",
                  "下列属于李白作品的两项是：\nA、静夜思  B、春望  C、将进酒  D、登高", "A、C"),
    _wenmind_item(3, "情感分类", "情感分类", "sentiment classification", "MCQ", "“春风得意马蹄疾”的情感是：", "喜悦"),
    _wenmind_item(4, "情感分类", "情感分类", "sentiment classification", "MCQ", "“感时花溅泪”的情感是：", "悲伤"),
    _wenmind_item(5, "基础问答", "理解性默写", "comprehension dictation", "FB", "补全：海内存知己，____。", "天涯若比邻"),
    _wenmind_item(6, "诗人介绍", "诗人介绍", "poet introduction", "QA", f"简要介绍孟浩然。{GARBLED_ONCE}",
                  "唐代山水田园诗人"),
    _wenmind_item(7, "对联", "接下联", "couplet following", "QA", "上联：山高月小，请对下联。", "水落石出"),
    _wenmind_item(8, "对联", "拟横批", "HengPi writing", "QA", "为“爆竹一声除旧岁，桃符万户更新天”拟横批。", "辞旧迎新"),
    _wenmind_item(9, "古诗词创作", "诗创作", "poetry writing", "QA", "以“江雪”为题，创作一首七言绝句。", "（参考）"),
    _wenmind_item(10, "古诗词创作", "词创作", "Ci writing", "QA", "以“思乡”为题，填一首如梦令。", "（参考）"),
    _wenmind_item(11, "文言文写作", "文言文写作", "ancient prose writing", "QA", "以文言写一段短文，题为《劝学》。", "（参考）"),
    _wenmind_item(12, "成语", "近义词", "synonyms", "QA", "写出“画蛇添足”的一个近义成语。", "多此一举"),
]
JUDGES = "  wenmind: {model: judge, prompts: wenheng, reliability: {sample_per_task: 1, repeats: 3}}\n" \
         "  fuxi: {model: judge, prompts: wenheng}\n"
FUXI_QA = {"ASQA", "LCQA", "BA", "BD", "BCC", "PG", "PLST", "FQST", "IST", "IPT"}


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """One judged run shared by the tests of this module (each run costs about a minute)."""
    workdir = tmp_path_factory.mktemp("judged")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, sub in [("WENHENG_LAKE", "lake"), ("WENHENG_WAREHOUSE", "warehouse.duckdb"),
                          ("DAGSTER_HOME", "dagster_home"), ("WENHENG_CACHE", "cache")]:
            monkeypatch.setenv(name, str(workdir / sub))
        (workdir / "dagster_home").mkdir()
        shutil.copy(ROOT / ".dagster_home" / "dagster.yaml", workdir / "dagster_home" / "dagster.yaml")
        wenmind = workdir / "wenmind.json"
        wenmind.write_text(json.dumps(WENMIND, ensure_ascii=False), encoding="utf-8")
        sources = write_yaml(workdir / "sources.yaml", f"benchmarks:\n  wenmind: {{path: {wenmind}, version: t1}}\n"
                                                       f"  fuxi: {{path: {ROOT / 'data' / 'samples' / 'fuxi'}, version: s}}\n")
        monkeypatch.setenv("WENHENG_SOURCES", str(sources))
        with scripted_judge(monkeypatch) as server:
            models = judge_models_yaml(server, JUDGES)
            monkeypatch.setenv("WENHENG_MODELS", str(write_yaml(workdir / "models.yaml", models)))
            summary = run_pipeline(["wenmind", "fuxi"], ["oracle", "random"], log=lambda _: None)
            assert summary.ok
            con = duckdb.connect(str(workdir / "warehouse.duckdb"), read_only=True)
            yield summary, con, server, workdir
            con.close()


def test_every_wenmind_item_and_the_fuxi_qa_tasks_are_judged_once(judged_run):
    summary, con, _, _ = judged_run
    meta = summary.metadata("judgements", "wenmind|oracle")
    assert meta["routed"] == meta["judged"] == len(WENMIND) and meta["retries"] == 1 and meta["unparseable"] == 0
    per_type = dict(con.execute("""SELECT score_type, count(*) FROM judgements WHERE benchmark = 'wenmind'
        AND model = 'oracle' GROUP BY 1""").fetchall())
    assert per_type == {"mcq_single": 1, "mcq_multi": 1, "scoring_points": 4, "subjective": 6}
    fuxi = {t for (t,) in con.execute("""SELECT DISTINCT i.task FROM judgements j JOIN items i USING (item_id)
        WHERE j.benchmark = 'fuxi'""").fetchall()}
    fuxi_qa_items = con.execute("SELECT count(*) FROM items WHERE benchmark = 'fuxi' AND list_contains(?, task)",
                                [sorted(FUXI_QA)]).fetchone()[0]
    assert fuxi <= FUXI_QA and fuxi_qa_items > 0
    assert con.execute("SELECT count(*) FROM judgements WHERE benchmark = 'fuxi' AND model = 'oracle'").fetchone()[0] \
        == fuxi_qa_items
    # the oracle answers the gold: the scripted judge says Y to every Fùxì answer
    assert con.execute("SELECT min(score), max(score) FROM judgements WHERE benchmark = 'fuxi' AND model = 'oracle'"
                       ).fetchone() == (1.0, 1.0)


def test_scores_hold_a_rule_row_per_response_and_the_judges_beside_it(judged_run):
    _, con, _, _ = judged_run
    rows = con.execute("""SELECT kind, count(*) FROM scores GROUP BY 1 ORDER BY 1""").fetchall()
    responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    judgements = con.execute("SELECT count(*) FROM judgements").fetchone()[0]
    assert rows == [("judge", judgements), ("rule", responses)]
    scorer, judge_model, details = con.execute("""SELECT scorer, judge_model, details FROM scores WHERE kind = 'judge'
        AND item_id = 'wenmind/test/poet_introduction/6' AND model = 'oracle'""").fetchone()
    assert scorer == "judge:scoring_points@wenheng-1" and judge_model == "judge"
    details = json.loads(details)
    assert details["p_all"] == 2 and details["p_obtain"] == 2 and details["attempts"] == 2
    assert details["judge"]["engine"]["engine"] == "openai"
    # the rule row of an open item still says it needs the judge; the judge's row has the number
    rule = con.execute("""SELECT score, reason FROM scores WHERE kind = 'rule' AND model = 'oracle'
        AND item_id = 'wenmind/test/couplet_following/7'""").fetchone()
    assert rule == (None, "needs the LLM judge")


def test_paper_tables_take_one_score_per_unit_and_wenmind_is_fully_covered(judged_run):
    _, con, _, _ = judged_run
    from pipeline.benchmarks import card

    for name in ("wenmind", "fuxi"):
        units = con.execute(UNITS_SQL, {"benchmark": name, "judge_tasks": paper_judge_tasks(con, card(name))}).df()
        assert not units.duplicated(["unit_id", "model", "variant", "setting"]).any()
    coverage = dict(con.execute("""SELECT model, coverage FROM paper_tables WHERE benchmark = 'wenmind'
        AND table_name = 'overall'""").fetchall())
    assert coverage == {"oracle": 1.0, "random": 1.0}
    # Fùxì: the QA category is the judge's (the oracle: all Y), the others stay the rules'
    fuxi = dict(con.execute("""SELECT row_label, score FROM paper_tables WHERE benchmark = 'fuxi'
        AND table_name = 'by_category' AND model = 'oracle'""").fetchall())
    assert fuxi["question answering"] == 100.0 and fuxi["reading comprehension"] == 100.0


def test_reliability_is_a_table_in_the_warehouse_and_markdown_in_the_ui(judged_run):
    summary, con, _, _ = judged_run
    table = summary.metadata("judge_reliability", "wenmind|oracle")["table"]
    assert table.startswith("Judge `judge` (wenheng-1); repeats: k=3") and "| (all) | 12 | 12 |" in table
    rows = con.execute("""SELECT task, n_judged, repeat_items, exact_items, exact_accuracy, swap_consistency, note
        FROM judge_reliability WHERE benchmark = 'wenmind' AND model = 'oracle' ORDER BY task""").fetchall()
    assert len(rows) == 12                                         # eleven tasks, then (all)
    overall = [r for r in rows if r[0] == "(all)"][0]
    # one sampled item per task, repeated; the one whose verdict needed the reminder stays
    # unreadable in its repeats (they use the first prompt, no retries): ten items with a spread
    assert overall[1] == 12 and overall[2] == 10
    assert overall[3] == 4 and overall[4] == 1.0                   # the MCQs and sentiment labels: judge = rule
    assert overall[5] is None and "n/a" in overall[6]              # no pairwise prompts to swap
    kappa, accuracy = con.execute("""SELECT exact_kappa, exact_accuracy FROM judge_reliability
        WHERE benchmark = 'wenmind' AND model = 'random' AND task = '(all)'""").fetchone()
    assert 0 <= accuracy <= 1 and (kappa is None or -1 <= kappa <= 1)
    assert con.execute("SELECT count(*) FROM judge_reliability WHERE benchmark NOT IN ('wenmind', 'fuxi')"
                       ).fetchone()[0] == 0


def test_a_rerun_sends_no_judge_call(judged_run):
    """The same inputs again: no evaluate run at all. Judgements whose lake files are gone are
    built again (with what follows them, not the responses), every verdict from the cache."""
    *_, server, workdir = judged_run
    before = server.stats()["requests"]
    partitions = [f"{bench}|{model}" for bench in ("wenmind", "fuxi") for model in ("oracle", "random")]
    unchanged = run_pipeline(["wenmind", "fuxi"], ["oracle", "random"], log=lambda _: None)
    assert unchanged.ok and not unchanged.materializations
    assert {f"evaluate [{p}]" for p in partitions} <= set(unchanged.up_to_date)
    for file in (workdir / "lake" / "judgements").rglob("*.parquet"):
        file.unlink()
    again = run_pipeline(["wenmind", "fuxi"], ["oracle", "random"], log=lambda _: None)
    assert again.ok
    for partition in partitions:
        meta = again.metadata("judgements", partition)
        assert meta["judge_calls_sent"] == 0 and meta["judge_calls"] >= meta["routed"] > 0
        assert again.metadata("judge_reliability", partition)["judge_calls_sent"] == 0
        with pytest.raises(KeyError):
            again.metadata("responses", partition)
    assert server.stats()["requests"] == before


def test_benchmarks_without_a_judge_get_an_empty_partition(judged_run):
    import pandas as pd

    *_, workdir = judged_run
    frame = pd.read_parquet(workdir / "lake" / "judgements" / "wenmind" / "oracle.parquet")
    assert len(frame) == len(WENMIND)
    summary = run_pipeline(["aceval"], ["oracle"], log=lambda _: None)
    assert summary.ok and summary.metadata("judgements", "aceval|oracle")["routed"] == 0
    assert summary.metadata("judge_reliability", "aceval|oracle")["table"].startswith("No judge configured")


def test_rows_say_who_judged_them_and_a_demo_judge_is_not_comparable(judged_run, tmp_path):
    """A judge's rows name it, and say when its known-answer controls cannot vouch for it; the
    same verdicts under the bundled demo judge's identity (what VLLMEngine records for
    `bundled:gemma3-270m`) say that too, the numbers unchanged."""
    from pipeline.engines.vllm_engine import VLLMEngine
    from pipeline.warehouse import build_paper_tables

    _, con, _, workdir = judged_run
    rows = con.execute("""SELECT model, scored_by, comparable, score, note FROM paper_tables
        WHERE benchmark = 'wenmind' AND table_name = 'overall' ORDER BY model""").fetchall()
    # the samples hold one item per WenMind task: too few known-answer controls to show any judge
    # informative (judge_validity; tests/unit/judge/test_validity.py), so the rows say so
    assert [r[:3] for r in rows] == [("oracle", "judge judge (wenheng prompts)", False),
                                     ("random", "judge judge (wenheng prompts)", False)]
    assert all("uninformative judge" in note and "bundled demo judge" not in note for *_, note in rows)
    demo = VLLMEngine("bundled:gemma3-270m").identity()
    copy = tmp_path / "demo.duckdb"
    shutil.copy(workdir / "warehouse.duckdb", copy)
    with duckdb.connect(str(copy)) as writable:
        for key, details in writable.execute("SELECT rowid, details FROM scores WHERE kind = 'judge'").fetchall():
            parsed = json.loads(details)
            parsed["judge"]["engine"] = demo
            writable.execute("UPDATE scores SET details = ? WHERE rowid = ?", [json.dumps(parsed), key])
        build_paper_tables(writable)
        marked = writable.execute("""SELECT model, comparable, score, note FROM paper_tables
            WHERE benchmark = 'wenmind' AND table_name = 'overall' ORDER BY model""").fetchall()
    assert [(m, c, s) for m, c, s, _ in marked] == [(m, False, s) for m, _, _, s, _ in rows]
    assert all("bundled demo judge" in note and "uninformative judge" in note for *_, note in marked)


def test_each_judgement_keeps_the_prompt_the_judge_was_sent(judged_run):
    """The sample browser and samples_<benchmark>.jsonl show the judge's prompt: judgements keep it."""
    _, con, _, _ = judged_run
    rows = con.execute("""SELECT j.messages, r.text FROM judgements j JOIN responses r USING (item_id, variant,
        setting, model) WHERE j.benchmark = 'wenmind' AND j.attempts > 0""").fetchall()
    assert rows
    for messages, response in rows:
        sent = json.loads(messages)
        assert isinstance(sent, list) and all({"role", "content"} <= set(m) for m in sent)
        assert response.strip()[:20] in "".join(m["content"] for m in sent)   # the answer being judged


def test_a_corrected_reference_is_judged_again_for_every_model(judged_run, tmp_path, monkeypatch):
    """The judge reads the reference answer: a corrected gold sends its item to the judge again,
    for every model, also one whose answer did not change (random picks a letter of a multiple-
    choice item whatever its gold). Last in this module: it leaves the correction applied."""
    import pandas as pd
    import yaml

    *_, server, workdir = judged_run
    items = pd.read_parquet(workdir / "lake" / "items" / "wenmind.parquet")
    item = items[items["question"].str.startswith("“之”在句中作")].iloc[0]
    corrections = shutil.copytree(ROOT / "data" / "corrections", tmp_path / "corrections")
    (corrections / "wenmind.yaml").write_text(yaml.safe_dump({"corrections": [{
        "item_id": item["item_id"], "field": "answer", "old": item["answer"], "new": "A",
        "reason": "test", "date": "2026-11-28"}]}, allow_unicode=True), encoding="utf-8")
    monkeypatch.setenv("WENHENG_CORRECTIONS", str(corrections))
    summary = run_pipeline(["wenmind"], ["oracle", "random"], log=lambda _: None)
    assert summary.ok
    # random's answer did not change, its judge prompt did: judged again
    assert summary.metadata("judgements", "wenmind|random")["judge_calls_sent"] == 1
    # the oracle's answer is the new gold, which the known-answer controls (judge_validity, in the
    # same run, through the same cache) may have judged first as the item's positive control
    controls = sum(summary.metadata("judge_validity", f"wenmind|{m}")["judge_calls_sent"] for m in ("oracle", "random"))
    assert summary.metadata("judgements", "wenmind|oracle")["judge_calls_sent"] + controls >= 1
    assert summary.metadata("judgements", "wenmind|oracle")["judge_calls_sent"] <= 1
    assert summary.metadata("responses", "wenmind|oracle")["prompts_sent"] == 1   # it answers the gold
    with pytest.raises(KeyError):
        summary.metadata("responses", "wenmind|random")   # its answers are those it gave
