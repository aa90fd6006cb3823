"""The Dagster UI in a real browser (Debian's chromium driven by Playwright), the way a researcher
uses it: the lineage shows every stage, a materialization launched from an asset page succeeds,
and the leaderboard asset shows its scores (a Markdown table per benchmark, with a chart).

The graph is materialized first with the baseline models into a temp Dagster home and data
folders; `dagster-webserver` and `dagster-daemon` (which launches queued runs, as under
`dagster dev`) serve that instance on a free loopback port.

Screenshots go to a temp folder, and to data/reports/ui/ too when WENHENG_SCREENSHOTS=1. Without
/usr/bin/chromium (scripts/setup.sh --tests installs it where it can) the tests skip, unless
WENHENG_REQUIRE_BROWSER=1 makes that a failure."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SHOTS_DIR = ROOT / "data" / "reports" / "ui"
VIEWPORT = {"width": 1920, "height": 1200}


def _require_browser():
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (scripts/setup.sh --tests installs Debian's chromium when run as root)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright is not installed (it is in the dev extra: scripts/setup.sh --tests)"
    if reason and os.environ.get("WENHENG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"WENHENG_REQUIRE_BROWSER=1 but {reason}")
    if reason:
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str, variables: dict | None = None) -> dict:
    request = urllib.request.Request(f"{base}/graphql", method="POST",
                                     data=json.dumps({"query": query, "variables": variables or {}}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["data"]


class Shots:
    """Screenshots in a temp folder; copied to data/reports/ui/ when WENHENG_SCREENSHOTS=1."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def take(self, target, name: str) -> Path:
        path = self.folder / f"{name}.png"
        target.screenshot(path=str(path))
        if os.environ.get("WENHENG_SCREENSHOTS") == "1":
            SHOTS_DIR.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, SHOTS_DIR / path.name)
        return path


@pytest.fixture(scope="module")
def ui(baseline_build, tmp_path_factory):
    """(base url, browser page, screenshots, the definitions' asset graph) over a materialized graph:
    a copy of the session's baseline build, which the UI's runs change."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    tmp = tmp_path_factory.mktemp("ui")
    with pytest.MonkeyPatch.context() as mp:
        baseline_build.copy(tmp, mp)
        mp.setenv("WENHENG_REPORTS", str(tmp / "reports"))
        # the project's instance settings; the community dialog off, so it does not cover the page
        (tmp / "dagster_home" / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text()
                                                           + "\nnux:\n  enabled: false\n")
        from pipeline.definitions import defs

        port = _free_port()
        bin_dir = Path(sys.executable).parent
        logs = [open(tmp / f"{name}.log", "wb") for name in ("webserver", "daemon")]   # noqa: SIM115
        procs = [subprocess.Popen([str(bin_dir / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1",
                                   "-p", str(port)], cwd=ROOT, env=dict(os.environ), stdout=logs[0], stderr=logs[0]),
                 # launches the runs the UI queues, as `dagster dev` does
                 subprocess.Popen([str(bin_dir / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=ROOT,
                                  env=dict(os.environ), stdout=logs[1], stderr=logs[1])]
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for_webserver(base, procs, tmp)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(60_000)
                yield base, page, Shots(tmp / "screenshots"), defs.resolve_asset_graph(), tmp
                browser.close()
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)   # both shut their code servers down on an interrupt
            for proc in procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for log in logs:
                log.close()


def _wait_for_webserver(base: str, procs, tmp: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for proc in procs:
            assert proc.poll() is None, (tmp / "webserver.log").read_text()[-2000:] + (tmp / "daemon.log").read_text()[-2000:]
        try:
            if graphql(base, "{ assetNodes { id } }")["assetNodes"]:
                return
        except (OSError, KeyError, TypeError, ValueError):
            pass
        time.sleep(1)
    pytest.fail(f"dagster-webserver did not answer within 120 s:\n{(tmp / 'webserver.log').read_text()[-2000:]}")


def _label_matches(label: str, name: str) -> bool:
    """The graph shortens long names in the middle ("paper_tabl…_aceval")."""
    if "…" not in label:
        return label == name
    head, tail = label.split("…", 1)
    return name.startswith(head) and name.endswith(tail) and len(name) > len(head) + len(tail)


def test_lineage_shows_every_stage(ui):
    base, page, shots, graph, _ = ui
    stages = {key.to_user_string() for key in graph.get_all_asset_keys()}
    groups = {graph.get(key).group_name for key in graph.get_all_asset_keys()}
    page.goto(f"{base}/asset-groups")
    page.wait_for_selector("svg foreignObject")
    # room for the graph: the navigation and the asset tree folded away
    page.get_by_role("button", name="Hide navigation").click()
    page.get_by_role("button", name="panel_show_right").click()
    # groups start collapsed; the canvas menu expands them all
    canvas = page.locator("svg:has(foreignObject)").first.bounding_box()
    page.mouse.click(canvas["x"] + 10, canvas["y"] + 10, button="right")
    page.get_by_role("menuitem", name="Expand all groups").click()
    page.wait_for_timeout(1000)   # the layout settles
    # nodes outside the view are not drawn: the whole graph in view first
    _fit_graph(page)
    page.wait_for_function(f"document.querySelectorAll('svg foreignObject').length >= {len(stages)}")
    labels = set(page.locator("svg foreignObject > div").evaluate_all(
        "els => els.flatMap(e => e.innerText.split('\\n')).map(s => s.trim()).filter(Boolean)"))
    missing = sorted(s for s in stages if not any(_label_matches(label, s) for label in labels))
    assert not missing, f"stages not in the lineage graph: {missing}; labels: {sorted(labels)}"
    assert groups <= labels, f"groups not in the lineage graph: {sorted(groups - labels)}"
    shots.take(page, "lineage")


def _fit_graph(page) -> None:
    """Zoom out until the whole graph (the SVG, drawn nodes or not) fits below the toolbar, then drag
    it to the middle: after the groups are expanded the graph keeps its first zoom."""
    graph = page.locator("svg:has(foreignObject)").first
    toolbar = page.get_by_role("button", name="Materialize all").bounding_box()
    area = (60, toolbar["y"] + toolbar["height"] + 10, VIEWPORT["width"] - 60, VIEWPORT["height"] - 10)
    for _ in range(8):
        box = graph.bounding_box()
        if box["width"] <= area[2] - area[0] and box["height"] <= area[3] - area[1]:
            break
        page.get_by_role("button", name="zoom_out").click()
        page.wait_for_timeout(800)   # the zoom animates
    box = graph.bounding_box()
    dx = (area[0] + area[2]) / 2 - (box["x"] + box["width"] / 2)
    dy = (area[1] + area[3]) / 2 - (box["y"] + box["height"] / 2)
    page.mouse.move(area[0] + 5, area[3] - 5)   # an empty corner of the canvas
    page.mouse.down()
    page.mouse.move(area[0] + 5 + dx, area[3] - 5 + dy, steps=10)
    page.mouse.up()
    page.wait_for_timeout(800)


def test_leaderboard_materialized_from_the_ui_shows_its_scores(ui):
    base, page, shots, graph, tmp = ui
    assert "leaderboard" in {key.to_user_string() for key in graph.get_all_asset_keys()}, \
        "the leaderboard asset is not in the definitions"
    page.goto(f"{base}/assets/leaderboard")
    page.get_by_role("button", name="Materialize").click()
    # the toast links to the run it launched
    link = page.locator("a[href*='/runs/']", has_text="View").first
    run_id = link.get_attribute("href").rstrip("/").rsplit("/", 1)[-1]
    status, deadline = None, time.monotonic() + 120
    while time.monotonic() < deadline and status not in ("SUCCESS", "FAILURE", "CANCELED"):
        time.sleep(1)
        run = graphql(base, "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }",
                      {"id": run_id})["runOrError"]
        status = run.get("status")
    assert status == "SUCCESS", f"run {run_id} ended {status}:\n{(tmp / 'daemon.log').read_text()[-3000:]}"
    page.goto(f"{base}/runs/{run_id}")
    page.get_by_text("Success", exact=True).first.wait_for()
    shots.take(page, "run_success")

    # the asset page: columns, row count and the scores' Markdown (tables and charts)
    with duckdb.connect(str(tmp / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT count(*) FROM leaderboard").fetchone()[0]
        model, score = con.execute("SELECT model, score FROM leaderboard WHERE model = 'random' AND score > 0 "
                                   "ORDER BY benchmark, row_order LIMIT 1").fetchone()
        charts = con.execute("SELECT count(DISTINCT benchmark) FROM leaderboard").fetchone()[0]
    page.goto(f"{base}/assets/leaderboard")
    page.get_by_text("Row count").wait_for()
    assert page.get_by_text(str(rows), exact=True).count() >= 1, f"row count {rows} not shown"
    assert page.get_by_text("n_scored", exact=True).count() == 1, "the column schema is not shown"
    show = page.get_by_text("[Show Markdown]").first
    show.scroll_into_view_if_needed()
    shots.take(page, "leaderboard_asset")
    show.click()
    dialog = page.get_by_role("dialog")
    dialog.locator("table").first.wait_for()
    text = dialog.inner_text()
    assert model in text and f"{score:.1f}" in text, f"{model}'s {score:.1f} not in the scores:\n{text[:2000]}"
    images = dialog.locator("img[src^='data:image/png;base64,']")
    images.first.wait_for()
    assert images.count() == charts
    sizes = images.evaluate_all("els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight])")
    assert all(done and w > 200 and h > 100 for done, w, h in sizes), f"charts not drawn: {sizes}"
    page.wait_for_timeout(600)   # the dialog fades in: the screenshot waits for it to be opaque
    shots.take(page, "leaderboard_scores")
    page.keyboard.press("Escape")
    # the report: its path, shown as text (no file:// link, which the browser would refuse from here)
    report = next(iter((tmp / "reports").glob("*/index.html")), None)
    assert report is not None, "the UI's run wrote no report"
    page.get_by_text(str(report)).first.wait_for()
    assert page.locator("a[href^='file:']").count() == 0
