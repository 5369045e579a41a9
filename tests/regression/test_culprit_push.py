"""Culprit finding end to end: a signed push of 16 commits to a live relay with
``RELAY_COMMIT_ENV=git-faults:<fake upstream>``, one of which commits a simulated softmax
regression; and ``relay replay A..B --upstream`` on the same kind of repository."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import relay.worker.delivery
from relay.service import create_app
from relay.settings import Settings
from relay.store.hud_results import list_hud_results
from relay.store.outbox import outbox_counts
from tests.fakes.github import FakeGitHub, WebhookSender, push_payload
from tests.fakes.upstream_git import make_upstream
from tests.spec_text import compare_cpu_spec

SECRET = "test-webhook-secret-culprit-0123"
FAULT = "aten::_softmax:offset=0.05"
SOFTMAX_TEST = "reg::TestCommon::test_compare_cpu[softmax-float16]"
# the kernel file selects softmax and log_softmax; add and mul stay unselected
SPEC = compare_cpu_spec(["softmax", "log_softmax", "add", "mul"],
                        exclude=["softmax.with_dtype", "log_softmax.with_dtype"])
BAD = 10  # 0-based: the 11th of the 16 pushed commits commits the regression


def _wait_outbox(app, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        app.state.deliverer.kick()
        with app.state.session_factory() as s:
            if not outbox_counts(s).get("pending"):
                return
        assert time.monotonic() < deadline, "outbox still pending"
        time.sleep(0.05)


@pytest.mark.timeout(300)
def test_push_of_16_commits_is_bisected_to_the_culprit(tmp_path: Path, live_server,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    up = make_upstream(tmp_path / "upstream", 16, bad=BAD, faults=FAULT)
    spec = tmp_path / "reg.yaml"
    spec.write_text(SPEC)
    monkeypatch.setattr(relay.worker.delivery, "default_specs", lambda: [spec])  # keep the run small
    github = FakeGitHub()
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'relay.db'}",
                        state_dir=tmp_path / "state", github_api_url=live_server(github.app()).url,
                        commit_env=f"git-faults:{up.path}")
    app = create_app(settings)
    server = live_server(app)
    sender = WebhookSender(server.url, SECRET)
    started = time.monotonic()
    payload = push_payload(before=up.root, after=up.commits[-1], commits=up.push_commits())
    assert sender.send("push", payload).status_code == 202
    sender.close()
    assert app.state.queue.join(240), "the push was not processed"
    _wait_outbox(app, 30)
    elapsed = time.monotonic() - started

    runs = httpx.get(f"{server.url}/api/v1/dashboard").json()["runs"]
    webhook = [r for r in runs if r["trigger"] == "webhook"]
    assert len(webhook) == 1, [(r["trigger"], r["title"]) for r in runs]
    run = httpx.get(f"{server.url}/api/v1/runs/{webhook[0]['id']}").json()
    verdicts = {v["id"]: v["verdict"] for v in run["verdicts"]}
    assert {t for t, v in verdicts.items() if v == "NEW"} == {SOFTMAX_TEST}, verdicts
    assert run["conclusion"] == "failure" and run["ref"] == "refs/heads/main"
    assert run["environments"]["head"]["faults"] == FAULT
    assert run["environments"]["base"]["faults"] is None
    assert run["baseline_run"] is not None

    culprit = run["culprit"]
    assert culprit["commit"] == up.commits[BAD]
    assert culprit["tests"] == [SOFTMAX_TEST]
    assert culprit["rounds"] <= math.ceil(math.log2(16)) <= 5
    tried = {s["commit"]: s for s in culprit["steps"]}
    assert all(bool(s["failed"]) == (up.commits.index(c) >= BAD) for c, s in tried.items())
    assert tried[up.commits[BAD]]["environment"] == f"current+faults={FAULT}"
    # each round ran only the NEW tests and is stored as a run of its own (trigger "bisect")
    rounds = [r for r in runs if r["trigger"] == "bisect"]
    assert sorted(r["id"] for r in rounds) == sorted(s["run"] for s in culprit["steps"])
    assert all(r["selected"] == 1 for r in rounds)

    # the culprit's commit page lists the run that blamed it; the summary lists it too
    page = httpx.get(f"{server.url}/api/v1/commits/{up.commits[BAD]}").json()
    assert [r["id"] for r in page["blamed_in"]] == [run["id"]]
    assert webhook[0]["culprit"]["commit"] == up.commits[BAD]
    grid = httpx.get(server.url + "/").text  # the culprit is a row of the grid (its bisect round)
    assert f'data-head="{up.commits[BAD]}"' in grid and f'href="/runs/{run["id"]}"' in grid
    run_page = httpx.get(f"{server.url}/runs/{run['id']}").text  # the run names it and the test
    assert up.commits[BAD][:12] in run_page.split('id="culprit"', 1)[1] and SOFTMAX_TEST in run_page

    # the body the dashboard received (the relay is its own dashboard here)
    with app.state.session_factory() as s:
        bodies = [h.body for h in list_hud_results(s) if h.run_id == run["id"]]
    assert len(bodies) == 1
    workflow = bodies[0]["relay"]  # our extras, outside the CRCR payload (issue 15)
    assert workflow["culprit"]["commit"] == up.commits[BAD]
    assert workflow["new_tests"] == [SOFTMAX_TEST] and workflow["verdicts"]["NEW"] == 1
    # 16 < 20: the commits are the payload's list (no paged compare); the one unpaged compare is
    # the push's patches (issue 13: a push selects what the same PR selects)
    compares = [s for s in github.seen if "/compare/" in s.path]
    assert [s.query for s in compares] == [{}]
    print(f"push of 16 commits: culprit in {culprit['rounds']} rounds, {elapsed:.1f} s end to end")


def _relay_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "COLUMNS": "200", **env}
    full.pop("RELAY_DATABASE_URL", None)
    full.pop("RELAY_DASHBOARD_URL", None)
    return subprocess.run([sys.executable, "-m", "relay.cli", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(300)
def test_replay_of_a_git_range_bisects_with_commit_env(tmp_path: Path) -> None:
    up = make_upstream(tmp_path / "upstream", 2, bad=1, faults=FAULT)
    spec = tmp_path / "reg.yaml"
    spec.write_text(SPEC)
    env = {"RELAY_STATE_DIR": str(tmp_path / "state"), "RELAY_COMMIT_ENV": f"git-faults:{up.path}"}
    done = _relay_cli("replay", f"{up.root[:12]}..main", "--upstream", str(up.path),
                      "--spec", str(spec), "--json", env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    run = json.loads(done.stdout)
    assert run["culprit"]["commit"] == up.commits[1] and run["culprit"]["rounds"] == 1
    assert run["culprit"]["steps"] == [{"commit": up.commits[0], "failed": [],
                                        "environment": "current", "run": run["culprit"]["steps"][0]["run"]}]
    assert run["environments"]["head"]["faults"] == FAULT and run["head"] == up.commits[1]
    assert f"culprit: {up.commits[1]} breaks 1 NEW tests" in done.stderr
    # the run finishes after its last bisection round (issue 18)
    from datetime import datetime

    from relay.store import list_runs, make_engine, make_session_factory

    engine = make_engine(f"sqlite:///{tmp_path / 'state' / 'relay.db'}")
    try:
        with make_session_factory(engine)() as s:
            rounds = [r for r in list_runs(s) if r.trigger == "bisect"]
    finally:
        engine.dispose()
    assert [r.id for r in rounds] == [run["culprit"]["steps"][0]["run"]]
    assert datetime.fromisoformat(run["finished_at"]) >= max(r.finished_at for r in rounds)


def test_replay_git_range_input_errors_are_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from relay.cli import app

    up = make_upstream(tmp_path / "upstream", 1)
    env = {"RELAY_STATE_DIR": str(tmp_path / "state"), "RELAY_COMMIT_ENV": f"git-faults:{up.path}"}
    runner = CliRunner()
    bad_env = runner.invoke(app, ["replay", "a..b", "--upstream", str(up.path)],
                            env={**env, "RELAY_COMMIT_ENV": "nonsense"})
    assert bad_env.exit_code == 2 and "RELAY_COMMIT_ENV" in bad_env.output, bad_env.output
    bad_range = runner.invoke(app, ["replay", "nope..main", "--upstream", str(up.path)], env=env)
    assert bad_range.exit_code == 2 and "'nope' is not a commit" in bad_range.output, bad_range.output
    assert bad_env.exception is None or isinstance(bad_env.exception, SystemExit)
