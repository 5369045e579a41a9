"""A webhook accepted by a relay with ``RELAY_BROKER_URL`` is processed by a ``relay worker``
process through Redis, with PostgreSQL as the shared database."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from relay.service import create_app
from relay.worker.celery.queue import CeleryQueue
from relay.settings import Settings
from relay.store import get_delivery, make_engine, make_session_factory
from tests.fakes.github import WebhookSender, push_payload

pytestmark = pytest.mark.timeout(300)
SECRET = "distributed-webhook-secret-42"


def test_webhook_is_processed_by_a_worker(tmp_path: Path, dist_env, start_worker, live_server,
                                          monkeypatch) -> None:
    monkeypatch.setenv("RELAY_CELERY_QUEUE", dist_env["RELAY_CELERY_QUEUE"])
    settings = Settings(webhook_secret=SECRET, database_url=dist_env["RELAY_DATABASE_URL"],
                        broker_url=dist_env["RELAY_BROKER_URL"], state_dir=tmp_path)
    app = create_app(settings)
    assert isinstance(app.state.queue, CeleryQueue)
    server = live_server(app)  # migrates the schema before the worker starts
    worker = start_worker(dist_env, "deliveries")
    sender = WebhookSender(server.url, SECRET)
    try:
        # a branch creation: accepted and queued; the worker's push handler skips the run
        resp = sender.send("push", push_payload(before="0" * 40), delivery_id="dist-1")
        assert resp.status_code == 202
    finally:
        sender.close()
    engine = make_engine(dist_env["RELAY_DATABASE_URL"])
    sf = make_session_factory(engine)
    deadline = time.monotonic() + 120
    try:
        while True:
            with sf() as s:
                status = get_delivery(s, "dist-1").status
            if status == "processed":
                break
            assert time.monotonic() < deadline, (status, worker.log.read_text()[-3000:])
            time.sleep(0.1)
    finally:
        engine.dispose()
    assert "relay.process_delivery" in worker.log.read_text()
