"""The dashboard page at ``/`` rendered by a real headless Chromium (no build step, server-side
HTML).  Skips when ``/usr/bin/chromium`` is absent (``apt-get install -y chromium``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relay.store import save_run
from tests.fakes.runs import make_run

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="/usr/bin/chromium absent: apt-get install -y chromium")


def _dump_dom(url: str, profile: Path) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=2000",
           "--dump-dom", url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_dashboard_page_in_headless_chromium(relay, tmp_path) -> None:
    with relay.app.state.session_factory() as s:
        save_run(s, make_run("br-1", title="Fix <softmax>", outcomes=("passed", "flaky", "failed")))
    dom = _dump_dom(relay.url + "/", tmp_path / "profile")
    assert "<title>spyre-relay dashboard</title>" in dom
    assert 'id="readiness"' in dom and 'data-backend="spyre-sim"' in dom
    assert ">br-1</a>" in dom and "Fix &lt;softmax&gt;" in dom
    assert 'class="failure">failure<' in dom
    assert "br-1::t1" in dom  # the flaky test is listed
