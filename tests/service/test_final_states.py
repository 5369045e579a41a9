"""Issue 17: every acknowledged delivery reaches ``processed``, ``ignored`` or ``failed`` (with
its error) whatever its content; every dispatch row reaches a final state; a permanent failure
is never retried at restart."""

from __future__ import annotations

import json
import logging
import time

import httpx
import pytest

from relay.crcr.fanout import DispatchPending
from relay.domain.jsonlimits import MAX_DEPTH, too_deep
from relay.service.jsonbody import parse_json_body
from relay.settings import Settings
from relay.store import get_delivery, insert_delivery
from relay.store.deliveries import (
    POISON_ATTEMPTS,
    pending_deliveries,
    reset_stale_processing,
)
from relay.store.dispatches import ensure_dispatch, list_dispatches
from relay.store.tables import DeliveryRecord
from relay.worker.job import DeliveryJob
from relay.worker.processing import MAX_ATTEMPTS, process_delivery
from tests.fakes.github import pull_request_payload, push_payload


def nested_push(depth: int) -> bytes:
    """A push payload whose extra key ``deep`` nests ``depth - 1`` objects (the payload itself
    is the first level): ``{"a":{"a":…1…}}``."""
    head = json.dumps(push_payload())[:-1]
    return (head + ', "deep": ' + '{"a":' * (depth - 1) + "1" + "}" * (depth - 1) + "}").encode()


def wait_final(relay, delivery_id: str, timeout: float = 20.0) -> DeliveryRecord:
    deadline = time.monotonic() + timeout
    while True:
        with relay.app.state.session_factory() as s:
            row = get_delivery(s, delivery_id)
        if row is not None and row.status in ("processed", "ignored", "failed"):
            return row
        assert time.monotonic() < deadline, (row.status, row.error) if row else "not stored"
        time.sleep(0.05)


def test_the_depth_limit_is_counted_exactly_and_without_recursion() -> None:
    assert not too_deep(json.loads(nested_push(MAX_DEPTH)))
    value: list = []
    for _ in range(100_000):  # far past any recursion limit
        value = [value]
    assert too_deep(value) and not too_deep(value, limit=100_001)
    with pytest.raises(ValueError, match="nests too deeply"):
        parse_json_body(nested_push(MAX_DEPTH + 1))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 980, 1000, 1024])
def test_a_signed_body_deeper_than_the_limit_is_refused_at_intake(crcr, depth: int) -> None:
    relay, fake = crcr("L2: [acme/l2-ci]\n")
    resp = relay.sender.send("push", None, body=nested_push(depth), delivery_id=f"deep-{depth}")
    assert resp.status_code == 400 and "nests too deeply" in resp.json()["detail"]
    with relay.app.state.session_factory() as s:
        assert get_delivery(s, f"deep-{depth}") is None  # never acknowledged, never stored


def test_a_body_at_the_limit_is_processed_and_its_dispatch_sent(crcr) -> None:
    """The same limit holds in processing: the deepest accepted body goes all the way through
    fan-out (the JSON encoder's recursion) to a ``sent`` dispatch row."""
    relay, fake = crcr("L2: [acme/l2-ci]\n")
    resp = relay.sender.send("push", None, body=nested_push(MAX_DEPTH), delivery_id="deep-ok")
    assert resp.status_code == 202
    assert wait_final(relay, "deep-ok").status == "processed"
    with relay.app.state.session_factory() as s:
        assert [d.status for d in list_dispatches(s, "deep-ok")] == ["sent"]
    assert fake.dispatches[0][1]["client_payload"]["delivery_id"] == "deep-ok"


def test_a_stored_payload_over_the_limit_fails_and_is_never_retried(one_delivery) -> None:
    """A row stored by an older relay (which let 1,024 levels in) ends ``failed`` instead of
    staying ``processing`` (RecursionError in ``load_delivery``); restart recovery skips it."""
    sf = one_delivery
    with sf() as s:
        insert_delivery(s, delivery_id="old-deep", event="push",
                        payload=nested_push(1000).decode())
    assert process_delivery("old-deep", DeliveryJob(session_factory=sf, settings=Settings(),
                            processor=lambda d, st, sink: None)) == "failed"
    with sf() as s:
        row = get_delivery(s, "old-deep")
        assert row.status == "failed" and "nests too deeply" in row.error
        assert reset_stale_processing(s) == 0 and "old-deep" not in pending_deliveries(s)


def _bad_labels() -> dict:
    payload = pull_request_payload(number=8)
    payload["pull_request"]["labels"] = ["x"]
    return payload


@pytest.mark.parametrize(("make", "field"), [
    (_bad_labels, "pull_request.labels.0"),
    (lambda: {**pull_request_payload(), "number": 10**30}, "number"),
])
def test_a_payload_that_breaks_fan_out_ends_failed_visibly_without_traceback(
        crcr, caplog, make, field: str) -> None:
    relay, fake = crcr()
    caplog.set_level(logging.INFO)
    resp = relay.sender.send("pull_request", make(), delivery_id="bad-1")
    assert resp.status_code == 202
    row = wait_final(relay, "bad-1")
    assert row.status == "failed" and row.error.startswith("PayloadInvalid: pull_request payload: ")
    assert field in row.error
    listed = httpx.get(relay.url + "/api/v1/deliveries", params={"status": "failed"}).json()
    assert [(d["delivery_id"], d["error"]) for d in listed["deliveries"]] == [("bad-1", row.error)]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert fake.dispatches == []  # nothing half-sent for a payload GitHub never sends
    with relay.app.state.session_factory() as s:
        assert "bad-1" not in pending_deliveries(s)


def test_github_down_past_the_client_retries_keeps_the_dispatch_and_retries_it(crcr) -> None:
    relay, fake = crcr("L2: [acme/l2-ci]\n", delivery_retry_s=0.5)
    fake.dispatch_fail = [(502, {})] * 4  # one attempt's 4 tries (relay.retrying.HTTP)
    assert relay.sender.send("push", push_payload(), delivery_id="gh-down").status_code == 202
    deadline = time.monotonic() + 30
    while True:  # first attempt: the row waits, the delivery is due again
        with relay.app.state.session_factory() as s:
            rows = list_dispatches(s, "gh-down")
        if rows and rows[0].error:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    row = wait_final(relay, "gh-down", timeout=30)
    assert row.status == "processed" and row.attempts == 2
    with relay.app.state.session_factory() as s:
        [sent] = list_dispatches(s, "gh-down")
    assert sent.status == "sent" and [r for r, _ in fake.dispatches] == ["acme/l2-ci"]


def test_the_last_attempt_ends_pending_dispatch_rows_failed(one_delivery) -> None:
    sf = one_delivery

    def fanout(delivery) -> None:
        with sf() as s:
            ensure_dispatch(s, delivery_id=delivery.id, repo="acme/l2-ci", level="L2",
                            device=None, event_type="pull_request", upstream="pytorch/pytorch",
                            head_sha=None, pr_number=7, labels=[], status="pending")
        raise DispatchPending(503, "/repos/acme/l2-ci/dispatches", "still down")

    statuses = [process_delivery("d-1", DeliveryJob(session_factory=sf, settings=Settings(),
                                 processor=lambda d, st, sink: None, fanout=fanout,
                                 retry=lambda d, s: None)) for _ in range(MAX_ATTEMPTS)]
    assert statuses == ["received"] * (MAX_ATTEMPTS - 1) + ["failed"]
    with sf() as s:
        row = get_delivery(s, "d-1")
        [dispatch] = list_dispatches(s, "d-1")
    assert row.error.startswith(f"fan-out: failed after {MAX_ATTEMPTS} attempts")
    assert dispatch.status == "failed" and "delivery failed" in dispatch.error


def test_a_bug_after_the_claim_ends_failed_not_processing(one_delivery, caplog) -> None:
    def ignore(delivery) -> None:
        raise KeyError("a bug")

    assert process_delivery("d-1", DeliveryJob(session_factory=one_delivery, settings=Settings(),
                            processor=lambda d, st, sink: None, ignore=ignore)) == "failed"
    with one_delivery() as s:
        assert get_delivery(s, "d-1").error == "internal error: KeyError: 'a bug'"


def test_a_delivery_interrupted_again_and_again_is_given_up(one_delivery) -> None:
    """A payload that kills the process each time (OOM, segfault) must not crash-loop the
    relay: after ``POISON_ATTEMPTS`` interrupted claims restart recovery fails it."""
    from sqlalchemy import update

    with one_delivery() as s:
        s.execute(update(DeliveryRecord).values(status="processing", attempts=POISON_ATTEMPTS))
        s.commit()
        assert reset_stale_processing(s) == 0
        row = get_delivery(s, "d-1")
        assert row.status == "failed" and f"interrupted {POISON_ATTEMPTS} times" in row.error
        assert pending_deliveries(s) == []


def test_recovery_while_serving_finishes_what_lost_its_worker(relay, recorder) -> None:
    """A ``processing`` row no worker holds (its attempt met the database gone) and a
    ``received`` row whose submit was lost are both run by the recovery sweep."""
    from sqlalchemy import update

    sf = relay.app.state.session_factory
    with sf() as s:
        for d in ("lost-claim", "lost-submit"):
            insert_delivery(s, delivery_id=d, event="pull_request", action="opened",
                            payload=json.dumps(pull_request_payload()))
        s.execute(update(DeliveryRecord).where(DeliveryRecord.delivery_id == "lost-claim")
                  .values(status="processing", attempts=1))
        s.commit()
    relay.app.state.recovery.interval_s = 0.0  # "stored more than one interval ago"
    counts = relay.app.state.recovery.sweep()
    assert counts["reset"] == 1 and counts["resubmitted"] == 2
    relay.drain()
    assert {wait_final(relay, d).status for d in ("lost-claim", "lost-submit")} == {"processed"}
    assert sorted(d.id for d in recorder.calls) == ["lost-claim", "lost-submit"]


def test_the_deliveries_page_says_fan_out_is_at_least_once(relay) -> None:
    html = httpx.get(relay.url + "/deliveries").text
    assert 'id="at-least-once"' in html and "client_payload.delivery_id" in html


def test_stored_states_keep_their_strings_and_attempt_results_are_never_stored(one_delivery) -> None:
    """Issue 26: the states are an enum whose values are the stored strings (the ``?status=``
    filter and every existing row depend on them); what an attempt comes to besides a state is a
    separate enum none of whose values is a state."""
    from relay.domain.delivery import DeliveryStatus
    from relay.store.tables import DELIVERY_STATUSES
    from relay.worker.job import AttemptResult

    assert DELIVERY_STATUSES == ("received", "processing", "processed", "ignored", "failed")
    assert [status.value for status in DeliveryStatus] == list(DELIVERY_STATUSES)
    assert [s for s in DeliveryStatus if s.final] == ["processed", "ignored", "failed"]
    assert not {result.value for result in AttemptResult} & set(DELIVERY_STATUSES)
    deferred = process_delivery("d-1", DeliveryJob(session_factory=one_delivery, settings=Settings(),
                                                   processor=lambda d, st, sink: AttemptResult.DEFERRED))
    assert deferred is DeliveryStatus.PROCESSING  # other tasks finish it
    with one_delivery() as s:
        row = get_delivery(s, "d-1")
        assert (row.status, type(row.status)) == ("processing", str)  # stored as the plain string
