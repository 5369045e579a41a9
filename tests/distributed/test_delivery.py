"""A webhook accepted by a relay with ``RELAY_BROKER_URL`` is processed by a ``relay worker``
process through Redis, with PostgreSQL as the shared database."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from relay.service import create_app
from relay.settings import Settings
from relay.store import get_delivery, list_runs, make_engine, make_session_factory
from relay.store.shard_results import ShardResultRecord
from relay.worker.celery.queue import CeleryQueue
from tests.distributed.conftest import tiny_spec
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


def test_one_worker_at_concurrency_1_finishes_a_delivery_of_three_shards(
        tmp_path: Path, dist_env, start_worker, live_server, monkeypatch) -> None:
    """No task waits on its own chord: the delivery task plans and sends the shards, the chord
    callback finishes the run — so a single worker process runs all of it in turn."""
    spec = tmp_path / "tiny.yaml"
    ids = tiny_spec(spec)  # 8 items; RELAY_SHARD_SIZE=2
    env = {**dist_env, "RELAY_SPECS": str(spec)}
    for key in ("RELAY_CELERY_QUEUE", "RELAY_SHARD_SIZE", "RELAY_SPECS"):
        monkeypatch.setenv(key, env[key])
    settings = Settings(webhook_secret=SECRET, database_url=env["RELAY_DATABASE_URL"],
                        broker_url=env["RELAY_BROKER_URL"], state_dir=tmp_path / "relay")
    server = live_server(create_app(settings))
    worker = start_worker(env, "solo", concurrency=1)
    sender = WebhookSender(server.url, SECRET)
    try:  # a push without patch text: every op test of the spec is kept
        payload = push_payload(commits=[{"added": [], "removed": [],
                                         "modified": ["aten/src/ATen/native/UnaryOps.cpp"]}])
        assert sender.send("push", payload, delivery_id="solo-1").status_code == 202
    finally:
        sender.close()
    engine = make_engine(env["RELAY_DATABASE_URL"])
    sf = make_session_factory(engine)
    deadline = time.monotonic() + 240
    try:
        while True:
            with sf() as s:
                row = get_delivery(s, "solo-1")
            if row.status in ("processed", "failed"):
                break
            assert time.monotonic() < deadline, (row.status, worker.log.read_text()[-3000:])
            time.sleep(0.2)
        assert row.status == "processed", (row.error, worker.log.read_text()[-3000:])
        with sf() as s:
            [run] = [r for r in list_runs(s, with_results=True) if r.delivery_id == "solo-1"]
            keys = {r.run_key for r in s.scalars(select(ShardResultRecord))}
    finally:
        engine.dispose()
    unary = [i for i in ids if any(f"[{op}-" in i for op in ("abs", "cos", "exp", "neg", "sin"))]
    assert sorted(r.id for r in run.results) == unary  # UnaryOps.cpp: 5 tests, 3 shards
    assert {r.outcome for r in run.results} == {"passed"} and run.conclusion == "success"
    assert keys == {f"{run.id}-head"}
    log = worker.log.read_text()
    assert log.count("relay.run_shard") >= 3 and "relay.finish_run" in log
