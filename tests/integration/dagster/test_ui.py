"""`dagster dev -w workspace.yaml` serves the code location with every stage (checked through the
webserver's GraphQL API on loopback), and the scores' Markdown the UI shows."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
from conftest import ROOT

from pipeline.aggregate import PAPER_TABLE_COLUMNS

QUERY = "{ assetNodes { assetKey { path } groupName isPartitioned } }"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_webserver_lists_every_stage(workdir):
    from pipeline.definitions import defs

    port = _free_port()
    webserver = Path(sys.executable).with_name("dagster-webserver")
    env = dict(os.environ, DAGSTER_HOME=str(workdir / "dagster_home"))
    proc = subprocess.Popen([str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, nodes = time.monotonic() + 120, None
        while time.monotonic() < deadline and nodes is None:
            time.sleep(1)
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", method="POST",
                                                 data=json.dumps({"query": QUERY}).encode(),
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=10) as response:
                    nodes = json.load(response)["data"]["assetNodes"]
            except (OSError, KeyError, TypeError):
                continue
        assert nodes is not None, "webserver did not answer within 120 s"
        served = {"/".join(n["assetKey"]["path"]): (n["groupName"], n["isPartitioned"]) for n in nodes}
        graph = defs.resolve_asset_graph()
        # the stages as the definitions declare them: names, groups, partitioning
        declared = {key.to_user_string(): (graph.get(key).group_name, graph.get(key).is_partitioned)
                    for key in graph.get_all_asset_keys()}
        assert served == declared
        assert {"responses", "scores", "warehouse"} <= set(served)
        assert served["responses"][1] and not served["warehouse"][1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _rows(**columns) -> pd.DataFrame:
    base = {"variant": "original", "setting": "zero_shot", "split": "test", "capped": False, "benchmark": "aceval",
            "table_name": "by_level", "title": "Tables 3-6: accuracy per level", "metric": "mean", "headline": False,
            "note": None, "ci_low": None, "ci_high": None}
    frame = pd.DataFrame([base | dict(zip(columns, values)) for values in zip(*columns.values())])
    return frame.reindex(columns=PAPER_TABLE_COLUMNS)


def test_scores_markdown_has_a_cell_per_model_and_row_and_a_chart_per_table():
    from pipeline.reports.text import scores_markdown

    frame = pd.concat([
        _rows(model=["oracle", "random", "oracle", "random"], row_order=[0, 0, 1, 1],
              row_label=["General | Historical", "General | Historical", "Poetry", "Poetry"],
              score=[100.0, 25.0, 100.0, None], ci_low=[100.0, 5.0, 100.0, None], ci_high=[100.0, 50.0, 100.0, None],
              n_scored=[8, 8, 4, 0], n_items=[8, 8, 5, 5], coverage=[1.0, 1.0, 0.8, 0.0],
              note=[None, None, None, "no scored items in: Poetry"], chance=[25.0, 25.0, 33.3, 33.3],
              scored_by=["rules", "rules", "rules", None]),
        _rows(model=["random"], setting=["five_shot"], row_order=[0], row_label=["Poetry"], score=[40.0],
              ci_low=[10.0], ci_high=[70.0], n_scored=[5], n_items=[5], coverage=[1.0], capped=[True]),
    ], ignore_index=True)
    charted = []
    text = scores_markdown(frame, {"aceval": "AC-EVAL"},
                           lambda rows, title: charted.append((len(rows), title)) or "CHART")
    lines = text.splitlines()
    # one table per run setting, each headed by the paper table and the setting
    assert [line for line in lines if line.startswith("**")] == [
        "**AC-EVAL - Tables 3-6: accuracy per level** (split test, setting zero_shot, variant original)",
        "**AC-EVAL - Tables 3-6: accuracy per level** (split test, setting five_shot, variant original)"]
    assert "| | oracle | random | chance | scored by |" in lines and "| | random | chance | scored by |" in lines
    # a '|' inside a label is escaped, not a new column; each row's chance level and scorers as the pages show
    assert ("| General \\| Historical | 100.0 [100.0, 100.0] 8/8, 100% | 25.0 [5.0, 50.0] 8/8, 100% | 25.0 "
            "| rules |") in lines
    assert "| Poetry | 100.0 [100.0, 100.0] 4/5, 80% | - 0/5, 0% | 33.3 | rules |" in lines
    assert "| Poetry | 40.0* [10.0, 70.0] 5/5, 100% | - | - |" in lines   # * : max_tokens cut the budget
    assert "- note: Poetry: no scored items in: Poetry" in lines
    # one chart per paper table, over all its run settings, after its tables
    assert charted == [(5, "AC-EVAL - Tables 3-6: accuracy per level")] and lines[-1] == "CHART"
    assert "No scored items yet" in scores_markdown(frame.iloc[:0], {})


def test_a_note_every_row_shares_is_printed_once():
    from pipeline.reports.text import scores_markdown

    note = "not comparable to the paper: judged by the bundled demo judge"
    frame = _rows(model=["oracle"] * 3, row_order=[0, 1, 2], row_label=["a", "b", "c"], score=[50.0] * 3,
                  n_scored=[4] * 3, n_items=[4] * 3, coverage=[1.0] * 3, note=[note] * 3)
    lines = scores_markdown(frame, {"aceval": "AC-EVAL"}).splitlines()
    assert [line for line in lines if line.startswith("- note:")] == [f"- note: {note} (every row)"]
    two = scores_markdown(frame.assign(note=[note, note, None]), {"aceval": "AC-EVAL"}).splitlines()
    assert [line for line in two if line.startswith("- note:")] == [f"- note: a, b: {note}"]


def test_chart_markdown_is_an_inline_png():
    from assets.warehouse import chart_markdown

    frame = _rows(model=["oracle", "random"], row_order=[0, 0], row_label=["average"] * 2, score=[100.0, 22.2],
                  ci_low=[100.0, 0.0], ci_high=[100.0, 53.3], n_scored=[9, 9], n_items=[9, 9], coverage=[1.0, 1.0])
    found = re.fullmatch(r"!\[AC-EVAL - Average\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)",
                         chart_markdown(frame, "AC-EVAL - Average"))
    assert found and base64.b64decode(found.group(1)).startswith(b"\x89PNG\r\n\x1a\n")


def test_withheld_answers_are_one_line_in_the_ui_markdown():
    import pandas as pd

    from pipeline.reports.text import scores_markdown

    rows = pd.DataFrame([{"benchmark": "aceval", "table_name": "average", "title": "Average", "split": split,
                          "setting": "zero_shot_ao", "variant": "original", "model": model, "row_label": "average",
                          "metric": "accuracy", "score": score, "ci_low": None, "ci_high": None, "n_items": n,
                          "n_scored": scored, "coverage": scored / n, "capped": False, "comparable": True, "note": None}
                         for split, score, n, scored in [("dev", 50.0, 4, 4), ("test", None, 3, 0)]
                         for model in ("oracle", "random")])
    text = scores_markdown(rows, {"aceval": "AC-EVAL"})
    assert "AC-EVAL - Average test split · zero_shot_ao · original: answers withheld, no scores" in text
    assert "wenheng submission aceval" in text and "0/3" not in text and "4/4" in text
