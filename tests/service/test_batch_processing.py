"""A backlog is processed in batches: one claim and one final-state transaction for many
deliveries (``process_deliveries``, ``claim_many``, ``finish_many``), the in-process queue hands a
batch handler every due submission, and a delivery that may run long never holds its batchmates."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event

from relay.errors import PayloadInvalid
from relay.settings import Settings
from relay.store import create_schema, get_delivery, insert_delivery, make_engine, make_session_factory
from relay.store.deliveries import claim_many, finish_many
from relay.store.dispatches import list_dispatches
from relay.store.tables import DispatchRecord, utcnow
from relay.worker.job import DeliveryJob
from relay.worker.processing import process_deliveries
from relay.worker.queue import InProcessQueue
from tests.fakes.github import pull_request_payload
from tests.service.conftest import SECRET


@pytest.fixture
def sf(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'relay.db'}")
    create_schema(engine)
    yield make_session_factory(engine)
    engine.dispose()


def _store(sf, n: int, payload: str | None = None) -> list[str]:
    ids = [f"b-{i}" for i in range(n)]
    with sf() as s:
        for delivery_id in ids:
            insert_delivery(s, delivery_id=delivery_id, event="pull_request", action="opened",
                            payload=payload or json.dumps(pull_request_payload()))
    return ids


def test_claim_many_claims_only_received_rows_and_names_unusable_payloads(sf) -> None:
    ids = _store(sf, 3)
    with sf() as s:
        insert_delivery(s, delivery_id="bad", event="pull_request", payload="[1, 2]")
        first = claim_many(s, [*ids[:2], "bad", "unknown"])
        again = claim_many(s, ids)
    assert sorted(first) == ["b-0", "b-1", "bad"]
    assert isinstance(first["bad"], PayloadInvalid)
    assert first["b-0"].payload["number"] == pull_request_payload()["number"]
    assert first["b-0"].attempts == 1
    assert list(again) == ["b-2"]  # the first two are processing now


def test_finish_many_ends_pending_dispatches_and_refuses_a_non_final_state(sf) -> None:
    ids = _store(sf, 2)
    with sf() as s:
        claim_many(s, ids)
        s.add(DispatchRecord(delivery_id="b-0", repo="org/down", level="L2", event_type="pull_request",
                             upstream="pytorch/pytorch", labels=[], status="pending", state="queued",
                             attempts=0, payload_bytes=0, created_at=utcnow()))
        s.commit()
        with pytest.raises(ValueError, match="not a final"):
            finish_many(s, [("b-0", "received", None)])
        finish_many(s, [("b-0", "failed", "boom"), ("b-1", "processed", None)])
        rows = [get_delivery(s, d) for d in ids]
        dispatch = list_dispatches(s, "b-0")[0]
    assert [(r.status, r.error) for r in rows] == [("failed", "boom"), ("processed", None)]
    assert rows[1].processed_at is not None
    assert (dispatch.status, dispatch.error) == ("failed", "delivery failed: boom")


def test_a_backlog_takes_one_claim_and_one_final_state_transaction(sf, tmp_path) -> None:
    ids = _store(sf, 30)
    updates: list[str] = []
    engine = sf.kw["bind"]
    event.listen(engine, "before_cursor_execute",
                 lambda conn, cur, sql, *a: updates.append(sql) if sql.startswith("UPDATE deliveries") else None)
    settings = Settings(webhook_secret=SECRET, database_url=str(engine.url), state_dir=tmp_path)
    finished: list[str] = []
    statuses = process_deliveries(ids, DeliveryJob(session_factory=sf, settings=settings,
                                  processor=lambda delivery, settings, sink: None,
                                  on_finished=lambda d, status: finished.append(status)))
    assert set(statuses.values()) == {"processed"} and finished == ["processed"] * 30
    assert len(updates) == 2, updates  # the claim of all 30, then their final states
    with sf() as s:
        assert {get_delivery(s, d).status for d in ids} == {"processed"}


def test_a_long_delivery_first_writes_the_states_finished_before_it(sf, tmp_path) -> None:
    ids = _store(sf, 3)
    seen: dict[str, str] = {}
    settings = Settings(webhook_secret=SECRET, database_url=str(sf.kw["bind"].url), state_dir=tmp_path)

    def processor(delivery, settings, sink):
        if delivery.id == "b-2":  # the long one: its batchmates already look finished
            with sf() as s:
                seen.update({d: get_delivery(s, d).status for d in ids[:2]})

    process_deliveries(ids, DeliveryJob(session_factory=sf, settings=settings, processor=processor,
                       long_running=lambda d: d.id == "b-2"))
    assert seen == {"b-0": "processed", "b-1": "processed"}


def test_the_queue_hands_a_backlog_to_the_batch_handler_and_takes_back_what_it_gives() -> None:
    batches: list[list[str]] = []
    release = threading.Event()

    def handler(ids, give_back):
        if "slow-1" in ids and "slow-2" in ids:  # one slow delivery per batch: the other goes back
            give_back(["slow-2"])
            ids = [i for i in ids if i != "slow-2"]
        batches.append(list(ids))
        if "slow-1" in ids:
            assert release.wait(10)

    q = InProcessQueue(lambda _id: None, workers=2, batch_handler=handler, linger_s=0.2)
    try:
        for n in range(5):
            q.submit_delivery(f"quick-{n}")
        for name in ("slow-1", "slow-2"):
            q.submit_delivery(name)
        deadline = time.monotonic() + 5
        while ["slow-2"] not in batches:  # taken by the other thread while slow-1 runs
            assert time.monotonic() < deadline, batches
            time.sleep(0.01)
        assert batches[0] == [f"quick-{n}" for n in range(5)] + ["slow-1"]
        assert q.in_hand() == [f"quick-{n}" for n in range(5)] + ["slow-1"]
    finally:
        release.set()
        assert q.join(5)
        q.close()
