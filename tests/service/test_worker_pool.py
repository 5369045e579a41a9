"""The in-process pool (``RELAY_WORKERS``): one long run does not hold every other delivery, and a
retry starts at its announced time even while a long run is going on."""

from __future__ import annotations

import threading
import time

import pytest

from relay.errors import GitHubAPIError
from relay.settings import Settings
from relay.store import get_delivery
from relay.worker.queue import InProcessQueue
from tests.fakes.github import pull_request_payload
from tests.fakes.runs import make_run
from tests.service.conftest import SECRET


class Blocking:
    """A handler that blocks on ``release`` for the ids in ``slow`` and records start times."""

    def __init__(self, slow: set[str]) -> None:
        self.slow, self.release = slow, threading.Event()
        self.started: dict[str, float] = {}

    def __call__(self, delivery_id: str) -> None:
        self.started[delivery_id] = time.monotonic()
        if delivery_id in self.slow:
            assert self.release.wait(30)

    def wait_started(self, delivery_id: str, timeout: float = 5.0) -> float:
        deadline = time.monotonic() + timeout
        while delivery_id not in self.started:
            assert time.monotonic() < deadline, f"{delivery_id} never started"
            time.sleep(0.01)
        return self.started[delivery_id]


def test_two_workers_run_a_second_delivery_beside_a_long_one() -> None:
    handler = Blocking({"long"})
    q = InProcessQueue(handler, workers=2)
    try:
        q.submit_delivery("long")
        handler.wait_started("long")
        q.submit_delivery("short")
        handler.wait_started("short", timeout=2.0)  # not held behind "long"
        assert q.in_hand() == ["long"] and not handler.release.is_set()
    finally:
        handler.release.set()
        assert q.join(5)
        q.close()


def test_one_worker_holds_the_backlog_behind_a_long_delivery() -> None:
    handler = Blocking({"long"})
    q = InProcessQueue(handler, workers=1)
    try:
        q.submit_delivery("long")
        handler.wait_started("long")
        q.submit_delivery("short")
        time.sleep(0.3)
        assert "short" not in handler.started
        handler.release.set()
        handler.wait_started("short")
    finally:
        handler.release.set()
        q.close()


def test_a_retry_starts_at_its_announced_time_beside_a_long_delivery() -> None:
    handler = Blocking({"long"})
    q = InProcessQueue(handler, workers=2)
    try:
        q.submit_delivery("long")
        handler.wait_started("long")
        t0 = time.monotonic()
        q.submit_later("retry", 0.4)
        assert q.scheduled() == 1
        started = handler.wait_started("retry") - t0
        assert 0.4 <= started < 0.9, started
    finally:
        handler.release.set()
        q.close()


def test_due_work_is_taken_in_due_order_and_closing_drops_the_schedule(caplog) -> None:
    handler = Blocking(set())
    q = InProcessQueue(handler, workers=1)
    q.submit_later("second", 0.2)
    q.submit_later("first", 0.1)
    handler.wait_started("second")
    assert handler.started["first"] < handler.started["second"]
    q.submit_later("never", 60)
    assert q.join(1) and q.scheduled() == 1  # a retry not yet due is not work in hand
    with caplog.at_level("INFO", logger="relay.worker.queue"):
        q.close(timeout=1)
    assert "1 deliveries left for restart recovery" in caplog.text
    with pytest.raises(RuntimeError):
        q.submit_delivery("late")
    with pytest.raises(ValueError):
        InProcessQueue(handler, workers=0)


def test_workers_setting_defaults_to_two_and_is_validated(tmp_path) -> None:
    from pydantic import ValidationError

    from relay.service import create_app

    assert Settings().workers == 2
    with pytest.raises(ValidationError):
        Settings(workers=0)
    settings = Settings(webhook_secret=SECRET, database_url=f"sqlite:///{tmp_path / 'w.db'}",
                        state_dir=tmp_path, workers=3)
    assert create_app(settings, recover=False).state.queue.workers == 3


def test_a_served_relay_finishes_a_pr_while_a_long_push_runs_and_retries_on_time(
        start_relay, settings, monkeypatch) -> None:
    """Delivery 1 (a long push run) holds one thread; delivery 2 (a PR) is processed meanwhile;
    delivery 3 fails transiently and its retry, announced 0.5 s later, starts on time."""
    import relay.worker.processing as processing

    monkeypatch.setattr(processing, "retry_delay_s", lambda attempts: 0.5)
    release, calls = threading.Event(), {}
    fail_once = {"d-3"}

    def processor(delivery, settings, sink):
        calls.setdefault(delivery.id, []).append(time.monotonic())
        if delivery.id == "d-1":
            assert release.wait(30)
        if delivery.id in fail_once:
            fail_once.discard(delivery.id)
            raise GitHubAPIError(0, "/repos/pytorch/pytorch/pulls/7/files", "ConnectError")
        return make_run(f"run-{delivery.id}", delivery_id=delivery.id, trigger="webhook")

    relay = start_relay(settings.model_copy(update={"workers": 2}), processor=processor, report=False)
    try:
        for n in (1, 2, 3):
            assert relay.sender.send("pull_request", pull_request_payload(number=n),
                                     delivery_id=f"d-{n}").status_code == 202
        deadline = time.monotonic() + 10
        while len(calls.get("d-3", [])) < 2 or "d-2" not in calls:
            assert time.monotonic() < deadline, calls
            time.sleep(0.02)
        retried_after = calls["d-3"][1] - calls["d-3"][0]
        assert 0.5 <= retried_after < 1.5, retried_after
        with relay.app.state.session_factory() as s:
            assert get_delivery(s, "d-1").status == "processing"  # the long run still going
            assert get_delivery(s, "d-2").status == "processed"
    finally:
        release.set()
    relay.drain()
    with relay.app.state.session_factory() as s:
        assert [get_delivery(s, f"d-{n}").status for n in (1, 2, 3)] == ["processed"] * 3
