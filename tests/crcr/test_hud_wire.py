"""What a remote HUD receives (CRCR ``tests/test_hud.py``): the ``x-hud-internal-bot`` header with
the results token, JSON with exactly CRCR's top-level shape plus our ``relay`` key for local runs,
and a 409 (HUD: record already final) taken as delivered."""

from __future__ import annotations

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.fakes.github import pull_request_payload
from tests.fakes.runs import make_run


def test_remote_hud_gets_the_bot_header_and_crcr_shape(crcr, live_server) -> None:
    seen: list[tuple[dict, dict]] = []
    answers = [409]
    hud = FastAPI()

    @hud.post("/api/crcr/results")
    async def results(request: Request) -> JSONResponse:
        seen.append((dict(request.headers), await request.json()))
        return JSONResponse({}, status_code=answers.pop(0) if answers else 201)

    relay, fake = crcr("L2: [acme/l2-ci, spyre-sim]\n", dashboard_url=live_server(hud).url,
                       dashboard_token="hud-bot-key")
    relay.app.state.work._processor = lambda d, s, sink: make_run("w-1", delivery_id=d.id,
                                                                   trigger="webhook")
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="h-1")
    relay.drain()
    tok = next(b["client_payload"]["callback"]["token"] for r, b in fake.dispatches if r == "acme/l2-ci")
    httpx.post(relay.url + "/api/crcr/callback", headers={"Authorization": f"Bearer {tok}"},
               json={"delivery_id": "h-1", "workflow": {"status": "in_progress", "run_id": 3, "name": "CI"}})
    assert relay.wait_outbox() == {"delivered": 2}  # the 409 counted as delivered
    by_repo = {body["trusted"]["verified_repo"]: (headers, body) for headers, body in seen}
    headers, body = by_repo["acme/l2-ci"]
    assert headers["x-hud-internal-bot"] == "hud-bot-key" and "authorization" not in headers
    assert headers["content-type"] == "application/json"
    assert set(body) == {"trusted", "untrusted"}
    assert set(body["trusted"]) == {"ci_metrics", "verified_repo", "downstream_repo_level"}
    assert set(body["trusted"]["ci_metrics"]) == {"queue_time", "execution_time"}
    _, local = by_repo["spyre-sim"]
    assert set(local) == {"trusted", "untrusted", "relay"} and local["relay"]["failed_tests"] == ["w-1::t1"]
