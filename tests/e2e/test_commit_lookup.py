"""A commit lookup says what it is doing before it waits: ``relay replay A..B`` without a
checkout prints the GitHub compare call it is about to make *before* the request reaches GitHub
(here a server that holds the request until the line was seen), then the error for a wrong sha."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests.fakes.live import LiveServer

BASE, HEAD = "0123456789abcdef0123", "fedcba9876543210fedc"


def test_a_sha_range_lookup_is_announced_before_github_is_asked(tmp_path: Path) -> None:
    seen_line, asked = threading.Event(), []
    app = FastAPI()

    @app.get("/repos/{owner}/{name}/compare/{basehead}")
    def compare(owner: str, name: str, basehead: str) -> JSONResponse:
        asked.append(seen_line.wait(30))  # True: the CLI had said what it does before asking
        return JSONResponse({"message": "Not Found"}, status_code=404)

    server = LiveServer(app).start()
    spec = tmp_path / "x.yaml"
    spec.write_text("test_suite_config: {files: []}\n")
    env = {**os.environ, "RELAY_STATE_DIR": str(tmp_path / "state"), "RELAY_GITHUB_API_URL": server.url}
    proc = subprocess.Popen([sys.executable, "-m", "relay.cli", "replay", f"{BASE}..{HEAD}", "--spec", str(spec)],
                            cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if "from GitHub's compare API" in line:
                seen_line.set()
        proc.wait(timeout=120)
    finally:
        server.stop()
    text = "".join(lines)
    assert asked == [True], text
    assert lines[0].startswith(f"reading {BASE}..{HEAD} of pytorch/pytorch from GitHub's compare API"), text
    assert proc.returncode == 2 and "404" in text and "--upstream PATH" in text and "Traceback" not in text
