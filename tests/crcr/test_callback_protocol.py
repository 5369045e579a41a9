"""``POST /api/crcr/callback`` as CRCR answers it (``tests/test_callback_handler.py``), over
loopback: who is ignored, required fields, workflow-level queue time, the verbatim body with its
triage verdict validated, the dashboard JSON showing the verdict, the zombie re-send."""

from __future__ import annotations

from datetime import timedelta

import httpx
from sqlalchemy import select

from relay.crcr.sweeper import sweep
from relay.crcr.tokens import issue_dispatch_token
from relay.store import list_hud_results
from relay.store.tables import OutboxRecord, utcnow
from tests.fakes.github import pull_request_payload

VERDICT = {"schema_version": 1, "category": "infra", "confidence": "low", "summary": "runner died",
           "extra_key": "dropped"}


def _token(fake, repo):
    return next(b["client_payload"]["callback"]["token"] for r, b in fake.dispatches if r == repo)


def _post(relay, token, body):
    return httpx.post(relay.url + "/api/crcr/callback", json=body,
                      headers={"Authorization": f"Bearer {token}"})


def _wf(status, **extra):
    return {"status": status, "run_id": "4242", "name": "CI", "job_name": "build", **extra}


def _hud(relay, repo):
    """Every HUD body sent for ``repo``, in order (the outbox keeps each; the dashboard's store
    keeps the newest per job)."""
    relay.wait_outbox()
    with relay.app.state.session_factory() as s:
        rows = s.scalars(select(OutboxRecord).where(OutboxRecord.kind == "hud").order_by(OutboxRecord.id))
        bodies = [r.body for r in rows if r.body["trusted"]["verified_repo"] == repo]
        stored = {h.run_id for h in list_hud_results(s) if h.repo == repo}
    assert not bodies or stored  # and they reached the dashboard
    return bodies


def _dispatched(crcr, number=9):
    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(number=number), delivery_id="d-1")
    relay.drain()
    return relay, fake


def test_l1_and_unlisted_callers_are_ignored_before_anything(crcr) -> None:
    relay, fake = _dispatched(crcr)
    for repo in ("acme/l1-ci", "nobody/else"):
        token = issue_dispatch_token(relay.app.state.settings.callback_key(), "d-1", repo)
        resp = _post(relay, token, {"nothing": "here"})  # not even a valid body
        assert (resp.status_code, resp.json()) == (200, {"ok": True, "status": "ignored"})


def test_required_fields_and_statuses_answer_400(crcr) -> None:
    relay, fake = _dispatched(crcr)
    tok = _token(fake, "acme/l2-ci")
    cases = [({"workflow": _wf("completed")}, "callback body missing required field: 'delivery_id'"),
             ({"delivery_id": "d-1"}, "callback body missing required field: 'workflow'"),
             ({"delivery_id": "d-1", "workflow": {"run_id": 1, "name": "CI"}},
              "callback body missing required field: 'workflow.status'"),
             ({"delivery_id": "d-1", "workflow": {"status": "completed", "run_id": 1}},
              "callback body missing required field: 'workflow.name'"),
             ({"delivery_id": "d-1", "workflow": _wf("queued")}, "unknown callback status: 'queued'"),
             ({"delivery_id": "nope", "workflow": _wf("in_progress")}, None)]
    for body, detail in cases:
        resp = _post(relay, tok, body)
        assert resp.status_code in (400, 403), (body, resp.text)
        if detail:
            assert resp.json()["detail"] == detail
    for run_id in ("x1", 0, "0", -3, True, "1" * 101):
        bad_run = _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("in_progress", run_id=run_id)})
        assert bad_run.status_code == 400 and "workflow.run_id" in bad_run.json()["detail"], run_id
    assert _post(relay, tok, [1, 2]).status_code == 400


def test_queue_time_is_workflow_level_and_execution_per_job(crcr) -> None:
    relay, fake = _dispatched(crcr)
    tok = _token(fake, "acme/l2-ci")
    first = _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("in_progress")}).json()
    later = _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("in_progress", job_name="test")}).json()
    assert first["queue_time"] is not None and later["queue_time"] is None
    done = _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("completed", conclusion="success")})
    assert done.json()["execution_time"] >= 0
    bodies = _hud(relay, "acme/l2-ci")
    metrics = [b["trusted"]["ci_metrics"] for b in bodies]
    assert metrics[0]["queue_time"] >= 0 and metrics[0]["execution_time"] is None
    assert metrics[1] == {"queue_time": None, "execution_time": None}
    assert metrics[2]["queue_time"] is None and metrics[2]["execution_time"] >= 0


def test_body_forwarded_verbatim_with_the_verdict_normalized(crcr) -> None:
    relay, fake = _dispatched(crcr, number=31)
    tok = _token(fake, "acme/l4-ci")
    sent = {"event_type": "pull_request", "delivery_id": "d-1", "payload": {"anything": [1, 2]},
            "workflow": _wf("in_progress", run_attempt="1", url="https://github.com/acme/l4-ci/actions/runs/4242",
                            check_run_id="456", started_at="2026-05-04T20:48:28Z", schema_version="1",
                            triage_verdict=VERDICT)}
    assert _post(relay, tok, sent).status_code == 200
    bad = dict(sent, workflow=_wf("completed", conclusion="failure",
                                  triage_verdict={"category": "cosmic-rays"}))
    answer = _post(relay, tok, bad).json()
    assert (answer["ok"], answer["status"], answer["state"]) == (True, "completed", "COMPLETED")
    first, second = _hud(relay, "acme/l4-ci")
    expected = dict(sent, workflow=dict(sent["workflow"], triage_verdict={
        k: v for k, v in VERDICT.items() if k != "extra_key"}))
    assert first["untrusted"]["callback_payload"] == expected
    assert first["trusted"]["verified_repo"] == "acme/l4-ci"
    assert first["trusted"]["downstream_repo_level"] == "L4"
    assert "triage_verdict" not in second["untrusted"]["callback_payload"]["workflow"]
    jobs = httpx.get(relay.url + "/api/v1/commits/" + "a" * 40).json()["jobs"]
    # the dropped verdict of the completion does not erase the valid one sent before
    assert jobs[0]["triage_verdict"] == expected["workflow"]["triage_verdict"]
    relay.wait_outbox()
    check = next(iter(fake.check_runs.values()))
    assert check["details_url"] == "https://github.com/acme/l4-ci/actions/runs/4242"
    assert check["output"]["title"] == "Failure"
    assert check["output"]["summary"].startswith(
        "acme/l4-ci workflow: https://github.com/acme/l4-ci/actions/runs/4242")


def test_valid_verdict_reaches_the_dashboard_json(crcr) -> None:
    relay, fake = _dispatched(crcr)
    tok = _token(fake, "acme/l2-ci")
    _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("in_progress")})
    _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("completed", conclusion="failure",
                                                            triage_verdict=VERDICT)})
    jobs = httpx.get(relay.url + "/api/v1/commits/" + "a" * 40).json()["jobs"]
    assert jobs[0]["triage_verdict"] == {k: v for k, v in VERDICT.items() if k != "extra_key"}


def test_zombie_resends_the_in_progress_body_timed_out(crcr) -> None:
    relay, fake = _dispatched(crcr)
    tok = _token(fake, "acme/l4-ci")
    sent = {"event_type": "pull_request", "delivery_id": "d-1", "payload": {"k": "v"},
            "workflow": _wf("in_progress", run_id="99999", run_attempt="1", check_run_id="cr-456",
                            url="https://github.com/acme/l4-ci/actions/runs/99999",
                            started_at="2026-06-18T10:00:00Z", schema_version="1")}
    assert _post(relay, tok, sent).status_code == 200
    later = utcnow() + timedelta(hours=6, minutes=1)
    assert len(sweep(relay.app.state.session_factory, 6 * 3600, now=later)) == 1
    _, zombie = _hud(relay, "acme/l4-ci")
    wf = zombie["untrusted"]["callback_payload"]["workflow"]
    assert {k: wf[k] for k in ("check_run_id", "url", "started_at", "run_id", "run_attempt",
                               "schema_version", "job_name")} == {
        "check_run_id": "cr-456", "url": sent["workflow"]["url"], "started_at": "2026-06-18T10:00:00Z",
        "run_id": "99999", "run_attempt": "1", "schema_version": "1", "job_name": "build"}
    assert (wf["status"], wf["conclusion"]) == ("completed", "timed_out")
    assert wf["completed_at"] == later.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert zombie["untrusted"]["callback_payload"]["payload"] == {"k": "v"}
    metrics = zombie["trusted"]["ci_metrics"]
    assert metrics["queue_time"] is None and metrics["execution_time"] >= 6 * 3600
    check = next(iter(fake.check_runs.values()))
    assert (check["conclusion"], check["output"]["title"]) == ("timed_out", "Timed_out")


def test_odd_optional_fields_are_forwarded_not_refused(crcr) -> None:
    """CRCR forwards whatever the optional fields hold; the relay keeps them verbatim and takes
    into its own records only what has the expected shape."""
    relay, fake = _dispatched(crcr)
    tok = _token(fake, "acme/l2-ci")
    _post(relay, tok, {"delivery_id": "d-1", "workflow": _wf("in_progress")})
    odd = _wf("completed", conclusion="x" * 40, test_results={"passed": "many"}, artifact_url=7)
    resp = _post(relay, tok, {"delivery_id": "d-1", "workflow": odd})
    assert resp.status_code == 200, resp.text
    assert _hud(relay, "acme/l2-ci")[-1]["untrusted"]["callback_payload"]["workflow"] == odd
    jobs = httpx.get(relay.url + "/api/v1/commits/" + "a" * 40).json()["jobs"]
    assert (jobs[0]["conclusion"], jobs[0]["test_results"]) == ("x" * 30, None)
