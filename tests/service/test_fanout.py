"""CRCR fan-out over real HTTP: repository_dispatch per allowlisted repo, records, retries,
rate-limit headers, payloads over 65 KB trimmed (design §6)."""

from __future__ import annotations

import json
import time

from relay.crcr.payloads import CLIENT_PAYLOAD_CAP, build_client_payload, trim_payload
from relay.crcr.tokens import verify_dispatch_token
from relay.store.dispatches import list_dispatches
from tests.fakes.github import pull_request_payload


def _dispatches(relay, delivery_id):
    with relay.app.state.session_factory() as s:
        return {d.repo: d for d in list_dispatches(s, delivery_id)}


def test_dispatch_to_every_external_repo_with_crcr_payload(crcr, recorder) -> None:
    relay, fake = crcr()
    payload = pull_request_payload(number=9)
    assert relay.sender.send("pull_request", payload, delivery_id="fo-1").status_code == 202
    relay.drain()
    assert sorted(r for r, _ in fake.dispatches) == ["acme/l1-ci", "acme/l2-ci", "acme/l3-ci",
                                                      "acme/l4-ci"]
    repo, body = fake.dispatches[0]
    assert body["event_type"] == "pull_request"
    cp = body["client_payload"]
    assert (cp["event_type"], cp["delivery_id"], cp["payload"]) == ("pull_request", "fo-1", payload)
    assert cp["callback"]["url"].endswith("/api/crcr/callback")
    caller = verify_dispatch_token(relay.app.state.settings.callback_key(), cp["callback"]["token"])
    assert (caller.repo, caller.delivery_id) == (repo, "fo-1")
    rows = _dispatches(relay, "fo-1")
    assert {r.status for r in rows.values()} == {"sent"}
    assert rows["acme/l3-ci"].level == "L3" and rows["acme/l3-ci"].device == "spyre"
    assert rows["acme/l4-ci"].head_sha == "a" * 40 and rows["acme/l4-ci"].pr_number == 9
    assert [d.id for d in recorder.calls] == ["fo-1"]  # spyre-sim is L2: runs locally


def test_local_backend_not_listed_does_not_run(crcr, recorder) -> None:
    relay, fake = crcr("L1: [acme/only]\n")
    relay.sender.send("push", {"ref": "refs/heads/main", "before": "c" * 40, "after": "d" * 40,
                               "repository": {"full_name": "pytorch/pytorch"}}, delivery_id="p-1")
    relay.drain()
    assert [r for r, _ in fake.dispatches] == ["acme/only"]
    assert fake.dispatches[0][1]["event_type"] == "push"
    assert recorder.calls == []


def test_retries_5xx_and_429_honouring_retry_after(crcr) -> None:
    relay, fake = crcr("L2: [acme/l2-ci]\n")
    fake.dispatch_fail = [(502, {}), (429, {"Retry-After": "1"}),
                          (403, {"X-RateLimit-Remaining": "0",
                                 "X-RateLimit-Reset": str(int(time.time()) + 1)})]
    t0 = time.monotonic()
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="rt-1")
    relay.drain(30)
    elapsed = time.monotonic() - t0
    assert [r for r, _ in fake.dispatches] == ["acme/l2-ci"]
    row = _dispatches(relay, "rt-1")["acme/l2-ci"]
    assert row.status == "sent" and row.sent_at is not None
    assert elapsed >= 1.0  # the Retry-After second was waited


def test_permanent_failure_is_recorded_not_dropped(crcr) -> None:
    relay, fake = crcr("L2: [acme/l2-ci]\n")
    fake.dispatch_fail = [(404, {})]
    relay.sender.send("pull_request", pull_request_payload(), delivery_id="pf-1")
    relay.drain()
    row = _dispatches(relay, "pf-1")["acme/l2-ci"]
    assert row.status == "failed" and "404" in row.error and row.attempts == 1


def test_payload_over_65kb_is_trimmed_and_recorded(crcr) -> None:
    relay, fake = crcr("L2: [acme/l2-ci]\n")
    payload = pull_request_payload(number=11, labels=("ciflow/crcr/spyre",))
    payload["pull_request"]["body"] = "x" * 80_000
    payload["pull_request"]["html_url"] = "https://github.com/pytorch/pytorch/pull/11"
    assert len(json.dumps(payload)) > CLIENT_PAYLOAD_CAP
    relay.sender.send("pull_request", payload, delivery_id="big-1")
    relay.drain()
    assert len(fake.dispatches) == 1
    sent = fake.dispatches[0][1]["client_payload"]["payload"]
    assert "body" not in sent["pull_request"]
    assert sent["pull_request"]["head"]["sha"] == "a" * 40
    assert sent["pull_request"]["base"] == {"sha": "b" * 40, "ref": "main"}
    assert sent["pull_request"]["labels"] == [{"name": "ciflow/crcr/spyre"}]
    assert sent["pull_request"]["html_url"].endswith("/pull/11")
    assert sent["number"] == 11 and sent["repository"] == {"full_name": "pytorch/pytorch"}
    assert sent["_trimmed"]["original_bytes"] > CLIENT_PAYLOAD_CAP
    row = _dispatches(relay, "big-1")["acme/l2-ci"]
    assert row.trimmed_from > CLIENT_PAYLOAD_CAP and row.payload_bytes <= CLIENT_PAYLOAD_CAP


def test_trim_keeps_push_fields() -> None:
    push = {"ref": "refs/heads/main", "before": "1" * 40, "after": "2" * 40,
            "commits": [{"id": str(i), "message": "m" * 1000} for i in range(100)],
            "head_commit": {"id": "2" * 40, "message": "x"}, "repository": {"full_name": "p/p"}}
    body, trimmed = build_client_payload("push", "d", push)
    assert trimmed and body["payload"]["after"] == "2" * 40 and "commits" not in body["payload"]
    assert trim_payload(push)["head_commit"] == {"id": "2" * 40}
