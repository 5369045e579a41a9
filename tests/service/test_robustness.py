"""Concurrency and failure paths: racing redeliveries, internal errors, database down."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy.orm import sessionmaker

from relay.store import make_engine
from tests.fakes.github import WebhookSender, pull_request_payload
from tests.service.conftest import SECRET, Recorder, Relay


def test_concurrent_redeliveries_accept_exactly_one(relay: Relay, recorder: Recorder) -> None:
    payload = pull_request_payload()

    def send(_: int) -> int:
        sender = WebhookSender(relay.url, SECRET)
        try:
            return sender.send("pull_request", payload, delivery_id="race-1").status_code
        finally:
            sender.close()

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(send, range(16)))
    assert codes == [200] * 15 + [202]
    relay.drain()
    assert [d.id for d in recorder.calls] == ["race-1"]


def test_database_failure_on_intake_is_503_json_without_traceback(relay: Relay) -> None:
    def broken() -> None:
        raise RuntimeError("database on fire")

    relay.app.state.session_factory = broken
    resp = relay.sender.send("pull_request", pull_request_payload(), delivery_id="boom-1")
    assert resp.status_code == 503  # not stored: GitHub marks the delivery failed
    assert resp.json() == {"detail": "delivery not stored: RuntimeError"}


def test_internal_error_is_json_without_traceback(relay: Relay) -> None:
    def broken() -> None:
        raise RuntimeError("database on fire")

    relay.app.state.session_factory = broken
    resp = httpx.get(relay.url + "/api/v1/dashboard")
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal server error"}


def test_healthz_503_when_database_is_down(relay: Relay) -> None:
    dead = make_engine("postgresql+psycopg://postgres@127.0.0.1:9/none",
                       connect_args={"connect_timeout": 1})
    relay.app.state.session_factory = sessionmaker(bind=dead)
    resp = httpx.get(relay.url + "/healthz", timeout=10)
    assert resp.status_code == 503 and resp.json()["status"] == "error"
    dead.dispose()


def test_unknown_route_and_method_are_json(relay: Relay) -> None:
    assert httpx.get(relay.url + "/nope").json() == {"detail": "Not Found"}
    resp = httpx.get(relay.url + "/webhooks/github")
    assert resp.status_code == 405 and "detail" in resp.json()


def test_intake_bug_after_commit_is_json_500_and_the_delivery_is_kept(relay: Relay) -> None:
    class BrokenQueue:
        def submit_delivery(self, delivery_id: str) -> None:
            raise RuntimeError("queue on fire")

        def close(self, timeout: float | None = None) -> None:
            pass

    relay.app.state.queue = BrokenQueue()
    resp = relay.sender.send("pull_request", pull_request_payload(), delivery_id="kept-1")
    assert resp.status_code == 500
    assert resp.json() == {"detail": "internal server error"}
    again = relay.sender.send("pull_request", pull_request_payload(), delivery_id="kept-1")
    assert again.json()["status"] == "duplicate"  # stored: restart recovery will process it
