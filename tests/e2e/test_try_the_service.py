"""README's "Try the service" block, run as written: ``relay serve`` in the background, ``relay
send-webhook push`` and ``pull_request`` (the example payloads under ``examples/webhooks/``,
signed with the configured secret through the relay's signer), then ``python3 -m webbrowser`` on
the grid — and the two deliveries reach the grid as two rows, each titled by its commit / PR,
each with a finished run.

What the block cannot carry is substituted, and only that: port 8000 becomes a free port,
``.venv/bin/`` the running interpreter's bin directory, the browser is ``curl`` saving the page
(``BROWSER``), and GitHub's API (a push's compare, a PR's files) is the fake GitHub on loopback
(``RELAY_GITHUB_API_URL``), serving the example commits' patches.  ``relay send-webhook`` itself
is tested through the real entry point in ``tests/e2e/test_send_webhook.py``.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from relay.github.events import commit_title
from tests.fakes.github import FakeGitHub
from tests.fakes.live import LiveServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "webhooks"
SOFTMAX = {"filename": "aten/src/ATen/native/SoftMax.cpp", "status": "modified",
           "patch": "@@ -120,7 +120,7 @@ TORCH_IMPL_FUNC(softmax_cpu_out)\n   int64_t dim = 0;\n"
                    "-  auto x = a;\n+  auto x = b;\n"}
REFS = {"filename": "torch/_refs/__init__.py", "status": "modified",
        "patch": "@@ -10,3 +10,3 @@ def softmax(a, dim):\n-    return a\n+    return b\n"}
GELU = {"filename": "aten/src/ATen/native/Activation.cpp", "status": "modified",
        "patch": "@@ -200,4 +200,4 @@ TORCH_IMPL_FUNC(gelu_out_cpu)\n-  auto y = a;\n+  auto y = b;\n"}


def readme_block() -> str:
    """The fenced ``sh`` block under README's ``## Try the service`` heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## Try the service\n.*?```sh\n(.*?)```", text, re.S | re.M)
    assert found, "README has no '## Try the service' section with an sh block"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_final(base: str, n: int, timeout_s: float) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        deliveries = httpx.get(f"{base}/api/v1/deliveries", timeout=10).json()["deliveries"]
        if len(deliveries) >= n and all(d["status"] in ("processed", "failed", "ignored") for d in deliveries):
            return deliveries
        assert time.monotonic() < deadline, f"deliveries not final after {timeout_s} s: {deliveries}"
        time.sleep(1.0)


def test_readme_try_the_service_block_reaches_the_grid(tmp_path: Path) -> None:
    block = readme_block()
    assert len([line for line in block.splitlines() if line.strip()]) == 4
    push = json.loads((EXAMPLES / "push.json").read_text())
    pr = json.loads((EXAMPLES / "pull_request.json").read_text())
    fake = FakeGitHub()
    fake.compares[("pytorch/pytorch", push["before"], push["after"])] = [SOFTMAX, REFS]
    fake.add_pull("pytorch/pytorch", pr["number"], [GELU])
    github = LiveServer(fake.app()).start()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    script = (block.replace("8000", str(port))
              .replace(".venv/bin/", str(Path(sys.executable).parent) + "/"))
    grid_html = tmp_path / "grid.html"
    env = {**os.environ, "RELAY_STATE_DIR": str(tmp_path / "state"), "RELAY_GITHUB_API_URL": github.url,
           "RELAY_PUBLIC_URL": base, "BROWSER": f"curl -sf -o {shlex.quote(str(grid_html))} %s"}
    for name in ("RELAY_DATABASE_URL", "RELAY_DASHBOARD_URL", "RELAY_BROKER_URL", "RELAY_COMMIT_ENV"):
        env.pop(name, None)
    log = tmp_path / "block.log"  # a file: the relay in the background keeps writing to it
    with log.open("w") as sink:
        shell = subprocess.Popen(["bash", "-ec", script], cwd=ROOT, env=env, start_new_session=True,
                                 stdout=sink, stderr=subprocess.STDOUT)
    try:
        shell.wait(timeout=120)  # the block ends; the relay stays in the background
        out = log.read_text()
        assert shell.returncode == 0, out[-3000:]
        assert re.search(r"push delivery [0-9a-f-]{36} → HTTP 202: accepted", out), out[-3000:]
        assert re.search(r"pull_request delivery [0-9a-f-]{36} → HTTP 202: accepted", out), out[-3000:]
        page = grid_html.read_text(encoding="utf-8")  # what the browser was given, at once
        for title in (commit_title(push["head_commit"]["message"]), pr["pull_request"]["title"]):
            assert title in html.unescape(page), title
        deliveries = _wait_final(base, 2, timeout_s=900)
        assert {d["status"] for d in deliveries} == {"processed"}, deliveries
        assert len({d["delivery_id"] for d in deliveries}) == 2  # a fresh delivery id each
        rows = {row["head"]: row for row in httpx.get(f"{base}/api/v1/grid", timeout=10).json()["rows"]}
        push_row, pr_row = rows[push["after"]], rows[pr["pull_request"]["head"]["sha"]]
        # one title per commit: the commit's message (first line), also once the run is stored
        assert push_row["title"] == "[softmax] Keep the max-subtraction in fp32 for half inputs"
        assert pr_row["title"] == pr["pull_request"]["title"] and pr_row["pr_number"] == pr["number"]
        for row in (push_row, pr_row):
            assert row["pending"] is None and row["cells"]["spyre-sim"]["run_id"], row
        assert {s.path for s in fake.seen} >= {f"/repos/pytorch/pytorch/pulls/{pr['number']}/files"}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)  # the relay the block left in the background
        shell.wait(timeout=30)
        github.stop()
