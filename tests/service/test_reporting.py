"""Reporting through the outbox: HUD delivery through an outage; L3/L4 check runs and the
failing-repo PR comment on a fake GitHub."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from relay.crcr.checks import comment_marker
from relay.store import list_hud_results
from tests.fakes.github import pull_request_payload
from tests.service.test_callbacks import _cb, _token


def test_hud_outage_then_recovery_still_delivers(crcr, live_server) -> None:
    state = {"down": True, "hits": 0, "bodies": []}
    hud = FastAPI()

    @hud.post("/api/crcr/results")
    async def results(request: Request) -> JSONResponse:
        state["hits"] += 1
        if state["down"]:
            return JSONResponse({"detail": "maintenance"}, status_code=503)
        state["bodies"].append(await request.json())
        return JSONResponse({"status": "stored"}, status_code=201)

    hud_url = live_server(hud).url
    relay, fake = crcr("L2: [acme/l2-ci]\n", dashboard_url=hud_url)
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="out-1")
    relay.drain()
    tok = _token(fake, "acme/l2-ci")
    assert _cb(relay, tok, "out-1", "in_progress").status_code == 200
    assert _cb(relay, tok, "out-1", "completed", conclusion="failure").status_code == 200
    deadline = time.monotonic() + 5
    while state["hits"] < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert state["hits"] >= 4 and state["bodies"] == []  # retried during the outage
    from relay.store.outbox import outbox_counts

    with relay.app.state.session_factory() as s:
        assert outbox_counts(s) == {"pending": 2}
    state["down"] = False
    assert relay.wait_outbox(15) == {"delivered": 2}
    statuses = [b["untrusted"]["callback_payload"]["workflow"]["status"] for b in state["bodies"]]
    assert statuses == ["in_progress", "completed"]
    assert state["bodies"][1]["trusted"]["verified_repo"] == "acme/l2-ci"


def test_local_run_reported_in_process(crcr, start_relay, settings) -> None:
    from tests.fakes.runs import make_run

    def processor(delivery, s, sink):
        return make_run("loc-1", delivery_id=delivery.id, trigger="webhook")

    relay = start_relay(settings, processor=processor)
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="loc-d")
    relay.drain()
    assert relay.wait_outbox() == {"delivered": 1}
    with relay.app.state.session_factory() as s:
        rows = list_hud_results(s)
    assert [(r.run_id, r.repo) for r in rows] == [("loc-1", "spyre-sim")]
    assert rows[0].body["trusted"]["downstream_repo_level"] == "L2"


def _checks(fake, repo):
    return [c for c in fake.check_runs.values() if c["name"].startswith(f"crcr/{repo}/")]


def test_l4_checks_always_and_one_comment_per_failing_repo(crcr) -> None:
    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(number=9), delivery_id="ck-1")
    relay.drain()
    tok = _token(fake, "acme/l4-ci")
    _cb(relay, tok, "ck-1", "in_progress", run_id=77, job="build")
    relay.wait_outbox()
    (check,) = _checks(fake, "acme/l4-ci")
    assert check["name"] == "crcr/acme/l4-ci/CI/build" and check["status"] == "in_progress"
    assert check["external_id"] == "77:9" and check["head_sha"] == "a" * 40
    assert check["repo"] == "pytorch/pytorch"
    _cb(relay, tok, "ck-1", "completed", run_id=77, job="build", conclusion="failure",
        artifact_url="https://example.invalid/a")
    _cb(relay, tok, "ck-1", "in_progress", run_id=77, job="test")
    _cb(relay, tok, "ck-1", "completed", run_id=77, job="test", conclusion="failure")
    relay.wait_outbox()
    assert len(_checks(fake, "acme/l4-ci")) == 2
    assert {c["conclusion"] for c in _checks(fake, "acme/l4-ci")} == {"failure"}
    comments = fake.comments[("pytorch/pytorch", 9)]
    assert len(comments) == 1  # found again by its marker, edited
    assert comment_marker("acme/l4-ci") in comments[0]["body"]
    assert "crcr/acme/l4-ci/CI/build" in comments[0]["body"]
    assert "crcr/acme/l4-ci/CI/test" in comments[0]["body"]
    # L2 repo: no checks
    tok2 = _token(fake, "acme/l2-ci")
    _cb(relay, tok2, "ck-1", "in_progress")
    relay.wait_outbox()
    assert _checks(fake, "acme/l2-ci") == []


def test_l3_checks_need_label_which_may_come_later(crcr) -> None:
    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(number=5, labels=()), delivery_id="l3-1")
    relay.drain()
    tok = _token(fake, "acme/l3-ci")
    _cb(relay, tok, "l3-1", "in_progress")
    _cb(relay, tok, "l3-1", "completed", conclusion="failure")
    relay.wait_outbox()
    assert _checks(fake, "acme/l3-ci") == [] and ("pytorch/pytorch", 5) not in fake.comments
    # the label arrives after the run
    labeled = pull_request_payload(number=5, action="labeled", labels=("ciflow/crcr/spyre",))
    labeled["label"] = {"name": "ciflow/crcr/spyre"}
    assert relay.sender.send("pull_request", labeled, delivery_id="l3-lab").status_code == 202
    relay.drain()
    relay.wait_outbox()
    (check,) = _checks(fake, "acme/l3-ci")
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert len(fake.comments[("pytorch/pytorch", 5)]) == 1


def test_l3_label_before_run(crcr) -> None:
    relay, fake = crcr()
    relay.sender.send("pull_request", pull_request_payload(number=6, labels=("ciflow/crcr/spyre",)),
                      delivery_id="l3-2")
    relay.drain()
    tok = _token(fake, "acme/l3-ci")
    _cb(relay, tok, "l3-2", "in_progress")
    relay.wait_outbox()
    assert [c["status"] for c in _checks(fake, "acme/l3-ci")] == ["in_progress"]
    _cb(relay, tok, "l3-2", "completed", conclusion="success")
    relay.wait_outbox()
    assert [c["conclusion"] for c in _checks(fake, "acme/l3-ci")] == ["success"]
    assert ("pytorch/pytorch", 6) not in fake.comments
