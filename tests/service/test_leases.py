"""No work stored twice (issue 31): a working attempt keeps its delivery (lease + heartbeat)
against a broker redelivery and another relay process's recovery, and a webhook delivery's run
is stored once (its key), whoever stores it."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from sqlalchemy.exc import IntegrityError

from relay.service.recovery import Recovery
from relay.settings import Settings
from relay.store import claim_delivery, get_delivery, save_run
from relay.store.leases import expired_processing_ids, lease_of
from relay.store.tables import RunRecord
from relay.worker.celery.tasks import _requeue_if_redelivered
from relay.worker.job import DeliveryJob
from relay.worker.processing import process_delivery
from relay.worker.queue import InProcessQueue
from tests.fakes.runs import make_run

LEASE_S = 0.6  # the heartbeat renews every 0.2 s


def _slow_processor(calls: list[str], planning_s: float, started: threading.Event):
    def processor(delivery, settings, sink):
        calls.append(delivery.id)
        started.set()
        time.sleep(planning_s)  # a planning step slower than the visibility timeout and lease
        return make_run(f"run-{len(calls)}", delivery_id=delivery.id, trigger="webhook")
    return processor


def test_a_planning_step_slower_than_the_visibility_timeout_is_not_run_twice(one_delivery) -> None:
    """The broker hands the task out again (``RELAY_VISIBILITY_TIMEOUT_S`` = 1 s here) while
    the first attempt still plans (3 s): the heartbeat keeps the lease, so the redelivered copy
    waits instead of resetting the row, and the delivery runs — and stores its run — once."""
    sf, calls, started = one_delivery, [], threading.Event()
    settings = Settings(lease_s=LEASE_S, visibility_timeout_s=1)
    job = DeliveryJob(session_factory=sf, settings=settings,
                      processor=_slow_processor(calls, 3.0, started))
    first = threading.Thread(target=process_delivery, args=("d-1", job))
    first.start()
    assert started.wait(10)
    redelivered = SimpleNamespace(delivery_info={"redelivered": True}, retries=0)
    waits = []
    for _ in range(4):  # redeliveries every visibility timeout, well past the first lease
        time.sleep(settings.visibility_timeout_s * 0.5)
        waits.append(_requeue_if_redelivered(sf, "d-1", redelivered))
        assert process_delivery("d-1", job) is None  # the copy finds nothing to claim
    first.join(10)
    assert all(w is not None and 0 < w <= LEASE_S for w in waits), waits
    assert calls == ["d-1"]
    with sf() as s:
        assert get_delivery(s, "d-1").status == "processed"
        assert [r.id for r in s.query(RunRecord)] == ["run-1"]
    assert _requeue_if_redelivered(sf, "d-1", redelivered) is None  # final: nothing to do


def test_a_dead_attempts_lease_runs_out_and_its_redelivery_runs_it(one_delivery) -> None:
    sf = one_delivery
    with sf() as s:
        assert claim_delivery(s, "d-1", lease_s=LEASE_S)  # then the worker was killed -9
        assert expired_processing_ids(s) == []
        status, until = lease_of(s, "d-1")
        assert status == "processing" and until is not None
    redelivered = SimpleNamespace(delivery_info={"redelivered": True}, retries=0)
    assert _requeue_if_redelivered(sf, "d-1", redelivered) > 0  # still held: wait
    time.sleep(LEASE_S + 0.1)  # no heartbeat renews it
    with sf() as s:
        assert expired_processing_ids(s) == ["d-1"]
    assert _requeue_if_redelivered(sf, "d-1", redelivered) is None
    with sf() as s:
        assert get_delivery(s, "d-1").status == "received"  # the redelivery claims it now


def test_another_relay_process_recovery_leaves_a_live_attempt_alone(one_delivery) -> None:
    """Two relay processes on one database: B's recovery sweep must not take the delivery A
    is still working on (A's queue is not B's), only one whose lease ran out."""
    sf, calls, started = one_delivery, [], threading.Event()
    job = DeliveryJob(session_factory=sf, settings=Settings(lease_s=LEASE_S),
                      processor=_slow_processor(calls, 2.0, started))
    a = threading.Thread(target=process_delivery, args=("d-1", job))
    a.start()
    assert started.wait(10)
    b_queue = InProcessQueue(lambda delivery_id: None, workers=1)  # relay B: holds nothing
    b = Recovery(lambda: sf, lambda: b_queue, interval_s=0.0)
    try:
        for _ in range(5):
            time.sleep(LEASE_S / 2)
            assert b.sweep()["reset"] == 0
    finally:
        a.join(10)
        b_queue.close(1)
    assert calls == ["d-1"]
    with sf() as s:
        assert get_delivery(s, "d-1").status == "processed"


def test_a_webhook_deliverys_run_is_stored_once_on_its_key(one_delivery) -> None:
    sf = one_delivery
    with sf() as s:
        save_run(s, make_run("run-a", delivery_id="d-1", trigger="webhook"))
        save_run(s, make_run("bisect-1", delivery_id="d-1", trigger="bisect"))  # rounds: many
        with pytest.raises(IntegrityError):
            save_run(s, make_run("run-b", delivery_id="d-1", trigger="webhook"))
        s.rollback()
        assert sorted(r.id for r in s.query(RunRecord)) == ["bisect-1", "run-a"]
