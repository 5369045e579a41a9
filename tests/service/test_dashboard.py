"""Dashboard JSON: ``GET /api/v1/dashboard`` and ``GET /api/v1/runs/{id}``."""

from __future__ import annotations

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
