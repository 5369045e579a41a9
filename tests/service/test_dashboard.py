"""Dashboard JSON: ``GET /api/v1/dashboard`` and ``GET /api/v1/runs/{id}``."""

from __future__ import annotations

from datetime import UTC

import httpx

from relay.store import save_run
from tests.fakes.runs import make_run
from tests.service.conftest import Relay


def test_dashboard_lists_saved_runs_newest_first(relay: Relay) -> None:
    with relay.app.state.session_factory() as s:
        save_run(s, make_run("old", minutes=0))
        save_run(s, make_run("new", minutes=5, outcomes=("passed",)))
    body = httpx.get(relay.url + "/api/v1/dashboard").json()
    assert [r["id"] for r in body["runs"]] == ["new", "old"]
    old = body["runs"][1]
    assert old["counts"]["failed"] == 1 and old["conclusion"] == "failure"
    assert old["stages"] == [{"name": "scope", "in": 100, "out": 10, "ms": 3.1}]
    assert "results" not in old
    assert httpx.get(relay.url + "/api/v1/dashboard?limit=1").json()["runs"][0]["id"] == "new"


def test_run_detail_has_results_and_404_is_json(relay: Relay) -> None:
    run = make_run("r-9")
    with relay.app.state.session_factory() as s:
        save_run(s, run)
        save_run(s, run)  # upsert: saving twice is harmless
    got = httpx.get(relay.url + "/api/v1/runs/r-9").json()
    assert got == run.model_dump(mode="json")
    missing = httpx.get(relay.url + "/api/v1/runs/nope")
    assert missing.status_code == 404 and missing.json() == {"detail": "run not found: nope"}
    bad = httpx.get(relay.url + "/api/v1/dashboard?limit=0")
    assert bad.status_code == 422 and "detail" in bad.json()


def test_commit_history_flaky_routes(relay: Relay) -> None:
    run = make_run("c-1", outcomes=("passed", "flaky", "failed"))
    with relay.app.state.session_factory() as s:
        save_run(s, run)
        save_run(s, make_run("c-2", minutes=3, outcomes=("flaky",), head="e" * 40))
    got = httpx.get(relay.url + "/api/v1/commits/" + "a" * 12).json()
    assert got["sha"] == "a" * 12 and [r["id"] for r in got["runs"]] == ["c-1"]
    assert got["jobs"] == []
    assert httpx.get(relay.url + "/api/v1/commits/xyz").status_code == 400
    hist = httpx.get(relay.url + "/api/v1/tests/history", params={"test": "c-1::t1"}).json()
    assert [h["outcome"] for h in hist["history"]] == ["flaky"]
    generic = httpx.get(relay.url + "/api/v1/tests/history",
                        params={"test": "test/test_ops.py::TestCommon::test_0"}).json()["history"]
    assert [h["run_id"] for h in generic] == ["c-2", "c-1"]
    assert httpx.get(relay.url + "/api/v1/tests/history").status_code == 422
    flaky = httpx.get(relay.url + "/api/v1/flaky").json()["flaky"]
    assert {f["test_id"] for f in flaky} == {"c-1::t1", "c-2::t0"}


def test_readiness_local_backend(relay: Relay) -> None:
    from datetime import datetime, timedelta

    now = datetime.now(UTC)
    with relay.app.state.session_factory() as s:
        for i in range(20):  # 19 green runs of 90 s and one red one, over 40 days
            start = now - timedelta(days=2 * i, hours=1)
            save_run(s, make_run(f"rd-{i}", outcomes=("failed",) if i == 3 else ("passed",),
                                 started_at=start, finished_at=start + timedelta(seconds=90)))
    r = httpx.get(relay.url + "/api/v1/backends/spyre-sim/readiness").json()
    assert r["level"] == "L2" and r["local"] is True
    assert r["jobs_14d"] == 7 and r["jobs_7d"] == 4
    assert r["success_rate_7d"] == 0.75  # the red run is 6 days old
    assert r["p50_e2e_ms"] == 90000.0 and r["share_over_3h_14d"] == 0.0
    assert r["days_observed"] > 30
    crit = {c["name"]: c["ok"] for c in r["criteria"]}
    assert crit == {"days_at_l2": True, "success_rate_7d": False, "p50_e2e_ms": True,
                    "share_over_3h_14d": True, "p50_queue_ms": True}
    assert r["qualifies_for"] == "L2"
    assert httpx.get(relay.url + "/api/v1/backends/acme/none/readiness").status_code == 404


def test_readiness_of_downstream_repo_from_callbacks(crcr) -> None:
    from tests.fakes.github import pull_request_payload
    from tests.service.test_callbacks import _cb, _token

    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="rd-d")
    relay.drain()
    tok = _token(fake, "acme/l2-ci")
    for i in range(1, 4):  # run id 0 is refused (CRCR reserves it)
        _cb(relay, tok, "rd-d", "in_progress", run_id=i)
        _cb(relay, tok, "rd-d", "completed", run_id=i, conclusion="success")
    r = httpx.get(relay.url + "/api/v1/backends/acme/l2-ci/readiness").json()
    assert (r["level"], r["jobs_7d"], r["success_rate_7d"]) == ("L2", 3, 1.0)
    assert r["qualifies_for"] == "L2"  # not a month at L2 yet
    assert {c["name"]: c["ok"] for c in r["criteria"]}["days_at_l2"] is False
    commit = httpx.get(relay.url + "/api/v1/commits/" + "a" * 40).json()
    assert [(j["repo"], j["state"]) for j in commit["jobs"]] == [("acme/l2-ci", "COMPLETED")] * 3
    grid = httpx.get(relay.url + "/api/v1/grid").json()
    jobs = [c for c in grid["columns"] if c["kind"] == "job"]
    assert [c["backend"] for c in jobs] == ["acme/l2-ci"], grid["columns"]
    row = next(r for r in grid["rows"] if r["head"] == "a" * 40)
    assert row["cells"][jobs[0]["key"]]["conclusion"] == "success"
    page = httpx.get(relay.url + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "acme/l2-ci" in page.text and f'data-column="{jobs[0]["key"]}" data-conclusion="success"' in page.text
    commit_page = httpx.get(relay.url + "/commits/" + "a" * 40).text
    assert "acme/l2-ci" in commit_page and "COMPLETED" in commit_page


def test_page_renders_runs_escaped(relay: Relay) -> None:
    with relay.app.state.session_factory() as s:
        save_run(s, make_run("pg-1", title="<script>alert(1)</script>"))
    html = httpx.get(relay.url + "/").text
    assert "pg-1" in html and "&lt;script&gt;" in html and "<script>alert" not in html


def test_failed_deliveries_are_listed_with_their_error(relay: Relay) -> None:
    from relay.store import insert_delivery, mark_delivery

    with relay.app.state.session_factory() as s:
        insert_delivery(s, delivery_id="ok-1", event="push", payload="{}")
        mark_delivery(s, "ok-1", "processed")
        insert_delivery(s, delivery_id="bad-1", event="pull_request", action="opened", payload="{}")
        mark_delivery(s, "bad-1", "failed",
                      "GitHubAPIError: GitHub API unreachable for /repos/p/p/pulls/1/files: <x>")
    failed = httpx.get(relay.url + "/api/v1/deliveries", params={"status": "failed"}).json()
    assert [d["delivery_id"] for d in failed["deliveries"]] == ["bad-1"]
    assert failed["deliveries"][0]["error"].startswith("GitHubAPIError") and "payload" not in failed["deliveries"][0]
    both = httpx.get(relay.url + "/api/v1/deliveries").json()["deliveries"]
    assert [d["delivery_id"] for d in both] == ["bad-1", "ok-1"]
    assert httpx.get(relay.url + "/api/v1/deliveries", params={"status": "nope"}).status_code == 422
    html = httpx.get(relay.url + "/deliveries").text
    failed_section = html.split('data-section="failed"', 1)[1].split("</table>", 1)[0]
    assert "bad-1" in failed_section and "GitHub API unreachable" in failed_section and "&lt;x&gt;" in failed_section
    assert "ok-1" not in failed_section and "ok-1" in html


def test_page_links_only_commit_heads(relay: Relay) -> None:
    with relay.app.state.session_factory() as s:
        save_run(s, make_run("sha-run", head="ab" * 20))
        save_run(s, make_run("label-run", head="pr-head"))
    html = httpx.get(relay.url + "/").text
    assert f'href="/commits/{"ab" * 20}"' in html
    assert 'href="/commits/pr-head"' not in html and "<code>pr-head</code>" in html


def test_readiness_proposes_demotion_only_after_the_grace_period() -> None:
    """An L3 backend failing its success rate day after day: no proposal for a short bad spell,
    ``demote`` to L2 once every day of the grace period failed (issue 15)."""
    from datetime import datetime, timedelta

    from relay.service.readiness import readiness
    from relay.store import create_schema, make_engine, make_session_factory

    engine = make_engine("sqlite://")
    create_schema(engine)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    with make_session_factory(engine)() as s:
        for i in range(-12, 40):  # one run a day, green until 5 days before `now`, then red
            start = now - timedelta(days=i, hours=1)
            save_run(s, make_run(f"d-{i}", outcomes=("failed",) if i < 5 else ("passed",),
                                 started_at=start, finished_at=start + timedelta(seconds=90)))
        short = readiness(s, "spyre-sim", "L3", local=True, now=now, grace_days=7)
        assert short["qualifies_for"] == "L3"
        assert short["proposal"] == {"action": None, "failing": ["success_rate_7d"], "failed_days": 4,
                                     "grace_days": 7}
        late = readiness(s, "spyre-sim", "L3", local=True, now=now + timedelta(days=10), grace_days=7)
        assert late["proposal"] == {"action": "demote", "to": "L2", "failing": ["success_rate_7d"],
                                    "failed_days": 7}
        assert late["qualifies_for"] == "L2"
        assert readiness(s, "spyre-sim", "L2", local=True, now=now)["proposal"] is None
    engine.dispose()
