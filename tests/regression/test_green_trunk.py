"""A signal that never cries wolf (issue 27), end to end through the real webhook route on a
fresh state directory, with signed ``push`` deliveries of a fake upstream git repository:

* ``RELAY_COMMIT_ENV=git-faults:<repo>``: two pushes that change nothing the backend can feel
  are green with readiness 100 % (runs and declared items); a push whose checkout adds a
  ``.spyre-sim-faults`` line for one aten op is red, NEW naming exactly the tests that reach that
  op; the next push, removing the line, is green with those tests FIXED;
* no ``RELAY_COMMIT_ENV``: the first push establishes the trunk baseline (page and JSON say so),
  the second is compared with it at its base and is green;
* no ``RELAY_COMMIT_ENV`` and a device already broken on trunk (``SPYRE_SIM_FAULTS`` in the
  relay's own environment): the first push says which tests fail on trunk, the next is green
  with them BROKEN_TRUNK naming that run, and once the breakage is gone they are FIXED.

Every push touches ``SoftMax.cpp`` (a comment), so each selects the same softmax / log_softmax
tests; only ``aten::_softmax`` is faulted, which the softmax test reaches and log_softmax's
does not (``aten::_log_softmax``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.service import create_app
from relay.settings import Settings
from relay.store.outbox import outbox_counts
from tests.fakes.github import FakeGitHub, WebhookSender, push_payload
from tests.fakes.upstream_git import FAULTS_FILE, SOFTMAX, git
from tests.spec_text import compare_cpu_spec

SECRET = "test-webhook-secret-green-trunk-01"
FAULT = "aten::_softmax:offset=0.05"
SOFTMAX_TEST = "green::TestCommon::test_compare_cpu[softmax-float16]"
LOG_SOFTMAX_TEST = "green::TestCommon::test_compare_cpu[log_softmax-float16]"
SPEC = compare_cpu_spec(["softmax", "log_softmax"], exclude=["softmax.with_dtype", "log_softmax.with_dtype"])


@dataclass
class Upstream:
    """A git repository whose every commit edits ``SoftMax.cpp``; ``commits[0]`` is the root."""

    path: Path
    commits: list[str]

    def commit(self, message: str, *, faults: str | None = None, drop_faults: bool = False) -> dict[str, Any]:
        """A new commit (a comment in SoftMax.cpp; adds or removes the faults file); returns
        its ``commits[]`` entry of a push payload."""
        change: dict[str, list[str]] = {"added": [], "removed": [], "modified": [SOFTMAX]}
        (self.path / SOFTMAX).write_text(f"// softmax kernels\n// {message}\nint softmax_version = 0;\n")
        if faults is not None:
            (self.path / FAULTS_FILE).write_text(f"# simulated regression\n{faults}\n")
            change["added"].append(FAULTS_FILE)
        if drop_faults:
            (self.path / FAULTS_FILE).unlink()
            change["removed"].append(FAULTS_FILE)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--no-verify", "-m", message)
        sha = git(self.path, "rev-parse", "HEAD").strip()
        self.commits.append(sha)
        return {"id": sha, "message": message, **change}


def make_repo(path: Path) -> Upstream:
    (path / SOFTMAX).parent.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    up = Upstream(path=path, commits=[])
    up.commit("root")
    return up


class Relay:
    """A live relay on a fresh state directory that processes each push before the next."""

    def __init__(self, tmp: Path, live_server: Any, spec: Path, *, commit_env: str | None) -> None:
        github = FakeGitHub()
        self.settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp / 'relay.db'}",
                                 state_dir=tmp / "state", github_api_url=live_server(github.app()).url,
                                 specs=str(spec), **({"commit_env": commit_env} if commit_env else {}))
        self.app = create_app(self.settings)
        self.url = live_server(self.app).url
        self.sender = WebhookSender(self.url, SECRET)

    def push(self, up: Upstream, entry: dict[str, Any]) -> dict[str, Any]:
        """Send the push of ``entry`` (one commit on top of the previous one); its run's JSON."""
        before = up.commits[up.commits.index(entry["id"]) - 1]
        payload = push_payload(before=before, after=entry["id"], commits=[])
        payload["commits"] = [entry]
        assert self.sender.send("push", payload).status_code == 202
        assert self.app.state.queue.join(240), "the push was not processed"
        deadline = time.monotonic() + 30
        while True:  # the run reached the dashboard
            self.app.state.deliverer.kick()
            with self.app.state.session_factory() as s:
                if not outbox_counts(s).get("pending"):
                    break
            assert time.monotonic() < deadline, "outbox still pending"
            time.sleep(0.05)
        runs = [r for r in httpx.get(f"{self.url}/api/v1/dashboard").json()["runs"]
                if r["trigger"] == "webhook" and r["head"] == entry["id"]]
        assert len(runs) == 1, runs
        return httpx.get(f"{self.url}/api/v1/runs/{runs[0]['id']}").json()

    def readiness(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/api/v1/backends/spyre-sim/readiness").json()

    def page(self, run: dict[str, Any]) -> str:
        return httpx.get(f"{self.url}/runs/{run['id']}").text


def verdicts(run: dict[str, Any], kind: str) -> set[str]:
    return {v["id"] for v in run["verdicts"] if v["verdict"] == kind}


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "green.yaml"
    path.write_text(SPEC)
    return path


@pytest.mark.timeout(600)
def test_unchanged_pushes_are_green_a_fault_is_new_and_its_removal_fixed(tmp_path: Path, live_server, spec) -> None:
    up = make_repo(tmp_path / "upstream")
    r = Relay(tmp_path, live_server, spec, commit_env=f"git-faults:{up.path}")

    for i in (1, 2):
        run = r.push(up, up.commit(f"unchanged {i}"))
        assert run["conclusion"] == "success", run["verdicts"]
        assert set(run["verdict_counts"]) and run["verdict_counts"]["NEW"] == 0
        assert {v["verdict"] for v in run["verdicts"]} == {"OK"}, run["verdicts"]
        assert {SOFTMAX_TEST, LOG_SOFTMAX_TEST} <= {v["id"] for v in run["verdicts"]}
    ready = r.readiness()
    assert ready["jobs_7d"] == 2 and ready["success_rate_7d"] == 1.0  # the baseline runs are no jobs
    assert ready["declared"]["share"] == 1.0 and ready["declared"]["not_as_declared"] == []

    bad = r.push(up, up.commit("regression", faults=FAULT))
    assert bad["conclusion"] == "failure"
    assert verdicts(bad, "NEW") == {SOFTMAX_TEST}  # exactly the tests reaching aten::_softmax
    assert bad["environments"]["head"]["faults"] == FAULT and bad["baseline"]["kind"] == "base_env"

    fixed = r.push(up, up.commit("revert", drop_faults=True))
    assert fixed["conclusion"] == "success", fixed["verdicts"]
    assert verdicts(fixed, "FIXED") == {SOFTMAX_TEST} and verdicts(fixed, "NEW") == set()
    assert fixed["environments"]["base"]["faults"] == FAULT


@pytest.mark.timeout(600)
def test_without_commit_env_the_first_push_establishes_the_trunk_baseline(tmp_path: Path, live_server,
                                                                          spec) -> None:
    up = make_repo(tmp_path / "upstream")
    r = Relay(tmp_path, live_server, spec, commit_env=None)

    first = r.push(up, up.commit("unchanged 1"))
    assert first["conclusion"] == "success" and list(first["environments"]) == ["head"]
    assert first["environments"]["head"]["name"] == "current"  # the relay's own torch, no base
    assert first["baseline"]["kind"] == "establishes" and first["baseline"]["failing_on_trunk"] == []
    assert "establishes the trunk baseline" in first["baseline"]["summary"]
    assert 'data-kind="establishes"' in r.page(first) and "establishes the trunk baseline" in r.page(first)

    second = r.push(up, up.commit("unchanged 2"))
    assert second["conclusion"] == "success", second["verdicts"]
    assert second["baseline"]["kind"] == "trunk_at_base" and second["baseline"]["runs"] == [first["id"]]
    assert second["baseline_run"] == first["id"]
    assert {v["verdict"] for v in second["verdicts"]} == {"OK"}
    ready = r.readiness()
    assert ready["success_rate_7d"] == 1.0 and ready["declared"]["share"] == 1.0


@pytest.mark.timeout(600)
def test_without_commit_env_a_failure_already_on_trunk_is_broken_trunk_then_fixed(
        tmp_path: Path, live_server, spec, monkeypatch: pytest.MonkeyPatch) -> None:
    up = make_repo(tmp_path / "upstream")
    r = Relay(tmp_path, live_server, spec, commit_env=None)
    monkeypatch.setenv("SPYRE_SIM_FAULTS", FAULT)  # the relay's own device is broken on trunk

    first = r.push(up, up.commit("one"))
    assert first["baseline"]["kind"] == "establishes"
    assert first["baseline"]["failing_on_trunk"] == [SOFTMAX_TEST]
    assert f"1 tests fail on trunk: {SOFTMAX_TEST}" in first["baseline"]["summary"]

    second = r.push(up, up.commit("two"))
    assert second["conclusion"] == "success", second["verdicts"]
    [broken] = [v for v in second["verdicts"] if v["verdict"] == "BROKEN_TRUNK"]
    assert broken["id"] == SOFTMAX_TEST and broken["evidence"] == [first["id"]]
    assert first["id"] in broken["reason"] and "the same way" in broken["reason"]

    monkeypatch.delenv("SPYRE_SIM_FAULTS")
    third = r.push(up, up.commit("three"))
    assert third["conclusion"] == "success"
    assert verdicts(third, "FIXED") == {SOFTMAX_TEST}
    assert third["baseline"]["runs"] == [second["id"]]
