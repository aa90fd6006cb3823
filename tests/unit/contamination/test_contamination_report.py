"""What people read about contamination against their corpora: `report_text` (the text of
`wenheng contamination report`) and the report's contamination.html, on the constructed lake of
test_contamination_warehouse: the rates, histogram, examples and all-vs-clean rows, the page
linked from index.html only when a corpus was scanned, and every text escaped."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest
from markupsafe import escape
from test_contamination_warehouse import write_lake

from pipeline import paths
from pipeline.contamination.tables import NO_CORPUS, corpus_names, report_text, snippet
from pipeline.reports import write_reports
from pipeline.warehouse import publish

NASTY = "</script><script>alert('x')</script> & \"quotes\" <b>bold</b> <!-- 注释 --> ]]>"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("contamination_report")
    publish(base / "warehouse.duckdb", write_lake(base / "lake"), paths.SQL_DIR)
    return base / "warehouse.duckdb"


@pytest.fixture(scope="module")
def text(warehouse) -> str:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return report_text(con)


def section(text: str, corpus: str) -> str:
    start = text.index(f"corpus {corpus} (")
    end = text.find("\ncorpus ", start + 1)
    return text[start:end if end > 0 else None]


def line(text: str, *words: str) -> list[str]:
    """The cells of the one line that holds all these words (split on runs of 2+ spaces)."""
    found = [ln for ln in text.splitlines() if all(w in ln.split() for w in words)]
    assert len(found) == 1, (words, found)
    return re.split(r"\s{2,}", found[0].strip())


def test_corpus_names(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert corpus_names(con) == ["news.v2", "poetry"]


def test_the_report_prints_rates_fields_and_histogram(text):
    poetry = section(text, "poetry")
    assert poetry.startswith("corpus poetry (version 1): 13-character n-grams, the benchmarks' template wording "
                             "set aside; an item is contaminated (level item) when one document holds a share >= 0.50")
    assert "items 8: checked 7, too short to check 1, contaminated 3 (42.9% of those checked)" in poetry
    assert "corpus files: 1 with evidence, 1 quarantined (not read)" in poetry
    assert "quarantined /corpora/poetry/bad.json: not valid JSON: <oops>" in poetry
    assert ("read: 120 documents from 3 files, 2 bad lines skipped, 1 empty files, 0 invalid UTF-8 sequences "
            "(first bad line: /corpora/poetry/a.jsonl: a line is not JSON (Expecting value))") in poetry
    assert "read:" not in section(text, "news.v2")   # no reading row: no line
    # benchmark, task, items, checked, too short, contaminated, rate, with answer, item, source only and its rate
    assert line(poetry, "aceval", "(all)") == ["aceval", "(all)", "6", "5", "1", "3", "60.0%", "0", "3", "0", "0.0%"]
    assert line(poetry, "aceval", "historical_facts")[2:7] == ["4", "3", "1", "2", "66.7%"]
    assert line(poetry, "wyweb", "(all)")[5:7] == ["0", "0.0%"]
    assert "gjc" not in poetry.split("own n-grams per field")[0]       # no contaminated item: no task row
    assert line(poetry, "aceval", "input", "5") == ["aceval", "input", "5", "2", "40.0%", "0.40", "0.30", "3"]
    assert line(poetry, "aceval", "label", "4") == ["aceval", "label", "4", "1", "25.0%", "0.20", "0.10", "2"]
    histogram = {c[0]: int(c[1]) for c in (line(poetry, label) for label in
                                           ["0.0-0.1", "0.1-0.2", "0.2-0.3", "0.5-0.6", "0.8-0.9"])}
    # the specific share: both fields' own n-grams together (8/15, 8/10, 4/15, 4/15, 0, 0, 2/15)
    assert histogram == {"0.0-0.1": 2, "0.1-0.2": 1, "0.2-0.3": 2, "0.5-0.6": 1, "0.8-0.9": 1}
    assert line(poetry, "no", "n-gram")[:2] == ["no n-gram", "1"]


def test_the_report_shows_examples_of_each_level(text):
    poetry = section(text, "poetry")
    flagged, rest = poetry.split("contaminated (item, item with answer)")[1].split("source only (the corpus")
    assert [ln.split()[0] for ln in flagged.splitlines()[2:5]] == [
        "aceval/dev/historical_facts/1", "aceval/dev/historical_facts/0", "aceval/dev/geography/0"]
    assert "specific in doc-0: 學而時習之 label aceval/dev/geography/0" in flagged
    below = rest.split("clean, with some")[1].split("headline")[0]
    assert [ln.split()[0] for ln in below.splitlines()[2:] if ln.strip()] == [
        "aceval/dev/historical_facts/2", "wyweb/test/gjc/1"]
    assert line(below, "aceval/dev/historical_facts/2")[:3] == ["aceval/dev/historical_facts/2", "clean", "0.267"]
    assert "(none)" in section(text, "news.v2").split("contaminated (item")[1].split("source only")[0]


def test_the_report_compares_headline_rows_all_vs_clean(text):
    poetry = section(text, "poetry")
    assert line(poetry, "aceval", "average", "m1")[-3:] == ["50.0 [0.0, 100.0] n=6", "0.0 [0.0, 0.0] n=3", "-50.0"]
    assert line(poetry, "aceval", "average", "m2")[-1] == "-12.5"
    news = section(text, "news.v2")
    all_items, clean, delta = line(news, "aceval", "average", "m1")[-3:]
    assert all_items == clean and delta == "+0.0"


def test_one_corpus_and_none(warehouse, tmp_path):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        one = report_text(con, "news.v2")
        assert one.startswith("corpus news.v2 (") and "corpus poetry" not in one
        assert "No scan of corpus 'nope'" in report_text(con, "nope")
    empty = tmp_path / "empty.duckdb"
    publish(empty, write_lake(tmp_path / "lake", corpora=False), paths.SQL_DIR)
    with duckdb.connect(str(empty), read_only=True) as con:
        assert report_text(con) == NO_CORPUS and corpus_names(con) == []
        assert "\n" not in NO_CORPUS and "wenheng contamination scan" in NO_CORPUS
    older = tmp_path / "older.duckdb"   # a warehouse built before the corpus tables existed
    with duckdb.connect(str(older)) as con:
        con.execute("CREATE TABLE items (item_id VARCHAR)")
        assert report_text(con) == NO_CORPUS and corpus_names(con) == []


def test_snippets_are_one_line():
    assert snippet("a\n\tb\x00  c") == "a b c"
    assert snippet("學" * 100, 10) == "學" * 9 + "…"
    assert snippet(None) == ""


def test_the_html_page_shows_rates_examples_and_clean_tables(warehouse, tmp_path):
    write_reports(warehouse, tmp_path / "out")
    page = (tmp_path / "out" / "contamination.html").read_text(encoding="utf-8")
    assert 'href="contamination.html"' in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert 'href="contamination.html"' in (tmp_path / "out" / "aceval.html").read_text(encoding="utf-8")
    assert page.count('<section class="corpus"') == 2
    poetry = page[page.index("Corpus poetry"):]
    cells = lambda row: re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)   # noqa: E731
    rates = [cells(r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", poetry.split("Per field")[0])]
    # ... contaminated, rate, with answer, item, source only, its rate, mean specific share (1.87 / 5)
    assert ["aceval", "(all)", "6", "5", "1", "3", "60.0%", "0", "3", "0", "0.0%", "0.37"] in rates
    assert ["wyweb", "gjc", "2", "2", "0", "0", "0.0%", "0", "0", "0", "0.0%", "0.07"] in rates   # every task here
    assert '<tr><th>0.8-0.9</th><td class="num">1</td><td class="bar-cell"><span class="bar" style="width: 50.0%">' \
        in poetry
    assert "aceval/dev/geography/0" in poetry.split("Clean, with some")[0] and "wyweb/test/gjc/1" in poetry
    # the clean-vs-all table with intervals and n
    assert ('<td class="num">50.0<span class="ci">[0.0, 100.0]</span><span class="cov">n 6/6</span></td>'
            '<td class="num">0.0<span class="ci">[0.0, 0.0]</span><span class="cov">n 3/3</span></td>'
            '<td class="num">-50.0</td>') in poetry
    assert "<details>" in poetry and "historical_facts" in poetry.split("<details>")[1]
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)


def test_no_scan_no_page_and_no_link(warehouse, tmp_path):
    lake = write_lake(tmp_path / "lake", corpora=False)
    db = tmp_path / "plain.duckdb"
    publish(db, lake, paths.SQL_DIR)
    out = tmp_path / "out"
    out.mkdir()
    (out / "contamination.html").write_text("left from an earlier report", encoding="utf-8")
    write_reports(db, out)
    assert not (out / "contamination.html").exists()
    for page in out.glob("*.html"):
        assert "contamination.html" not in page.read_text(encoding="utf-8"), page.name


def test_hostile_markup_is_escaped(warehouse, tmp_path):
    db = tmp_path / "nasty.duckdb"
    shutil.copy(warehouse, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE corpus_overlap SET input_snippet = ?, input_doc = ?, task = ? "
                    "WHERE item_id = 'aceval/dev/historical_facts/0'", [NASTY, NASTY, NASTY])
        con.execute("UPDATE corpus_quarantine SET path = ?, reason = ?", [NASTY, NASTY])
        con.execute("UPDATE paper_tables_clean SET row_label = ? WHERE row_label = 'historical_facts'", [NASTY])
        con.execute("UPDATE paper_tables SET row_label = ? WHERE row_label = 'historical_facts'", [NASTY])
    out = tmp_path / "out"
    write_reports(db, out)
    page = (out / "contamination.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<b>bold</b>" not in page and "<script" not in page
    assert str(escape(NASTY)) in page                          # quarantine, task, evidence doc and row labels
    assert str(escape(snippet(NASTY, 120))) in page            # the evidence snippet
    assert page.count(str(escape(NASTY))) >= 4
