"""`dagster dev -w workspace.yaml` serves the code location with every stage (checked through the
webserver's GraphQL API on loopback)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import ROOT

QUERY = "{ assetNodes { assetKey { path } groupName isPartitioned } }"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_webserver_lists_every_stage(workdir):
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
        by_key = {"/".join(n["assetKey"]["path"]): n for n in nodes}
        assert {"raw_wenmind", "items", "dedup_clusters", "item_variants", "prompts", "responses", "scores",
                "warehouse"} <= set(by_key)
        assert by_key["responses"]["isPartitioned"] and not by_key["items"]["isPartitioned"]
        assert {n["groupName"] for n in nodes} == {"sources", "items", "evaluate", "warehouse"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
