"""The report in a real browser (Debian's chromium driven by Playwright): the index links the
pages, a benchmark page shows its chart and tables with n and coverage, and the sample browser
filters by model and score and shows a sample's prompt, response and gold side by side.

Skips when chromium or Playwright is missing, unless WENHENG_REQUIRE_BROWSER=1 (then it fails).
Screenshots go to a temp dir, and also to WENHENG_SCREENSHOTS=<dir> when set; WENHENG_CHROMIUM names
another chromium binary."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import duckdb
import pytest

from pipeline import benchmarks

CHROMIUM = Path(os.environ.get("WENHENG_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


NASTY = "</script><script>alert('x')</script><img src=x onerror=alert(1)> & \"q\" 文衡"
NASTY_ITEM = "cpdue/test/CK/ck-001"
# the LLM judge's verdict on one of the oracle's rule-unscored answers (a WenMind open question)
VERDICT = "【评分理由】译文要点三得其二，漏了反问语气。\n【得分】2/3"


def _unavailable(reason: str) -> None:
    if os.environ.get("WENHENG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"WENHENG_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def can_browse() -> None:
    """Skip (or fail) before any work when there is no browser to drive."""
    if not CHROMIUM.is_file():
        _unavailable(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def browser(can_browse):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def report(can_browse, baseline_build, tmp_path_factory) -> Path:
    """A report of a real baseline run on the samples (a copy of the session's baseline build)."""
    from pipeline.reports import write_reports

    base = tmp_path_factory.mktemp("report_run")
    with pytest.MonkeyPatch.context() as mp:
        baseline_build.copy(base, mp)
    # one answer that would run script if any page put data into HTML unescaped
    with duckdb.connect(str(base / "warehouse.duckdb")) as con:
        con.execute("UPDATE responses SET text = ? WHERE item_id = ? AND model = 'oracle'", [NASTY, NASTY_ITEM])
        judged = """SELECT item_id, benchmark, variant, setting, model FROM scores WHERE benchmark = 'wenmind'
            AND model = 'oracle' AND kind = 'rule' AND score IS NULL ORDER BY item_id LIMIT 1"""
        con.execute(f"""INSERT INTO scores (item_id, benchmark, variant, setting, model, kind, scorer, score, reason,
                extracted, judge_model, details)
            SELECT *, 'judge', 'judge:scoring_points@wenheng-1', 2 / 3, 'two of three points', '2/3', 'a-judge', '{{}}'
            FROM ({judged})""")
        con.execute(f"""INSERT INTO judgements (item_id, benchmark, variant, setting, model, judge_model, prompt_set,
                prompt_version, score_type, prompt_id, attempts, verdict, score, extracted, reason)
            SELECT *, 'a-judge', 'wenheng', '1', 'scoring_points', 'T1', 1, ?, 2 / 3, '2/3', 'two of three points'
            FROM ({judged})""", [VERDICT])
    write_reports(base / "warehouse.duckdb", base / "report")
    return base / "report"


@pytest.fixture
def page(report, browser, tmp_path):   # the report first: Playwright's event loop must not be running under Dagster
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    # self-contained: any request other than the report's own files fails the test
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file://") else None)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    yield page
    context.close()
    assert requests == [], f"the report fetched from the network: {requests}"
    assert errors == [], f"errors in the page: {errors}"


def shot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 5_000
    if os.environ.get("WENHENG_SCREENSHOTS"):
        out = Path(os.environ["WENHENG_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, out / path.name)


def test_index_links_every_benchmark_and_the_sample_browser(page, report, tmp_path):
    page.goto((report / "index.html").as_uri())
    for name in benchmarks.names():
        link = page.locator(f"nav a[href='{name}.html']")
        assert link.count() == 1
    assert page.locator("a[href='samples.html']").first.is_visible()
    # headline tables carry n and coverage in every filled cell
    cells = page.locator("table.paper td.num .cov")
    assert cells.count() > 10
    assert all("coverage" in t for t in cells.all_inner_texts())
    shot(page, tmp_path, "index")
    page.locator("nav a[href='wenmind.html']").click()
    page.wait_for_load_state()
    assert page.url.endswith("wenmind.html")


def test_benchmark_page_shows_chart_and_tables_with_n_and_coverage(page, report, tmp_path):
    page.goto((report / "fuxi.html").as_uri())
    chart = page.locator("section#by_task .chart svg")
    chart.wait_for(state="visible")
    box = chart.bounding_box()
    assert box["width"] > 400 and box["height"] > 300
    # the chart's labels carry n and coverage; the tables beside it too
    assert "n=3, cov 100%" in chart.inner_html()
    table = page.locator("section#by_task table.paper").first
    assert table.is_visible()
    header = table.locator("thead th").all_inner_texts()
    # the chance level, a column per model, and the paper's own models summed up
    assert header[1:] == ["chance", "oracle", "random", "published"]
    first = table.locator("tbody tr").first.locator("td").nth(1).inner_text()
    assert "100.0" in first and "[100.0, 100.0]" in first and "n 3/3" in first and "coverage 100%" in first
    assert re.fullmatch(r"\d+\.\d \[\d+\.\d, \d+\.\d\] ·17", table.locator("tbody tr").first.locator("td").last.inner_text())
    # the paper's rows, collapsed under the table until opened, greyed
    published = page.locator("section#by_task details.published").first
    assert not published.locator("table").is_visible()
    published.locator("summary").click()
    assert published.locator("summary").inner_text().startswith("published (Fùxì paper, Table 3, Table 4): 17 rows")
    models = published.locator("thead th").all_inner_texts()
    assert "qwen2.5-72b" in models and "gpt-4o" in models
    assert "published (median, range)" in chart.inner_html()
    shot(page, tmp_path, "benchmark_fuxi")
    chart.scroll_into_view_if_needed()
    page.locator("section#by_category").scroll_into_view_if_needed()
    shot(page, tmp_path, "benchmark_fuxi_categories")
    page.locator("a[href='samples.html#benchmark=fuxi']").click()
    page.wait_for_load_state()
    assert page.locator("#f-benchmark").input_value() == "fuxi"


def test_sample_browser_filters_and_shows_a_sample(page, report, tmp_path):
    db = report.parent / "warehouse.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        wrong = con.execute("""SELECT count(*) FROM scores WHERE model = 'random' AND kind = 'rule'
            AND score <= 0""").fetchall()[0][0]
        total = con.execute("SELECT count(*) FROM responses").fetchall()[0][0]
    from playwright.sync_api import expect

    page.goto((report / "samples.html").as_uri())
    assert page.locator("#count").inner_text() == f"{total} of {total} samples"
    page.select_option("#f-model", "random")
    page.select_option("#f-status", "wrong")
    assert page.locator("#count").inner_text() == f"{wrong} of {total} samples"
    rows = page.locator("#list tbody tr")
    assert rows.count() == wrong > 0
    assert all("random" in t for t in rows.all_inner_texts())
    # a multiple-choice item: its prompt, the wrong letter, the gold letter and choices
    page.select_option("#f-benchmark", "aceval")
    rows.first.click()
    prompt, response, gold = (page.locator(f"#d-{k}") for k in ("prompt", "response", "gold"))
    for part in (prompt, response, gold):
        assert part.is_visible() and part.inner_text().strip()
    assert "[user]" in prompt.inner_text()
    assert "choices:" in gold.inner_text()
    scores = page.locator("#d-scores tbody tr").all_inner_texts()
    assert scores and scores[0].split()[:2] == ["rule", "0.00"]   # 2 decimals, as every score
    assert page.url.endswith("#benchmark=aceval&model=random&status=wrong")
    shot(page, tmp_path, "samples")
    # free text narrows further; nothing matches nonsense
    page.fill("#f-text", "no such text anywhere 0xdeadbeef")
    expect(page.locator("#count")).to_have_text(re.compile(r"^0 of "))
    assert rows.count() == 0


def test_sample_text_is_shown_as_text(page, report, tmp_path):
    from playwright.sync_api import expect

    page.goto((report / "samples.html").as_uri() + "#model=oracle&q=onerror")
    rows = page.locator("#list tbody tr")
    expect(rows).to_have_count(1)
    rows.first.click()
    assert page.locator("#d-response").inner_text() == NASTY
    assert page.locator("img").count() == 0


def _natural(text: str) -> list:
    """Sort key of the page's numeric-aware, case-blind order: item/2 before item/10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in re.split(r"(\d+)", text) if t]


def _counted(score_cell: str) -> float | None:
    """The score that counts from a list row's score cell ("rule 0 · judge 0.67"): the judge's, else the rule's."""
    found = dict(re.findall(r"(rule|judge) (\S+)", score_cell.splitlines()[0]))
    value = found.get("judge", found.get("rule", "–"))
    return None if value == "–" else float(value)


@pytest.mark.parametrize("width", [1280, 1920])
def test_sample_browser_fits_sorts_and_shows_the_judges_verdict(report, browser, tmp_path, width):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((report / "samples.html").as_uri())
    rows = page.locator("#list tbody tr")
    rows.nth(3).click()
    # everything fits: no sideways scrolling of the page or the list, the score column inside the list
    fit = page.evaluate("""() => {
        const box = (el) => document.querySelector(el).getBoundingClientRect();
        const list = document.querySelector(".listbox");
        return {page: document.documentElement.scrollWidth, listScroll: list.scrollWidth, listWidth: list.clientWidth,
                score: box("#list thead th:last-child").right, listRight: box(".listbox").right,
                scores: box("#d-scores").right, detail: box("#detail").right};
    }""")
    assert fit["page"] <= width and fit["listScroll"] <= fit["listWidth"], fit
    assert fit["score"] <= fit["listRight"] <= width and fit["scores"] <= width and fit["detail"] <= width, fit
    assert page.locator("#list tbody tr td.score").first.is_visible()
    # sort by a column's header: score up (unscored last), score down, model, task, item id
    scores = page.locator("#list tbody td.score")
    page.locator("#list thead th[data-sort=score] button").click()
    expect(page.locator("#list thead th[data-sort=score]")).to_have_attribute("aria-sort", "ascending")
    counted = [_counted(t) for t in scores.all_inner_texts()]
    numbers = [c for c in counted if c is not None]
    assert numbers == sorted(numbers) and counted == numbers + [None] * (len(counted) - len(numbers))
    assert "sort=score" in page.url
    page.locator("#list thead th[data-sort=score] button").click()
    expect(page.locator("#list thead th[data-sort=score]")).to_have_attribute("aria-sort", "descending")
    numbers = [c for c in map(_counted, scores.all_inner_texts()) if c is not None]
    assert numbers == sorted(numbers, reverse=True) and numbers[0] == 1
    assert "sort=-score" in page.url
    for column, nth in (("model", 2), ("task", 1), ("id", 0)):
        page.locator(f"#list thead th[data-sort={column}] button").click()
        shown = [row.split("\n")[0] for row in page.locator(f"#list tbody td:nth-child({nth + 1})").all_inner_texts()]
        assert shown == sorted(shown, key=_natural), (column, shown[:5])
        assert page.locator("#list thead th[aria-sort]").get_attribute("data-sort") == column
    shot(page, tmp_path, f"samples_sorted_{width}")
    # the judged sample: its score to 2 decimals, the judge's verdict beside score and reason
    page.select_option("#f-model", "oracle")
    page.select_option("#f-status", "partial")
    expect(rows).to_have_count(1)
    assert "judge 0.67" in rows.first.inner_text()
    rows.first.click()
    judge = page.locator("#d-scores tbody tr.score-judge td").all_inner_texts()
    assert judge == ["judge", "0.67", "2/3", "two of three points", VERDICT, "a-judge"]
    assert "0.666" not in page.locator("#list").inner_text() + page.locator("#d-scores").inner_text()
    assert page.locator("#d-scores thead th").nth(4).inner_text().lower() == "judge's verdict"
    shot(page, tmp_path, f"samples_judged_{width}")
    context.close()
    assert errors == [], errors
