"""Reports people can open, written from the warehouse alone:

    <out_dir>/index.html         every benchmark's headline rows, links, the run's facts
    <out_dir>/<benchmark>.html   each paper table: an SVG chart and a table per run setting
    <out_dir>/<benchmark>.md     the same tables as Markdown
    <out_dir>/<benchmark>.csv    every paper-table row (value, interval, n, coverage, notes)
    <out_dir>/samples.html       the sample browser: prompt, response, gold, extraction, scores
    <out_dir>/samples_<benchmark>.jsonl  every response: prompt, response, gold, extracted answers,
                                 rule and judge scores, the judge's verdict text, tokens, latency
    <out_dir>/compare.html       every two models on the same items: headline rows' paired differences,
                                 intervals and p-values (two models or more)
    <out_dir>/contamination.html contamination against the user's corpora, when any was scanned:
                                 rates, share histogram, examples, paper tables all vs clean
    <out_dir>/results.json       configuration (secrets masked), models, sources and hashes,
                                 package versions, git commit, timings, headline numbers

Every page is self-contained (inline CSS, SVG and data; a Content-Security-Policy that forbids
any fetch), so a report folder can be copied, mailed or served as it is."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.benchmarks import cards
from pipeline.charts import model_colours
from pipeline.reports import comparison, data, render
from pipeline.reports import contamination as contamination_page
from pipeline.reports.results import RUN_INFO_KEYS, build_run_info, results
from pipeline.warehouse import connect_readonly, published_scores

__all__ = ["write_reports", "build_run_info", "RUN_INFO_KEYS", "MAX_SAMPLES"]
MAX_SAMPLES = data.MAX_SAMPLES
PAGE_KEY = ("Each cell: score x100, its 95% bootstrap interval, n = items scored / items asked, coverage = "
            "scored / asked; * = the model's max_tokens cut the benchmark's budget; † = not comparable to the paper: "
            "its LLM-judged items were scored by rules, by the bundled demo judge or by a judge whose known-answer "
            "controls found it uninformative, or it was asked by log-likelihood, not by the paper's generation "
            "(the note says which; hover a number for who scored it).")


def write_reports(db_path: Path, out_dir: Path, run_info: dict[str, Any] | None = None, *,
                  max_samples: int = MAX_SAMPLES, max_sample_bytes: int = data.MAX_BYTES,
                  benchmarks: list[str] | None = None, models: list[str] | None = None) -> Path:
    """Write the report for the warehouse at `db_path` into `out_dir` (created); returns the path
    of index.html. `run_info`: see `build_run_info` (None: rebuilt from the warehouse, no timings).
    `benchmarks` / `models` narrow the whole report (pages and samples) to those names;
    `max_samples` and `max_sample_bytes` cap the sample browser's embedded rows and text."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = render.environment()
    css = render.stylesheet()
    all_cards = cards()
    rows, sample_data, info, corpora, compared, published = _from_warehouse(
        Path(db_path), out_dir, run_info, max_samples, max_sample_bytes, benchmarks, models)

    present = [name for name in all_cards if name in set(rows["benchmark"])]
    present += sorted(set(rows["benchmark"]) - set(present))   # a benchmark whose card is gone
    nav = [{"name": name, "title": getattr(all_cards.get(name), "title", name)} for name in present]
    # the comparison and contamination pages, and links to them on every page, only when they have content
    env.globals["links"] = {"compare": bool(compared["pairs"]), "contamination": bool(corpora)}
    contamination = (f"{len(corpora)} corpus scan(s): {', '.join(c['name'] for c in corpora)}" if corpora else "")
    _write_optional_pages(env, out_dir, css, nav, compared, corpora, contamination)
    index_entries = _write_benchmark_pages(env, out_dir, css, nav, contamination, rows, present, all_cards,
                                           published)

    shown, total = len(sample_data["samples"]), sample_data["total"]
    render.write(out_dir / "samples.html", env.get_template("samples.html.j2").render(
        css=css, nav=nav, contamination=contamination, capped=sample_data["capped"], shown=f"{shown:,}",
        total=f"{total:,}",
        cap=f"{max_samples:,} samples and about {_size(max_sample_bytes)} of text",
        data_json=render.json_for_script(sample_data)))
    (out_dir / "results.json").write_text(json.dumps(info, ensure_ascii=False, indent=1, default=str) + "\n",
                                          encoding="utf-8")
    index = out_dir / "index.html"
    render.write(index, env.get_template("index.html.j2").render(
        css=css, nav=nav, contamination=contamination, benchmarks=index_entries, key=PAGE_KEY,
        facts=_facts(info, run_info),
        subtitle=_subtitle(run_info),
        samples_line=f"{shown:,} of {total:,} embedded" if sample_data["capped"] else f"{shown:,} samples"))
    return index


def _from_warehouse(db_path: Path, out_dir: Path, run_info: dict[str, Any] | None, max_samples: int,
                    max_sample_bytes: int, benchmarks: list[str] | None,
                    models: list[str] | None) -> tuple[pd.DataFrame, dict, dict, list[dict], dict, pd.DataFrame | None]:
    """What the report shows, read from the warehouse: the paper-table rows, the sample browser's
    data, results.json's content, the contamination pages, the model pairs compared and the
    papers' own rows (`published_scores`). Writes
    each benchmark's samples_<benchmark>.jsonl, and removes those of benchmarks no longer shown."""
    with connect_readonly(db_path) as con:
        rows = data.paper_rows(con)
        if benchmarks:
            rows = rows[rows["benchmark"].isin(benchmarks)]
        if models:
            rows = rows[rows["model"].isin(models)]
        sample_data = data.samples(con, max_samples, benchmarks, models, max_sample_bytes)
        info = results(con, rows, db_path, run_info)
        corpora = contamination_page.pages(con, benchmarks, models)
        compared = comparison.pairs(con, sorted(set(rows["model"])), benchmarks) if rows["model"].nunique() > 1 \
            else {"pairs": [], "left_out": []}
        published = published_scores(con)
        written = set()
        for name in sorted(set(rows["benchmark"])):
            data.write_samples_jsonl(con, name, out_dir / f"samples_{name}.jsonl", models)
            written.add(f"samples_{name}.jsonl")
    for stale in out_dir.glob("samples_*.jsonl"):   # of a benchmark an earlier report into this folder had
        if stale.name not in written:
            stale.unlink()
    return rows, sample_data, info, corpora, compared, published


def _write_optional_pages(env, out_dir: Path, css: str, nav: list[dict], compared: dict, corpora: list[dict],
                          contamination: str) -> None:
    """compare.html and contamination.html when they have content; else an earlier report's are removed."""
    if compared["pairs"]:
        render.write(out_dir / "compare.html", env.get_template("compare.html.j2").render(
            css=css, nav=nav, pairs=compared["pairs"], left_out=compared["left_out"],
            pairs_models=comparison.MAX_MODELS))
    else:
        (out_dir / "compare.html").unlink(missing_ok=True)
    if corpora:
        render.write(out_dir / "contamination.html", env.get_template("contamination.html.j2").render(
            css=css, nav=nav, contamination=contamination, corpora=corpora))
    else:
        (out_dir / "contamination.html").unlink(missing_ok=True)   # from an earlier report into this folder


def _write_benchmark_pages(env, out_dir: Path, css: str, nav: list[dict], contamination: str, rows: pd.DataFrame,
                           present: list[str], all_cards: dict,
                           published: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Each benchmark's .md, .csv and .html; returns the index page's entries (its headline rows)."""
    index_entries = []
    colours = model_colours(rows["model"])   # one colour per model in every chart of the report
    for name in present:
        bench = all_cards.get(name) or _Unknown(name)
        part = rows[rows["benchmark"] == name]
        tables = render.benchmark_tables(bench, part, colours=colours, published=published)
        render.write(out_dir / f"{name}.md", render.markdown(bench, tables))
        data.csv_frame(part).to_csv(out_dir / f"{name}.csv", index=False, encoding="utf-8")
        render.write(out_dir / f"{name}.html", env.get_template("benchmark.html.j2").render(
            css=css, nav=nav, bench=bench, tables=tables, key=PAGE_KEY, contamination=contamination))
        index_entries.append({"name": name, "title": bench.title,
                              "headline": render.groups(part[part["headline"].astype(bool)], published)})
    return index_entries


def _size(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


class _Unknown:
    """A benchmark in the warehouse without a card in this checkout."""

    def __init__(self, name: str) -> None:
        self.name = self.title = name
        self.paper = "(no benchmark card in this checkout)"


def _subtitle(run_info: dict[str, Any] | None) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if run_info is None:
        return f"Rebuilt from the warehouse at {now} (no run timings)."
    return f"Run started {run_info.get('started_at') or '?'}; report written {now}."


def _facts(info: dict[str, Any], run_info: dict[str, Any] | None) -> list[tuple[str, str]]:
    facts = []
    run = info["run"]
    if run.get("run_id"):
        facts.append(("run id", str(run["run_id"])))
    if run.get("command"):
        facts.append(("command", run["command"]))
    if run_info is not None:
        facts.append(("limit", "none" if run.get("limit") is None else str(run["limit"])))
    for phase, seconds in (info.get("timings") or {}).items():
        facts.append((f"time: {phase}", f"{seconds:.1f} s"))
    git = info.get("git")
    facts.append(("git commit", "not a git checkout" if not git else
                  git["commit"] + (" (with uncommitted changes)" if git.get("dirty") else "")))
    facts.append(("warehouse", info["warehouse"]))
    for name, model in info["models"].items():
        facts.append((f"model {name}", f"{model['engine'] or 'not in the models file'}: "
                      f"{model['responses']:,} responses, {model['errors']:,} errors"))
    for name, source in info["sources"].items():
        facts.append((f"source {name}", f"version {', '.join(source['versions']) or '?'}: {source['items']:,} items "
                      f"from {len(source['files'])} file(s)"))
    facts.append(("packages", ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)))
    return facts
