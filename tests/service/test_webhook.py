"""``POST /webhooks/github`` over real HTTP on loopback (design §5)."""

from __future__ import annotations

import json
import socket

import httpx

from relay.store import get_delivery
from tests.fakes.github import pull_request_payload
from tests.service.conftest import Recorder, Relay


def _row(relay: Relay, delivery_id: str):
    with relay.app.state.session_factory() as s:
        return get_delivery(s, delivery_id)


def test_signed_delivery_is_persisted_accepted_and_processed(relay: Relay, recorder: Recorder) -> None:
    payload = pull_request_payload()
    resp = relay.sender.send("pull_request", payload, delivery_id="d-1")
    assert resp.status_code == 202
    assert resp.json() == {"status": "accepted", "delivery_id": "d-1"}
    recorder.wait_for(1)
    relay.drain()
    row = _row(relay, "d-1")
    assert row is not None and row.status == "processed" and row.event == "pull_request"
    assert row.action == "opened" and row.hook_id == "424242"
    assert json.loads(row.payload) == payload
    assert recorder.calls[0].id == "d-1" and recorder.calls[0].payload == payload


def test_unsigned_is_400(relay: Relay) -> None:
    resp = relay.sender.send("push", {"a": 1}, delivery_id="d-2", sign_it=False)
    assert resp.status_code == 400
    assert "missing" in resp.json()["detail"]
    assert _row(relay, "d-2") is None


def test_malformed_signature_is_401_like_any_mismatch(relay: Relay) -> None:
    """CRCR answers 401 to any signature that does not verify; only a missing one is 400."""
    for bad in ("sha1=abc", "sha256=xyz", "sha256=" + "0" * 63):
        resp = relay.sender.send("push", {"a": 1}, delivery_id="d-3", signature=bad)
        assert resp.status_code == 401, bad
        assert "malformed" in resp.json()["detail"]


def test_wrong_signature_is_401(relay: Relay) -> None:
    resp = relay.sender.send("push", {"a": 1}, delivery_id="d-4", signature="sha256=" + "0" * 64)
    assert resp.status_code == 401
    assert resp.json() == {"detail": "signature does not match the payload"}
    assert _row(relay, "d-4") is None


def test_signature_is_checked_before_headers_and_json(relay: Relay) -> None:
    resp = relay.sender.send("", None, body=b"not json", signature="sha256=" + "1" * 64,
                             headers={"X-GitHub-Delivery": ""})
    assert resp.status_code == 401


def test_missing_event_or_delivery_header_is_400(relay: Relay) -> None:
    client = relay.sender.client
    body = b"{}"
    from relay.github.signing import sign

    sig = sign(body, relay.sender.secret)
    r1 = client.post(relay.sender.url, content=body,
                     headers={"X-Hub-Signature-256": sig, "X-GitHub-Delivery": "d-5"})
    r2 = client.post(relay.sender.url, content=body,
                     headers={"X-Hub-Signature-256": sig, "X-GitHub-Event": "push"})
    assert (r1.status_code, r2.status_code) == (400, 400)
    assert "X-GitHub-Event" in r1.json()["detail"] and "X-GitHub-Delivery" in r2.json()["detail"]


def test_non_json_body_is_400(relay: Relay) -> None:
    for body in (b"not json", b"\xff\xfe", b"[1, 2]"):
        resp = relay.sender.send("push", None, body=body, delivery_id="d-6")
        assert resp.status_code == 400, body
        assert "JSON" in resp.json()["detail"]
    assert _row(relay, "d-6") is None


def test_duplicate_delivery_is_200_and_processed_once(relay: Relay, recorder: Recorder) -> None:
    payload = pull_request_payload()
    first = relay.sender.send("pull_request", payload, delivery_id="dup-1")
    second = relay.sender.send("pull_request", payload, delivery_id="dup-1")
    assert first.status_code == 202
    assert second.status_code == 200 and second.json()["status"] == "duplicate"
    recorder.wait_for(1)
    relay.drain()
    assert [d.id for d in recorder.calls] == ["dup-1"]


def test_ping_is_pong_and_recorded(relay: Relay, recorder: Recorder) -> None:
    resp = relay.sender.send("ping", {"zen": "Keep it logically awesome.", "hook_id": 424242},
                             delivery_id="ping-1")
    assert resp.status_code == 200 and resp.json()["status"] == "pong"
    row = _row(relay, "ping-1")
    assert row is not None and row.event == "ping" and row.status == "processed"
    relay.drain()
    assert recorder.calls == []


def test_unknown_event_is_recorded_as_ignored(relay: Relay, recorder: Recorder) -> None:
    resp = relay.sender.send("issues", {"action": "opened"}, delivery_id="ign-1")
    assert resp.status_code == 200 and resp.json()["status"] == "ignored"
    row = _row(relay, "ign-1")
    assert row is not None and row.status == "ignored" and row.processed_at is not None
    relay.drain()
    assert recorder.calls == []


def test_an_ignored_delivery_says_why_in_its_answer_and_its_row(relay: Relay) -> None:
    payload = {"action": "opened", "repository": {"full_name": "Codertocat/Hello-World"}}
    resp = relay.sender.send("pull_request", payload, delivery_id="ign-2")
    reason = resp.json()["reason"]
    assert resp.status_code == 200 and "Codertocat/Hello-World" in reason
    assert _row(relay, "ign-2").error == reason


def test_content_length_over_25mb_is_413_without_reading(relay: Relay) -> None:
    host, port = "127.0.0.1", relay.server.port
    request = (f"POST /webhooks/github HTTP/1.1\r\nHost: {host}\r\n"
               f"Content-Length: {25 * 1024 * 1024 + 1}\r\nContent-Type: application/json\r\n"
               "X-GitHub-Event: push\r\nX-GitHub-Delivery: big-1\r\n\r\n").encode()
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request)
        head = sock.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413"), head


def test_streamed_body_over_25mb_is_413(relay: Relay) -> None:
    mb = 1024 * 1024
    chunk = b" " * mb

    def body():  # chunked transfer: no Content-Length, the cap is hit on the last chunk
        for _ in range(25):
            yield chunk
        yield b" "

    resp = relay.sender.client.post(relay.sender.url, content=body(),
                                    headers={"X-GitHub-Event": "push", "X-GitHub-Delivery": "big-2"})
    assert resp.status_code == 413
    assert "limit" in resp.json()["detail"]


def test_metrics_count_deliveries(relay: Relay) -> None:
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="m-1")
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="m-1")
    relay.sender.send("push", {}, sign_it=False)
    text = httpx.get(relay.url + "/metrics").text
    assert 'relay_webhook_deliveries_total{event="pull_request",status="accepted"} 1.0' in text
    assert 'relay_webhook_deliveries_total{event="pull_request",status="duplicate"} 1.0' in text
    assert 'relay_webhook_deliveries_total{event="push",status="rejected"} 1.0' in text


def test_healthz(relay: Relay) -> None:
    resp = httpx.get(relay.url + "/healthz")
    assert resp.status_code == 200 and resp.json() == {"status": "ok", "database": "ok"}


def test_identical_body_under_a_new_delivery_id_within_a_day_is_a_logged_duplicate(
        relay: Relay, recorder: Recorder, caplog) -> None:
    """GitHub keeps the delivery id when it redelivers: the same signed bytes under another id
    (a replaying proxy, a second hook) are answered as a duplicate and logged, never run twice;
    after a day the same bytes are a new delivery again."""
    import logging
    from datetime import timedelta

    from sqlalchemy import update

    from relay.store.tables import DeliveryDigestRecord

    body = json.dumps(pull_request_payload(number=31)).encode()
    assert relay.sender.send("pull_request", None, body=body, delivery_id="orig-1").status_code == 202
    with caplog.at_level(logging.WARNING, logger="relay.store.deliveries"):
        copy = relay.sender.send("pull_request", None, body=body, delivery_id="copy-1")
    assert copy.status_code == 200 and copy.json() == {"status": "duplicate", "delivery_id": "copy-1"}
    assert any("copy-1" in r.getMessage() and "orig-1" in r.getMessage() for r in caplog.records)
    assert _row(relay, "copy-1") is None
    other = json.dumps(pull_request_payload(number=32)).encode()  # one byte differs: new
    assert relay.sender.send("pull_request", None, body=other, delivery_id="other-1").status_code == 202
    assert relay.sender.send("pull_request", None, body=body, delivery_id="orig-1").status_code == 200
    relay.drain()
    assert sorted(d.id for d in recorder.calls) == ["orig-1", "other-1"]
    with relay.app.state.session_factory() as s:
        s.execute(update(DeliveryDigestRecord).values(
            received_at=DeliveryDigestRecord.received_at - timedelta(days=1, seconds=1)))
        s.commit()
    assert relay.sender.send("pull_request", None, body=body, delivery_id="later-1").status_code == 202


def test_a_nul_character_is_400_on_every_store_but_a_backslash_u0000_in_text_is_kept(relay: Relay) -> None:
    """GitHub never sends a NUL and PostgreSQL text cannot hold one: refused before the store,
    the same on SQLite and PostgreSQL.  A commit message quoting ``\\u0000`` is text, kept."""
    nul = json.dumps(pull_request_payload(number=71) | {"note": "a\u0000b"}).encode()
    resp = relay.sender.send("pull_request", None, body=nul, delivery_id="nul-1")
    assert resp.status_code == 400 and resp.json()["detail"] == "body contains a NUL character (\\u0000)"
    assert _row(relay, "nul-1") is None
    quoted = json.dumps(pull_request_payload(number=72) | {"note": "a\\u0000b"}).encode()
    assert relay.sender.send("pull_request", None, body=quoted, delivery_id="nul-2").status_code == 202
