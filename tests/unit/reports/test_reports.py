"""write_reports on a real warehouse (the pipeline on the samples, oracle and random): the files'
numbers are paper_tables', text is escaped everywhere, the sample browser's cap, results.json."""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import shutil
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from markupsafe import escape
from report_warehouse import build

from pipeline import benchmarks
from pipeline.reports import build_run_info, write_reports
from pipeline.reports.data import status

NASTY = "</script><script>alert('x')</script> & \"quotes\" <b>bold</b> <!-- 注释 --> \u2028 ]]>"


@pytest.fixture(scope="module")
def warehouse(baseline_build, tmp_path_factory) -> Path:
    return build(baseline_build, tmp_path_factory.mktemp("reports_run"))


@pytest.fixture(scope="module")
def report(warehouse, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "r"
    with pytest.MonkeyPatch.context() as mp:   # the models file the warehouse was built with
        mp.setenv("WENHENG_MODELS", str(warehouse.parent / "models.yaml"))
        index = write_reports(warehouse, out)
    assert index == out / "index.html"
    return out


def paper_tables(warehouse: Path) -> pd.DataFrame:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("SELECT * FROM paper_tables").df()


def embedded(samples_html: str) -> dict:
    """The sample browser's data, parsed as the page's JSON.parse would."""
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', samples_html, re.S)
    assert match, "no embedded data"
    return json.loads(match.group(1))


def close(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return b is not None and not (isinstance(b, float) and math.isnan(b)) and abs(float(a) - float(b)) < 1e-6


def test_every_benchmark_gets_its_files(report):
    names = {p.name for p in report.iterdir()}
    for name in benchmarks.names():
        assert {f"{name}.md", f"{name}.csv", f"{name}.html"} <= names
    assert {"index.html", "samples.html", "results.json"} <= names


def test_csv_rows_equal_paper_tables(report, warehouse):
    expected = paper_tables(warehouse)
    for name in benchmarks.names():
        csv = pd.read_csv(report / f"{name}.csv", keep_default_na=True)
        assert list(csv.columns[:10]) == ["table", "row", "model", "value", "ci_low", "ci_high", "n_items",
                                          "n_scored", "coverage", "notes"]
        want = expected[expected["benchmark"] == name]
        assert len(csv) == len(want) > 0
        key = ["table_name", "row_label", "metric", "model", "split", "setting", "variant"]
        got = csv.rename(columns={"table": "table_name", "row": "row_label"}).set_index(key).sort_index()
        want = want.set_index(key).sort_index()
        assert list(got.index) == list(want.index)
        for column, theirs in [("value", "score"), ("ci_low", "ci_low"), ("ci_high", "ci_high"),
                               ("coverage", "coverage"), ("n_items", "n_items"), ("n_scored", "n_scored")]:
            mismatched = [(i, a, b) for i, a, b in zip(got.index, got[column], want[theirs]) if not close(a, b)]
            assert mismatched == [], (name, column, mismatched[:3])
        notes = [(i, a, b) for i, a, b in zip(got.index, got["notes"], want["note"])
                 if (a if isinstance(a, str) else None) != b]
        assert notes == [], notes[:3]


def test_benchmark_pages_show_every_row_with_n_coverage_interval_and_a_chart(report, warehouse):
    expected = paper_tables(warehouse)
    for name in benchmarks.names():
        page = (report / f"{name}.html").read_text(encoding="utf-8")
        everything = expected[expected["benchmark"] == name]
        # a run setting no model has a scored item in (AC-EVAL test) is one line, not cells
        want = everything.groupby(["table_name", "split", "setting", "variant"]).filter(
            lambda g: (g["n_scored"] > 0).any())
        covs = re.findall(r'<span class="cov">n (\d+)/(\d+) · coverage (\d+|–)%?</span>', page)
        assert len(covs) == len(want)
        assert sorted((int(a), int(b)) for a, b, _ in covs) == sorted(zip(want["n_scored"], want["n_items"]))
        intervals = re.findall(r'<span class="ci">\[([\d.]+), ([\d.]+)\]</span>', page)
        assert len(intervals) == want["ci_low"].notna().sum()
        assert sorted(intervals) == sorted((f"{a:.1f}", f"{b:.1f}") for a, b in
                                           zip(want["ci_low"].dropna(), want["ci_high"].dropna()))
        assert page.count("<svg") == want["table_name"].nunique() == everything["table_name"].nunique()
        # self-contained: no external reference of any kind, CSS inlined unescaped
        assert not re.search(r'(src|href)="(https?:)?//', page)
        assert "@import" not in page and "&#34;DejaVu Sans&#34;" not in page and '"DejaVu Sans"' in page
        assert 'href="samples.html#benchmark=' in page


def test_markdown_has_every_row(report, warehouse):
    expected = paper_tables(warehouse)
    text = (report / "fuxi.md").read_text(encoding="utf-8")
    want = expected[expected["benchmark"] == "fuxi"]
    n_lines = sum(1 for line in text.splitlines() if line.startswith("| ") and not line.startswith(("| row |", "| ---")))
    groups = want.groupby(["table_name", "split", "setting", "variant"])
    assert n_lines == sum(g.drop_duplicates(["row_label", "metric"]).shape[0] for _, g in groups)
    assert "100.0 [100.0, 100.0] 3/3 (100%)" in text


def test_index_links_pages_and_the_sample_browser(report):
    page = (report / "index.html").read_text(encoding="utf-8")
    for name in benchmarks.names():
        assert f'href="{name}.html"' in page and f'href="{name}.csv"' in page and f'href="{name}.md"' in page
    assert 'href="samples.html"' in page and 'href="results.json"' in page
    assert "Rebuilt from the warehouse" in page


def test_index_shows_the_notes_its_key_promises(report, warehouse):
    page = html.unescape((report / "index.html").read_text(encoding="utf-8"))
    headline = paper_tables(warehouse).query("headline")
    # the notes of the tables shown (a table with no score at all, e.g. withheld answers, is one line saying why)
    shown = headline.groupby(["benchmark", "table_name", "split", "setting", "variant"]).filter(
        lambda g: g["score"].notna().any())
    notes = set(shown["note"].dropna())
    assert notes, "the sample warehouse has no headline row with a note to show"
    for note in notes:
        assert note in page, f"index.html lacks the note {note!r}"


def test_samples_embed_every_response_with_prompt_gold_and_scores(report, warehouse):
    data = embedded((report / "samples.html").read_text(encoding="utf-8"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        total = con.execute("SELECT count(*) FROM responses").fetchall()[0][0]
        row = con.execute("""SELECT r.text, s.score, s.extracted, i.answer FROM responses r
            JOIN scores s USING (item_id, variant, setting, model) JOIN items i USING (item_id)
            WHERE r.item_id = 'aceval/dev/historical_facts/0' AND r.model = 'random'""").fetchall()[0]
    assert data["total"] == total == len(data["samples"]) and not data["capped"]
    sample = next(s for s in data["samples"] if s["id"] == "aceval/dev/historical_facts/0" and s["model"] == "random")
    assert (sample["response"], sample["rule"]["score"], sample["rule"]["extracted"]) == row[:3]
    assert data["golds"][sample["g"]].startswith(row[3] + "\n\nchoices:\nA. ")
    assert data["prompts"][sample["p"]].startswith("[user]\n")
    assert sample["status"] == ("correct" if row[1] == 1 else "wrong")
    assert {s["status"] for s in data["samples"]} >= {"correct", "wrong", "unscored"}


def test_cap_keeps_every_run_and_says_so(warehouse, tmp_path):
    write_reports(warehouse, tmp_path, max_samples=25)
    page = (tmp_path / "samples.html").read_text(encoding="utf-8")
    data = embedded(page)
    assert len(data["samples"]) == 25 and data["capped"] and data["total"] > 25
    assert f"Capped: 25 of {data['total']:,} samples are embedded" in page
    assert {(s["benchmark"], s["model"]) for s in data["samples"]} == {
        (b, m) for b in benchmarks.names() for m in ("oracle", "random")}
    assert "25 of" in (tmp_path / "index.html").read_text(encoding="utf-8")


def test_an_empty_warehouse_gives_a_report_that_says_so(warehouse, tmp_path):
    db = tmp_path / "empty.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        for table in ("paper_tables", "responses", "scores"):
            con.execute(f"DELETE FROM {table}")
    write_reports(db, tmp_path / "out")
    assert "No paper-table rows in this warehouse yet" in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert embedded((tmp_path / "out" / "samples.html").read_text(encoding="utf-8"))["samples"] == []
    assert json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["results"] == {}


def test_text_budget_caps_the_samples_too(warehouse, tmp_path):
    write_reports(warehouse, tmp_path, max_sample_bytes=40_000)
    page = (tmp_path / "samples.html").read_text(encoding="utf-8")
    data = embedded(page)
    assert 10 < len(data["samples"]) < data["total"] and data["capped"]
    text = sum(len(s["response"] or "") for s in data["samples"]) + sum(map(len, data["prompts"] + data["golds"]))
    assert 3 * text <= 40_000
    assert "about 40 kB of text" in page
    # the first samples of every run come first: every benchmark still has samples
    assert {s["benchmark"] for s in data["samples"]} == set(benchmarks.names())


def test_nasty_text_is_escaped_everywhere(warehouse, tmp_path):
    db = tmp_path / "nasty.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE responses SET text = ? WHERE item_id = 'aceval/dev/historical_facts/0' "
                    "AND model = 'random'", [NASTY])
        con.execute("UPDATE prompts SET messages = ? WHERE item_id = 'aceval/dev/historical_facts/0'",
                    [json.dumps([{"role": "user", "content": NASTY}])])
        con.execute("UPDATE paper_tables SET row_label = ?, note = ? WHERE benchmark = 'aceval' "
                    "AND table_name = 'by_subject' AND row_label = 'translation'", [NASTY, NASTY])
        nasty_rows = con.execute("SELECT count(*) FROM paper_tables WHERE row_label = ?", [NASTY]).fetchall()[0][0]
    out = tmp_path / "out"
    write_reports(db, out)
    for page in out.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<script>alert" not in text and "<b>bold</b>" not in text, page.name
        assert text.count("<script") == (2 if page.name == "samples.html" else 0), page.name
    aceval = (out / "aceval.html").read_text(encoding="utf-8")
    assert str(escape(NASTY)) in aceval
    data = embedded((out / "samples.html").read_text(encoding="utf-8"))
    sample = next(s for s in data["samples"] if s["id"] == "aceval/dev/historical_facts/0" and s["model"] == "random")
    assert sample["response"] == NASTY and data["prompts"][sample["p"]] == f"[user]\n{NASTY}"
    md = (out / "aceval.md").read_text(encoding="utf-8")
    assert "<script>" not in md and re.sub(r"([<>&])", r"\\\1", NASTY) in md
    assert pd.read_csv(out / "aceval.csv")["row"].tolist().count(NASTY) == nasty_rows > 0


def test_judge_disagreement_is_its_own_status(warehouse, tmp_path):
    db = tmp_path / "judged.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        con.execute("""INSERT INTO scores (item_id, benchmark, variant, setting, model, kind, scorer, score,
                reason, extracted, judge_model, details)
            SELECT item_id, benchmark, variant, setting, model, 'judge', 'judge', 0.0, 'the judge says no', 'B',
                'some-judge', '{}'
            FROM scores WHERE model = 'oracle' AND item_id = 'aceval/dev/historical_facts/0'""")
    write_reports(db, tmp_path / "out")
    data = embedded((tmp_path / "out" / "samples.html").read_text(encoding="utf-8"))
    sample = next(s for s in data["samples"] if s["id"] == "aceval/dev/historical_facts/0" and s["model"] == "oracle")
    assert sample["status"] == "disagree"
    assert sample["judge"] == {"score": 0.0, "extracted": "B", "reason": "the judge says no", "verdict": None,
                               "model": "some-judge", "p": None}   # no judge prompt stored for this row
    assert sample["rule"]["score"] == 1.0


@pytest.mark.parametrize(("rule", "judge", "expected"), [
    (1.0, None, "correct"), (0.0, None, "wrong"), (0.4, None, "partial"), (None, None, "unscored"),
    (float("nan"), None, "unscored"), (1.0, 0.0, "disagree"), (0.0, 1.0, "disagree"), (1.0, 0.8, "partial"),
    (None, 1.0, "correct"), (0.0, 0.2, "partial")])
def test_status(rule, judge, expected):
    assert status(rule, judge) == expected


def test_results_json_from_the_warehouse_alone(report, warehouse):
    info = json.loads((report / "results.json").read_text(encoding="utf-8"))
    assert info["from_run"] is False and info["timings"] is None and info["limit"] is None
    for package in ("wenheng", "dagster", "duckdb", "vllm", "torch", "pandas", "pyarrow", "sacrebleu", "opencc",
                    "datasketch"):
        assert package in info["packages"]
    assert info["packages"]["duckdb"] == duckdb.__version__
    if (Path(__file__).resolve().parents[3] / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{40}", info["git"]["commit"])
    assert set(info["models"]) == {"oracle", "random"}
    assert info["models"]["random"]["identity"] == {
        "engine": "baseline", "engine_version": f"wenheng {metadata.version('wenheng')}", "model": "random", "seed": 0}
    assert info["config"]["models"]["file"] == str(warehouse.parent / "models.yaml")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        lead = con.execute("SELECT benchmark, count(*) FROM paper_tables WHERE headline GROUP BY 1").fetchall()
        files = con.execute("SELECT count(DISTINCT source_file) FROM items WHERE benchmark = 'wyweb'").fetchall()[0][0]
        answered = con.execute("SELECT count(*) FROM responses WHERE model = 'random'").fetchall()[0][0]
    assert info["models"]["random"]["responses"] == answered > 0
    assert {b: len(rows) for b, rows in info["results"].items()} == dict(lead)
    wyweb = info["sources"]["wyweb"]
    assert wyweb["versions"] == ["sample-1"] and len(wyweb["files"]) == files
    assert all(re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) for f in wyweb["files"])


def test_results_json_from_a_run_masks_secrets(warehouse, tmp_path, monkeypatch):
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("WENHENG_TEST_KEY", key)
    from pipeline import redact
    redact.watch_env("WENHENG_TEST_KEY")
    models = tmp_path / "models.yaml"
    models.write_text(f"""models:
  oracle: {{engine: baseline, strategy: oracle}}
  random: {{engine: baseline, strategy: random, seed: 0}}
  remote:
    engine: openai
    base_url: https://user:hunter22@example.org/v1?note={key}
    api_key_env: WENHENG_TEST_KEY
    api_key: literal-secret-value
    headers: {{Authorization: Bearer abcdefgh12345}}
    max_tokens: 512
    access_token: token-value-0042
""", encoding="utf-8")
    run_info = build_run_info(["wenheng", "run", "--models", str(models)], datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
                              timings={"prepare": 1.25, "evaluate": 2.5, "publish": 0.5}, limit=10,
                              benchmarks=["aceval"], models=["oracle"], models_file=models)
    write_reports(warehouse, tmp_path / "out", run_info)
    text = (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    for secret in (key, "hunter22", "literal-secret-value", "abcdefgh12345", "token-value-0042"):
        assert secret not in text
    info = json.loads(text)
    remote = info["config"]["models"]["content"]["models"]["remote"]
    assert remote["api_key_env"] == "WENHENG_TEST_KEY" and remote["api_key"] == "[REDACTED]"
    # only credentials are masked: a setting that merely names tokens keeps its value
    assert remote["max_tokens"] == 512 and remote["access_token"] == "[REDACTED]"
    assert remote["base_url"].startswith("https://[REDACTED]@example.org/v1")
    assert info["timings"] == {"prepare": 1.25, "evaluate": 2.5, "publish": 0.5} and info["limit"] == 10
    assert info["run"]["started_at"] == "2026-01-02T03:04:05+00:00" and info["from_run"] is True
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "time: evaluate" in page and "2.5 s" in page and "wenheng run --models" in page


def test_samples_jsonl_holds_every_response_with_its_scores(report, warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        counts = dict(con.execute("SELECT benchmark, count(*) FROM responses GROUP BY 1").fetchall())
    assert counts
    for benchmark, n in counts.items():
        lines = (report / f"samples_{benchmark}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == n, benchmark
        first = json.loads(lines[0])
        assert {"item_id", "prompt", "response", "gold", "rule", "judge", "status", "tokens_in", "tokens_out",
                "latency_s"} <= set(first)
        oracle = [json.loads(line) for line in lines if '"model": "oracle"' in line]
        assert oracle and all(s["rule"]["scorer"] for s in oracle)


def test_results_json_holds_every_table_row_and_how_intervals_were_made(report, warehouse):
    info = json.loads((report / "results.json").read_text(encoding="utf-8"))
    rows = paper_tables(warehouse)
    assert sum(len(v) for v in info["tables"].values()) == len(rows)
    assert info["bootstrap"] == {"method": "poisson", "replicates": 1000, "seed": "wenheng",
                                 "interval": "2.5th-97.5th percentile"}
    assert info["environment"]["python"] and info["environment"]["cpu_count"] >= 1
    assert all("scored_by" in r and "comparable" in r for v in info["tables"].values() for r in v)
    aceval = info["protocols"]["aceval"]
    assert re.fullmatch(r"[0-9a-f]{64}", aceval["file_sha256"]) and "zero_shot_ao" in aceval["settings"]
    assert len(set(aceval["settings"].values())) == len(aceval["settings"])   # each setting its own hash
    assert info["judge_prompts"] == []   # no judge in this warehouse


def test_a_judge_free_wenmind_overall_says_what_it_covers(warehouse, report):
    """No judge configured: WenMind's paper judges its answers, so its rows are marked not
    comparable, with the rule-scored share in the note, in the warehouse, CSV and pages."""
    rows = paper_tables(warehouse)
    overall = rows[(rows["benchmark"] == "wenmind") & rows["headline"] & (rows["model"] == "oracle")]
    assert len(overall) and not overall["comparable"].any()
    note = overall["note"].iloc[0]
    assert "no judge here (rule-scored items only: " in note
    assert f"{int(overall['n_scored'].iloc[0]):,}/{int(overall['n_items'].iloc[0]):,}" in note
    assert set(rows[rows["benchmark"] == "aceval"]["comparable"]) == {True}   # rule-scored in its paper too
    csv = pd.read_csv(report / "wenmind.csv")
    assert {"scored_by", "comparable"} <= set(csv.columns) and (csv["comparable"] == False).any()  # noqa: E712
    assert "†" in (report / "wenmind.html").read_text(encoding="utf-8")
    assert "†" in (report / "wenmind.md").read_text(encoding="utf-8")


def test_compare_gives_paired_differences(warehouse, monkeypatch, capsys):
    from pipeline import cli
    from pipeline.compare import compare, shared_runs

    with duckdb.connect(str(warehouse), read_only=True) as con:
        frame = compare(con, "oracle", "random", ["aceval"])
        assert shared_runs(con, "oracle", "random", ["aceval"]) == 2   # dev (scored) and test (withheld)
        differences = con.execute("""SELECT count(*) FROM model_differences WHERE benchmark = 'aceval'
            AND (score_a IS NOT NULL OR score_b IS NOT NULL)""").fetchone()[0]
    assert len(frame) and differences == 2 * len(frame)   # each pair both ways (withheld rows: no number)
    scored = frame.dropna(subset=["difference"])
    assert (scored["difference"] > 0).all()                       # the oracle is right everywhere
    big = scored[scored["n_items"] >= 8]
    assert len(big) and (big["ci_low"] > 0).all() and (big["p_value"] < 0.05).all()
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(warehouse))
    assert cli.main(["compare", "oracle", "random", "--benchmark", "aceval", "--headline"]) == 0
    out = capsys.readouterr().out
    assert "oracle - random" in out and "95% interval" in out
    assert cli.main(["compare", "oracle", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no responses of model 'nosuch'" in err


def test_headline_only_pairs_are_the_headline_rows_of_the_full_computation(warehouse):
    """The compare page asks only for the headline tables: the same numbers as computing every
    table and keeping the headline rows."""
    from pipeline.compare import pairwise

    with duckdb.connect(str(warehouse), read_only=True) as con:
        full = pairwise(con, ["oracle", "random"])
        headline = pairwise(con, ["oracle", "random"], headline_only=True)
    assert full.keys() == headline.keys() and headline
    for pair, frame in headline.items():
        kept = full[pair][full[pair]["headline"]].reset_index(drop=True)
        assert len(frame) and frame["headline"].all()
        pd.testing.assert_frame_equal(frame.reset_index(drop=True), kept, check_dtype=False)


def test_compare_page_pairs_every_two_models_on_headline_rows(report):
    page = (report / "compare.html").read_text(encoding="utf-8")
    assert 'href="compare.html"' in (report / "index.html").read_text(encoding="utf-8")
    assert "oracle − random" in page and "95% interval" in page
    assert page.count("<h2") == 1   # two models: one pair


# ---- one colour per model, withheld answers, the judge's verdict -------------------------------------

def palette_fills(page: str) -> set[str]:
    from pipeline.charts import COLOURS

    return set(re.findall(r"fill: ?(#[0-9a-f]{6})", page.lower())) & {c.lower() for c in COLOURS}


def test_a_model_has_one_colour_in_every_chart_of_the_report(warehouse, tmp_path):
    """Fùxì without the oracle: random keeps the colour it has on every other page (models sorted:
    oracle first, random second), not the first colour as the only model of those charts."""
    from pipeline.charts import COLOURS, model_colours

    db = tmp_path / "fewer.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM paper_tables WHERE benchmark = 'fuxi' AND model = 'oracle'")
    write_reports(db, tmp_path / "out")
    colours = model_colours(["random", "oracle"])
    assert colours == {"oracle": COLOURS[0], "random": COLOURS[1]}
    assert palette_fills((tmp_path / "out" / "fuxi.html").read_text(encoding="utf-8")) == {COLOURS[1].lower()}
    for name in set(benchmarks.names()) - {"fuxi"}:
        assert palette_fills((tmp_path / "out" / f"{name}.html").read_text(encoding="utf-8")) == {
            COLOURS[0].lower(), COLOURS[1].lower()}, name


WITHHELD = "AC-EVAL test split · zero_shot_ao · original: answers withheld, no scores"


def test_withheld_answers_are_one_line_not_empty_cells(report, warehouse):
    """AC-EVAL's test split (every row n_scored 0) is one line in the pages, the Markdown and the
    leaderboard text, and its empty series are not drawn in the charts."""
    from pipeline.benchmarks import cards
    from pipeline.reports.text import blocks

    rows = paper_tables(warehouse)
    test = rows[(rows["benchmark"] == "aceval") & (rows["split"] == "test")]
    assert len(test) and (test["n_scored"] == 0).all()   # the situation this is about
    page = (report / "aceval.html").read_text(encoding="utf-8")
    line = f'<p class="no-scores">{WITHHELD} (<code>wenheng submission aceval</code>)</p>'
    assert page.count(line) == rows[rows["benchmark"] == "aceval"]["table_name"].nunique()
    assert "split test" not in page and not re.search(r'class="cov">n 0/', page)
    assert ">no score<" not in page and not re.search(r">(oracle|random) · test<", page)   # no empty bars or series
    assert page.count("no score, not drawn: oracle · test, random · test") == page.count("<svg") > 0
    index = (report / "index.html").read_text(encoding="utf-8")
    assert index.count(line) == 1 and "split test · setting zero_shot_ao" not in index
    md = (report / "aceval.md").read_text(encoding="utf-8")
    assert f"{WITHHELD} (`wenheng submission aceval`)" in md and "split test" not in md
    headline = rows[rows["headline"]].sort_values(["benchmark", "row_order"])
    text = blocks(headline.astype(object).where(headline.notna(), None),
                  {name: c.title for name, c in cards().items()})
    assert text.count(f"{WITHHELD} (`wenheng submission aceval`)") == 1
    assert "(split test, setting zero_shot_ao" not in text
    assert len(re.findall(r"^average ", text, re.M)) == 1   # AC-EVAL's average: dev's row, no row of dashes
    assert "(split dev, setting zero_shot_ao, variant original)" in text   # the scored dev rows stay
    everything = rows[rows["benchmark"] == "aceval"]
    text = blocks(everything.astype(object).where(everything.notna(), None), {"aceval": "AC-EVAL"})
    assert text.count(WITHHELD) == 1   # one line for the run setting, however many tables


def test_a_run_setting_with_nothing_scored_says_so(warehouse):
    """A benchmark whose answers are not withheld but have no score: "no scored items", no command."""
    from pipeline.reports import render
    from pipeline.reports.text import blocks

    rows = paper_tables(warehouse)
    fuxi = rows[rows["benchmark"] == "fuxi"].assign(n_scored=0, score=None, ci_low=None, ci_high=None)
    fuxi = fuxi.astype(object).where(fuxi.notna(), None)
    text = blocks(fuxi, {"fuxi": "Fùxì"})
    assert "Fùxì test split · zero_shot · original: no scored items" in text
    assert "wenheng submission" not in text and " 0/" not in text
    tables = render.benchmark_tables(benchmarks.card("fuxi"), fuxi)
    assert all(t["chart"] is None for t in tables)   # nothing to draw
    groups = [g for t in tables for g in t["groups"]]
    assert groups and all(g["empty"] == {"head": "Fùxì test split · zero_shot · original",
                                         "why": "no scored items", "command": None} for g in groups)
    md = render.markdown(benchmarks.card("fuxi"), tables)
    assert "Fùxì test split · zero\\_shot" not in md and "Fùxì test split · zero_shot · original: no scored items" in md


def test_samples_show_the_judges_verdict(warehouse, tmp_path):
    item = "aceval/dev/historical_facts/0"
    verdict = "【评分理由】<b>选项</b>正确。\n【得分】2/3"
    db = tmp_path / "judged.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        con.execute("""INSERT INTO scores (item_id, benchmark, variant, setting, model, kind, scorer, score,
                reason, extracted, judge_model, details)
            SELECT item_id, benchmark, variant, setting, model, 'judge', 'judge:binary@wenheng-1', 2 / 3,
                'two of three points', 'A', 'some-judge', '{}'
            FROM scores WHERE model = 'oracle' AND item_id = ?""", [item])
        con.execute("""INSERT INTO judgements (item_id, benchmark, variant, setting, model, judge_model, prompt_set,
                prompt_version, score_type, prompt_id, attempts, verdict, score, extracted, reason, messages)
            SELECT item_id, benchmark, variant, setting, model, 'some-judge', 'wenheng', '1', 'binary', 'x', 1, ?,
                2 / 3, 'A', 'two of three points', ?
            FROM scores WHERE model = 'oracle' AND item_id = ? AND kind = 'rule'""",
                    [verdict, json.dumps([{"role": "user", "content": "请评判：考生答案 A"}], ensure_ascii=False), item])
    write_reports(db, tmp_path / "out")
    page = (tmp_path / "out" / "samples.html").read_text(encoding="utf-8")
    data = embedded(page)
    sample = next(s for s in data["samples"] if s["id"] == item and s["model"] == "oracle")
    assert sample["judge"]["verdict"] == verdict and sample["judge"]["score"] == pytest.approx(2 / 3)
    others = [s for s in data["samples"] if s["judge"] and s is not sample]
    assert all(s["judge"]["verdict"] is None for s in others)
    assert "judge's verdict" in page and "<b>选项</b>" not in page   # shown as text, by the page's script
    # the judge's prompt, stored once among the prompts, behind "the judge's prompt"
    assert "请评判：考生答案 A" in data["prompts"][sample["judge"]["p"]] and "the judge's prompt" in page
    line = next(json.loads(x) for x in (tmp_path / "out" / "samples_aceval.jsonl").read_text(encoding="utf-8")
                .splitlines() if f'"item_id": "{item}"' in x and '"model": "oracle"' in x)
    assert line["judge"]["prompt"] == [{"role": "user", "content": "请评判：考生答案 A"}]


def test_chance_levels_show_beside_the_scores(report):
    """CP-DUE's card declares its chance levels: the page has a chance column (CK: 3 options, 33.3),
    and so does the CSV."""
    page = (report / "cpdue.html").read_text(encoding="utf-8")
    assert '<th class="num">chance</th>' in page and '<td class="num muted">33.3</td>' in page
    csv = pd.read_csv(report / "cpdue.csv")
    assert "chance" in csv.columns and csv["chance"].notna().any()


def test_the_sample_browser_shows_extracted_answers_as_text():
    from pipeline.reports.data import shown_extracted
    from pipeline.scoring.extract import AMBIGUOUS, EMPTY, NO_ANSWER, UNMATCHED

    assert shown_extracted('["1"]') == "1" and shown_extracted('["A", "C"]') == "A, C"
    assert shown_extracted("[]") == "(none)" and shown_extracted("[not json") == "[not json"
    assert shown_extracted(UNMATCHED) == "not found in the response"
    assert all(shown_extracted(s).isascii() for s in (NO_ANSWER, AMBIGUOUS, UNMATCHED, EMPTY))
    assert shown_extracted("B") == "B" and shown_extracted("2/3") == "2/3" and shown_extracted(None) is None


def test_the_papers_models_are_shown_beside_every_view(warehouse, report, monkeypatch, capsys):
    """published_scores holds every card's rows; the leaderboard, the pages, the Markdown and the
    UI's tables show them beside the user's rows, marked published (paper, table)."""
    from pipeline import cli
    from pipeline.reports.text import scores_markdown

    with duckdb.connect(str(warehouse), read_only=True) as con:
        published = con.execute("SELECT * FROM published_scores").df()
        headline = con.execute("SELECT * FROM paper_tables WHERE headline ORDER BY benchmark, row_order").df()
    expected = pd.concat([c.published.rows(n) for n, c in benchmarks.cards().items()], ignore_index=True)
    assert len(published) == len(expected) and set(published["benchmark"]) == set(benchmarks.names())
    gpt4 = published[(published["model"] == "GPT-4") & (published["row_label"] == "overall")]
    assert list(gpt4["score"]) == [50.2] and list(gpt4["source"]) == ["WenMind paper, Table 3"]

    monkeypatch.setenv("WENHENG_WAREHOUSE", str(warehouse))
    assert cli.main(["leaderboard"]) == 0
    out = capsys.readouterr().out
    assert "published (WenMind paper, Table 3)" in out and "39.5 [13.0, 64.3] ·31" in out   # Average left out
    assert "published (WYWEB paper, Table 2; fine-tuned, test split)" in out   # the paper's only setting, named
    # where a model would rank among the paper's models, for a row comparable to the paper only: here
    # WenMind's judged items were scored by rules (no judge configured), so it gets no rank
    assert re.search(r"oracle 100\.0 would rank 1 of 10 \(next below: DeBERTa-base 75\.9\)", out)
    assert re.search(r"overall +100\.0† .*\n  note: overall: not comparable", out)
    assert "would rank 1 of 32" not in out

    page = (report / "cpdue.html").read_text(encoding="utf-8")
    assert "published (CP-DUE paper, Table 2)" in page and "Doubao-seed-1.6" in page and "90.3" in page
    assert "published (median, range)" in page   # the chart's grey series
    assert "published (WenMind paper, Table 3)" in (report / "index.html").read_text(encoding="utf-8")
    assert "84.5 [75.5, 90.3] ·7" in (report / "cpdue.md").read_text(encoding="utf-8")
    ui = scores_markdown(headline.astype(object).where(headline.notna(), None), {}, None, published)
    assert "| published |" in ui and "published (CP-DUE paper, Table 2): the paper's own models" in ui


def test_compare_with_a_papers_model_gives_point_differences_only(warehouse, monkeypatch, capsys):
    from pipeline import cli
    from pipeline.compare_published import compare_published

    with duckdb.connect(str(warehouse), read_only=True) as con:
        frame = compare_published(con, "oracle", "GPT-4o", ["cpdue"])
        mine = con.execute("SELECT row_label, score FROM paper_tables WHERE model = 'oracle' AND benchmark = 'cpdue'"
                           ).df().set_index("row_label")["score"]
    assert len(frame) == 11 and set(frame["source"]) == {"CP-DUE paper, Table 2"}
    ck = frame.set_index("row_label").loc["CK"]
    assert ck["published_score"] == 75.45 and abs(ck["difference"] - (mine["CK"] - 75.45)) < 1e-9
    monkeypatch.setenv("WENHENG_WAREHOUSE", str(warehouse))
    assert cli.main(["compare", "oracle", "paper:GPT-4o", "--benchmark", "cpdue"]) == 0
    out = capsys.readouterr().out
    assert "a point difference only" in out and "no paired interval or p-value" in out and "p " not in out
    assert cli.main(["compare", "oracle", "paper:gpt4o"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean" in err and "GPT-4o" in err
    assert cli.main(["compare", "paper:GPT-4o", "oracle"]) == 2
    assert "name your model first" in capsys.readouterr().err


def test_results_and_samples_carry_lm_eval_s_keys(report, warehouse, tmp_path):
    """results.json: per benchmark x setting its n-shot, each metric's direction and a config
    hash; samples: doc, prompt and target hashes, equal to the warehouse's; the chat template's
    sha256 from a model folder."""
    from pipeline.benchmarks import cards
    from pipeline.reports.results import chat_template_sha256

    info = json.loads((report / "results.json").read_text(encoding="utf-8"))
    aceval = info["configs"]["aceval/zero_shot_ao"]
    assert aceval["n_shot"] == cards()["aceval"].protocol.settings["zero_shot_ao"].shots == 0
    assert aceval["higher_is_better"] == {"accuracy": True, "mean": True}
    assert re.fullmatch(r"[0-9a-f]{64}", aceval["config_sha256"])
    assert len({c["config_sha256"] for c in info["configs"].values()}) == len(info["configs"])
    with duckdb.connect(str(warehouse), read_only=True) as con:
        hashes = {(r[0], r[1]): r[2:] for r in con.execute(
            """SELECT r.item_id, r.model, i.content_hash, r.prompt_hash, i.answer_hash FROM responses r
               JOIN items i USING (item_id) WHERE r.benchmark = 'cpdue'""").fetchall()}
    lines = [json.loads(line) for line in (report / "samples_cpdue.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines and all((s["doc_hash"], s["prompt_hash"], s["target_hash"]) == hashes[(s["item_id"], s["model"])]
                         for s in lines)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}), encoding="utf-8")
    assert chat_template_sha256({"model": str(tmp_path)}) == hashlib.sha256(b"{{ messages }}").hexdigest()
    assert chat_template_sha256({"model": str(tmp_path / "nosuch")}) is None
