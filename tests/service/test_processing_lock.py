"""A delivery is finished exactly once even when the SQLite file is locked by another process
(``relay replay``, ``relay quarantine``) longer than SQLite's own busy timeout."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from relay.settings import Settings
from relay.store import (
    claim_delivery,
    get_delivery,
    reset_stale_processing,
    save_run,
)
from relay.store.tables import RunRecord
from relay.worker.job import DeliveryJob
from relay.worker.processing import process_delivery
from tests.fakes.runs import make_run


def test_a_lock_longer_than_the_busy_timeout_delays_the_finish_instead_of_failing(
        tmp_path: Path, one_delivery) -> None:
    db, factory = tmp_path / "relay.db", one_delivery
    held, release = threading.Event(), threading.Event()

    def hold_lock() -> None:  # another process's long write transaction
        conn = sqlite3.connect(db, timeout=30)
        conn.execute("BEGIN EXCLUSIVE")
        held.set()
        release.wait(30)
        conn.rollback()
        conn.close()

    def processor(delivery, settings, sink):
        threading.Thread(target=hold_lock, daemon=True).start()
        held.wait(10)
        threading.Timer(7.0, release.set).start()  # past SQLite's 5 s busy_timeout
        return make_run("run-d1", delivery_id=delivery.id, trigger="webhook")

    started = time.monotonic()
    status = process_delivery("d-1", DeliveryJob(session_factory=factory, settings=Settings(), processor=processor))
    assert status == "processed" and time.monotonic() - started >= 7.0
    with factory() as s:
        assert get_delivery(s, "d-1").status == "processed"
        assert s.query(RunRecord).count() == 1


def test_an_interrupted_delivery_is_finished_with_its_stored_run_not_run_again(one_delivery) -> None:
    factory = one_delivery
    with factory() as s:
        assert claim_delivery(s, "d-1", lease_s=0)  # processing when the relay died (lease over)...
        save_run(s, make_run("run-d1", delivery_id="d-1", trigger="webhook"))  # ...its run stored
        assert reset_stale_processing(s) == 1  # restart recovery
    calls: list[str] = []

    def processor(delivery, settings, sink):
        calls.append(delivery.id)
        return make_run("run-again", delivery_id=delivery.id, trigger="webhook")

    assert process_delivery("d-1", DeliveryJob(session_factory=factory, settings=Settings(),
                            processor=processor)) == "processed"
    assert calls == []
    with factory() as s:
        assert [r.id for r in s.query(RunRecord)] == ["run-d1"]
        assert get_delivery(s, "d-1").status == "processed"


def test_two_attempts_of_one_delivery_store_one_run(one_delivery) -> None:
    """A broker redelivering a planning task that outlived its visibility timeout runs the
    delivery twice at once (bench/faults.py's kill9 row once stored two runs): the attempt
    that finishes second finds the delivery no longer ``processing`` and stores nothing."""
    from relay.store import load_delivery
    from relay.worker.processing import DeliverySink

    factory = one_delivery
    with factory() as s:
        assert claim_delivery(s, "d-1")
        delivery = load_delivery(s, "d-1")
    first, second = DeliverySink(delivery, factory), DeliverySink(delivery, factory)
    first.accept(make_run("run-first", delivery_id="d-1", trigger="webhook"))
    second.accept(make_run("run-second", delivery_id="d-1", trigger="webhook"))
    with factory() as s:
        assert [r.id for r in s.query(RunRecord)] == ["run-first"]
        assert get_delivery(s, "d-1").status == "processed"
