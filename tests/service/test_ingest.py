"""Dashboard ingest ``POST /api/crcr/results`` and the HUD client ``post_results``."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from tenacity import wait_none

from relay.errors import HudPostError
from relay.reporting.body import build_hud_body
from relay.reporting.sender import post_results
from relay.settings import Settings
from relay.store import list_hud_results
from tests.fakes.runs import make_run
from tests.service.conftest import Relay


def _body() -> dict[str, Any]:
    run = make_run("r-1", outcomes=("passed", "failed", "crashed", "skipped", "xfailed"))
    return build_hud_body(run, Settings(), level="L2").model_dump(mode="json")


def _hud_rows(relay: Relay):
    with relay.app.state.session_factory() as s:
        return list_hud_results(s)


def test_build_hud_body_shape() -> None:
    body = _body()
    assert body["trusted"] == {"ci_metrics": {"queue_time": 0.0, "execution_time": 90.0},
                               "verified_repo": "spyre-sim", "downstream_repo_level": "L2"}
    cp = body["untrusted"]["callback_payload"]
    assert cp["event_type"] == "replay" and cp["delivery_id"] == "replay-r-1"
    assert cp["payload"] == {"base": "b" * 40, "head": "a" * 40, "upstream": "pytorch/pytorch"}
    wf = cp["workflow"]
    assert (wf["status"], wf["conclusion"], wf["name"], wf["run_id"]) == (
        "completed", "failure", "spyre-sim", "r-1")
    assert wf["test_results"] == {"passed": 2, "failed": 2, "skipped": 1}
    assert "failed_tests" not in wf  # our extras stay out of the CRCR payload
    assert body["relay"]["failed_tests"] == ["r-1::t1", "r-1::t2"]


def test_failed_tests_capped_at_1000() -> None:
    run = make_run("big", outcomes=("failed",) * 1200)
    body = build_hud_body(run, Settings())
    assert len(body.relay.failed_tests) == 1000
    assert body.untrusted.callback_payload.workflow.test_results == {"passed": 0, "failed": 1200,
                                                                     "skipped": 0}


def _auth(relay: Relay) -> dict[str, str]:
    return {"Authorization": f"Bearer {relay.app.state.settings.results_token()}"}


def test_ingest_stores_once(relay: Relay) -> None:
    url = relay.url + "/api/crcr/results"
    first = httpx.post(url, json=_body(), headers=_auth(relay))
    second = httpx.post(url, json=_body(), headers=_auth(relay))
    assert (first.status_code, first.json()) == (201, {"status": "stored"})
    assert (second.status_code, second.json()) == (200, {"status": "duplicate"})
    rows = _hud_rows(relay)
    assert len(rows) == 1
    assert (rows[0].delivery_id, rows[0].repo, rows[0].run_id, rows[0].attempt) == (
        "replay-r-1", "spyre-sim", "r-1", 1)


def test_ingest_validation(relay: Relay) -> None:
    url = relay.url + "/api/crcr/results"
    assert httpx.post(url, content=b"{nope", headers=_auth(relay)).status_code == 400
    bad = _body()
    del bad["untrusted"]["callback_payload"]["workflow"]["status"]
    resp = httpx.post(url, json=bad, headers=_auth(relay))
    assert resp.status_code == 422
    assert any(e["loc"][-1] == "status" for e in resp.json()["detail"])
    wrong_level = copy.deepcopy(_body())
    wrong_level["trusted"]["downstream_repo_level"] = "L9"
    assert httpx.post(url, json=wrong_level, headers=_auth(relay)).status_code == 422
    too_many = _body()
    too_many["relay"]["failed_tests"] = ["x"] * 1001
    assert httpx.post(url, json=too_many, headers=_auth(relay)).status_code == 422
    minutes = _body()
    minutes["trusted"]["ci_metrics"]["queue_time"] = -1.0
    assert httpx.post(url, json=minutes, headers=_auth(relay)).status_code == 422
    assert httpx.post(url, json=[1, 2], headers=_auth(relay)).status_code == 422
    assert _hud_rows(relay) == []


def test_ingest_takes_huds_internal_bot_header_and_any_bearer_case(relay: Relay) -> None:
    token = relay.app.state.settings.results_token()
    url = relay.url + "/api/crcr/results"
    assert httpx.post(url, json=_body(), headers={"x-hud-internal-bot": token}).status_code == 201
    assert httpx.post(url, json=_body(), headers={"Authorization": f"bearer {token}"}).status_code == 200
    assert httpx.post(url, json=_body(), headers={"x-hud-internal-bot": "nope"}).status_code == 401


def test_ingest_keeps_the_downstream_payload_verbatim(relay: Relay) -> None:
    body = _body()
    wf = body["untrusted"]["callback_payload"]["workflow"]
    wf.update(run_attempt="2", url="https://github.com/o/r/actions/runs/1", check_run_id="cr-9")
    assert httpx.post(relay.url + "/api/crcr/results", json=body, headers=_auth(relay)).status_code == 201
    (row,) = _hud_rows(relay)
    assert row.attempt == 2 and row.body == body


@pytest.mark.parametrize("auth", [None, "Bearer wrong", "Basic abc", "Bearer tökén"])
def test_ingest_needs_the_results_token(relay: Relay, auth: str | None) -> None:
    headers = {"Authorization": auth.encode("utf-8")} if auth else {}  # raw UTF-8 bytes too
    resp = httpx.post(relay.url + "/api/crcr/results", json=_body(), headers=headers)
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"] == "Bearer"
    assert "bearer token" in resp.json()["detail"] and _hud_rows(relay) == []


def test_ingest_over_2mb_is_413(relay: Relay) -> None:
    body = _body()
    body["untrusted"]["callback_payload"]["payload"]["blob"] = "x" * (2 * 1024 * 1024)
    resp = httpx.post(relay.url + "/api/crcr/results", content=json.dumps(body).encode(),
                      headers=_auth(relay))
    assert resp.status_code == 413 and "limit" in resp.json()["detail"]


def test_post_results_to_remote_dashboard(relay: Relay, tmp_path) -> None:
    settings = Settings(dashboard_url=relay.url, database_url=f"sqlite:///{tmp_path / 'other.db'}",
                        dashboard_token=relay.app.state.settings.results_token())
    post_results(make_run("remote-1"), settings, level="L1")
    rows = _hud_rows(relay)
    assert [r.run_id for r in rows] == ["remote-1"]


def test_post_results_in_process(settings: Settings) -> None:
    post_results(make_run("local-1"), settings)  # dashboard_url unset → this relay's app
    from relay.store import make_engine, make_session_factory

    engine = make_engine(settings.database_url)
    with make_session_factory(engine)() as s:
        assert [r.run_id for r in list_hud_results(s)] == ["local-1"]
    engine.dispose()


@pytest.fixture
def flaky_hud(live_server):
    answers = [503, 502, 201]
    hits: list[int] = []
    app = FastAPI()

    @app.post("/api/crcr/results")
    def results() -> JSONResponse:
        status = answers.pop(0) if answers else 500
        hits.append(status)
        return JSONResponse({"status": "x"}, status_code=status)

    return live_server(app).url, answers, hits


def test_post_results_retries_5xx(flaky_hud, tmp_path) -> None:
    url, _, hits = flaky_hud
    settings = Settings(dashboard_url=url, database_url=f"sqlite:///{tmp_path / 'x.db'}")
    post_results(make_run(), settings, wait=wait_none())
    assert hits == [503, 502, 201]


def test_post_results_gives_up_after_three_retries(flaky_hud, tmp_path) -> None:
    url, answers, hits = flaky_hud
    answers[:] = [500, 500, 500, 500, 201]
    settings = Settings(dashboard_url=url, database_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(HudPostError) as err:
        post_results(make_run(), settings, wait=wait_none())
    assert err.value.status_code == 500 and hits == [500, 500, 500, 500]


def test_post_results_4xx_not_retried(flaky_hud, tmp_path) -> None:
    url, answers, hits = flaky_hud
    answers[:] = [422, 201]
    settings = Settings(dashboard_url=url, database_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(HudPostError):
        post_results(make_run(), settings, wait=wait_none())
    assert hits == [422]


def test_default_backoff_is_1_2_4_seconds(monkeypatch, tmp_path) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    transport = httpx.MockTransport(lambda req: httpx.Response(503))
    settings = Settings(dashboard_url="http://hud.invalid", database_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(HudPostError):
        post_results(make_run(), settings, transport=transport)
    assert slept == [1, 2, 4]


def test_ingest_after_the_database_file_was_deleted_is_503_and_reads_too(relay: Relay) -> None:
    """Every 2xx is durable: the ingest refuses (503) a body it could only write into a deleted
    SQLite file; the dashboard's reads answer 503 as ``/healthz`` does, not an empty 200."""
    import os
    from pathlib import Path

    url = relay.url + "/api/crcr/results"
    assert httpx.get(relay.url + "/api/v1/dashboard").status_code == 200
    db = Path(relay.app.state.settings.database_url.removeprefix("sqlite:///"))
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    resp = httpx.post(url, json=_body(), headers=_auth(relay))
    assert resp.status_code == 503 and "database unavailable" in resp.json()["detail"]
    for path in ("/api/v1/dashboard", "/api/v1/deliveries", "/"):
        read = httpx.get(relay.url + path)
        assert read.status_code == 503, path
        assert "database unavailable" in read.json()["detail"]
