"""The dashboard page at ``/`` rendered by a real headless Chromium (no build step, server-side
HTML).  Skips when ``/usr/bin/chromium`` is absent (``apt-get install -y chromium``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from relay.domain.culprit import BisectStep, Culprit
from relay.domain.verdicts import Verdict
from relay.store import save_run
from relay.store.culprits import save_culprit
from relay.store.regression import save_regression
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
    verdicts = [Verdict(id="br-2::t0", verdict="OK", head="passed", base="passed", reason="passes"),
                Verdict(id="br-2::t1", verdict="FLAKY", head="flaky", base="passed",
                        reason="failed, then passed on a rerun"),
                Verdict(id="br-2::t2", verdict="NEW", head="failed", base="passed",
                        reason="fails on head, passed on base <softmax>")]
    culprit = Culprit(commit="c" * 40, tests=["br-2::t2"], rounds=2, steps=[
        BisectStep(commit="d" * 40, failed=[]), BisectStep(commit="c" * 40, failed=["br-2::t2"])])
    with relay.app.state.session_factory() as s:
        save_run(s, make_run("br-1", title="Fix <softmax>", outcomes=("passed", "flaky", "failed")))
        save_run(s, make_run("br-2", minutes=1, outcomes=("passed", "flaky", "failed")))
        save_regression(s, "br-2", {"head": {"name": "current+faults=x"}, "base": {"name": "current"}},
                        verdicts)
        save_culprit(s, "br-2", culprit)
    dom = _dump_dom(relay.url + "/", tmp_path / "profile")
    assert "<title>spyre-relay dashboard</title>" in dom
    assert 'id="readiness"' in dom and 'data-backend="spyre-sim"' in dom
    assert ">br-1</a>" in dom and "Fix &lt;softmax&gt;" in dom
    assert 'class="failure">failure<' in dom
    assert "br-1::t1" in dom  # the flaky test is listed
    # verdict counts per run, NEW and FLAKY tests with their reasons, the culprit commit
    assert '<span class="v-NEW">NEW 1</span><span class="v-FLAKY">FLAKY 1</span><span class="v-OK">OK 1</span>' in dom
    table = dom.split('id="verdicts"', 1)[1].split("</table>", 1)[0]
    assert table.index("br-2::t2") < table.index("br-2::t1")  # NEW listed before FLAKY
    assert "fails on head, passed on base &lt;softmax&gt;" in table
    assert "failed, then passed on a rerun" in table and "br-2::t0" not in table
    assert f'href="/api/v1/commits/{"c" * 40}"' in dom and "(2 rounds)" in dom
    assert f"<code>{'d' * 12}</code> (0) → <code>{'c' * 12}</code> (1)" in dom
