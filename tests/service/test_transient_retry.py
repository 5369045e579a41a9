"""A delivery whose processing met a transient failure (GitHub unreachable) is retried later
instead of being lost; a permanent failure is not; retries stop after MAX_ATTEMPTS."""

from __future__ import annotations

import pytest

from relay.errors import GitHubAPIError
from relay.settings import Settings
from relay.store import get_delivery
from relay.worker.job import DeliveryJob
from relay.worker.processing import MAX_ATTEMPTS, process_delivery, retry_delay_s, transient
from tests.fakes.github import pull_request_payload
from tests.fakes.runs import make_run


@pytest.fixture
def factory(one_delivery):
    return one_delivery


def test_transient_failures_are_retried_then_succeed(factory) -> None:
    outcomes = [GitHubAPIError(0, "/repos/p/p/pulls/7/files", "ConnectError"),
                GitHubAPIError(502, "/repos/p/p/pulls/7/files", "bad gateway"), None]
    scheduled: list[tuple[str, float]] = []

    def processor(delivery, settings, sink):
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return make_run("run-d1", delivery_id=delivery.id, trigger="webhook")

    def run_once() -> str | None:
        return process_delivery("d-1", DeliveryJob(session_factory=factory, settings=Settings(),
                                processor=processor, retry=lambda d, s: scheduled.append((d, s))))

    assert run_once() == "received"
    with factory() as s:
        row = get_delivery(s, "d-1")
        assert (row.status, row.attempts) == ("received", 1)
        assert "attempt 1 of 5 failed, retried in 30 s" in row.error and "unreachable" in row.error
    assert run_once() == "received" and scheduled == [("d-1", 30.0), ("d-1", 60.0)]
    assert run_once() == "processed"
    with factory() as s:
        row = get_delivery(s, "d-1")
        assert (row.status, row.attempts, row.error) == ("processed", 3, None)


def test_permanent_failures_and_the_last_attempt_fail(factory) -> None:
    scheduled: list[tuple[str, float]] = []

    def broken(delivery, settings, sink):
        raise GitHubAPIError(0, "/x", "ConnectError")

    for _ in range(MAX_ATTEMPTS):
        status = process_delivery("d-1", DeliveryJob(session_factory=factory, settings=Settings(),
                                  processor=broken, retry=lambda d, s: scheduled.append((d, s))))
    assert status == "failed" and len(scheduled) == MAX_ATTEMPTS - 1
    with factory() as s:
        assert get_delivery(s, "d-1").attempts == MAX_ATTEMPTS


def test_which_failures_are_transient() -> None:
    import httpx

    assert transient(GitHubAPIError(0, "/x")) and transient(GitHubAPIError(503, "/x"))
    assert transient(GitHubAPIError(429, "/x")) and transient(httpx.ConnectError("down"))
    assert not transient(GitHubAPIError(404, "/x")) and not transient(ValueError("bad payload"))
    assert [retry_delay_s(n) for n in (1, 2, 3, 6, 20)] == [30.0, 60.0, 120.0, 900.0, 900.0]


def test_a_serving_relay_retries_a_transient_failure_by_itself(relay, recorder, monkeypatch) -> None:
    import time

    import relay.worker.processing as processing

    monkeypatch.setattr(processing, "retry_delay_s", lambda attempts: 0.2)
    recorder.fail = GitHubAPIError(0, "/repos/pytorch/pytorch/pulls/7/files", "ConnectError")
    assert relay.sender.send("pull_request", pull_request_payload(), delivery_id="t-1").status_code == 202
    recorder.wait_for(1)
    recorder.fail = None  # GitHub is back
    recorder.wait_for(2)
    deadline = time.monotonic() + 10
    while True:
        with relay.app.state.session_factory() as s:
            row = get_delivery(s, "t-1")
        if row.status == "processed":
            break
        assert time.monotonic() < deadline, (row.status, row.error)
        time.sleep(0.05)
    assert row.attempts == 2 and [d.id for d in recorder.calls] == ["t-1", "t-1"]


def test_the_last_attempt_says_how_many_were_made(factory) -> None:
    def broken(delivery, settings, sink):
        raise GitHubAPIError(0, "/x", "ConnectError")

    for _ in range(MAX_ATTEMPTS):
        process_delivery("d-1", DeliveryJob(session_factory=factory, settings=Settings(), processor=broken,
                         retry=lambda d, s: None))
    with factory() as s:
        assert get_delivery(s, "d-1").error.startswith(f"failed after {MAX_ATTEMPTS} attempts: GitHubAPIError")
