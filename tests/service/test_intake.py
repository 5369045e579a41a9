"""Intake hardening: identical deliveries arriving at the same moment are processed once
(on SQLite and PostgreSQL), and the event/action matrix of issue 6."""

from __future__ import annotations

import threading

import httpx
import pytest

from relay.settings import Settings
from relay.store import get_delivery
from tests.fakes.github import pull_request_payload
from tests.service.conftest import SECRET


def test_concurrent_identical_deliveries_processed_once(db_url, start_relay, recorder) -> None:
    settings = Settings(webhook_secret=SECRET, database_url=db_url)
    relay = start_relay(settings, processor=recorder, report=False)
    payload = pull_request_payload()
    n = 8
    barrier = threading.Barrier(n)
    codes: list[int] = []
    clients = [httpx.Client(timeout=30) for _ in range(n)]

    def fire(client: httpx.Client) -> None:
        from tests.fakes.github import WebhookSender

        sender = WebhookSender(relay.url, SECRET)
        sender.client = client
        barrier.wait()
        codes.append(sender.send("pull_request", payload, delivery_id="same-1").status_code)

    threads = [threading.Thread(target=fire, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.close()
    assert sorted(codes) == [200] * (n - 1) + [202]
    relay.drain()
    assert [d.id for d in recorder.calls] == ["same-1"]


MATRIX = [
    ("pull_request", "opened", 202), ("pull_request", "reopened", 202),
    ("pull_request", "synchronize", 202), ("pull_request", "closed", 202),
    ("pull_request", "labeled", 200),  # only a ciflow/crcr/<device> label does anything (CRCR)
    ("pull_request", "edited", 200),
    ("pull_request", "assigned", 200), ("push", None, 202),
    ("check_run", "rerequested", 202), ("check_run", "completed", 200),
    ("check_suite", "rerequested", 202), ("check_suite", "completed", 200),
    ("issues", "opened", 200), ("workflow_run", "completed", 200),
]


@pytest.mark.parametrize(("event", "action", "code"), MATRIX)
def test_event_action_matrix(relay, event, action, code) -> None:
    payload = pull_request_payload(action=action) if event == "pull_request" else \
        {"repository": {"full_name": "pytorch/pytorch"}, "ref": "refs/heads/main",
         "before": "c" * 40, "after": "d" * 40, **({"action": action} if action else {})}
    resp = relay.sender.send(event, payload, delivery_id=f"mx-{event}-{action}")
    assert resp.status_code == code, resp.text
    assert resp.json()["status"] == ("accepted" if code == 202 else "ignored")
    with relay.app.state.session_factory() as s:
        row = get_delivery(s, f"mx-{event}-{action}")
    assert row is not None and row.action == action
    if code == 200:
        assert row.status == "ignored"
