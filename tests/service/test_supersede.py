"""Superseded heads (issue 31): a storm of synchronizes of one PR runs the newest head, not
every head in the queue; the skipped ones end visibly, naming the newer head; trunk pushes keep
one run each."""

from __future__ import annotations

import threading
import time

from relay.store import get_delivery
from tests.fakes.github import pull_request_payload, push_payload
from tests.fakes.runs import make_run


def _serve(start_relay, settings, calls: list[str], release: threading.Event):
    def processor(delivery, s, sink):  # the first run holds the only worker until released
        calls.append(delivery.id)
        if len(calls) == 1:
            assert release.wait(30)
        return make_run(f"run-{delivery.id}", delivery_id=delivery.id, trigger="webhook")

    return start_relay(settings.model_copy(update={"workers": 1}), processor=processor, report=False)


def test_a_synchronize_storm_runs_the_newest_head_not_every_one(start_relay, settings) -> None:
    calls, release = [], threading.Event()
    relay = _serve(start_relay, settings, calls, release)
    heads = [f"{n:x}" * 40 for n in range(1, 6)]
    started = relay.sender.send("pull_request", pull_request_payload(number=9, head=heads[0]),
                                delivery_id="s-0")
    assert started.status_code == 202
    deadline = time.monotonic() + 20
    while not calls:  # s-0's run has started: four pushes to the PR arrive while it runs
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for n, head in enumerate(heads[1:], start=1):
        payload = pull_request_payload(number=9, head=head, action="synchronize")
        assert relay.sender.send("pull_request", payload, delivery_id=f"s-{n}").status_code == 202
    other = pull_request_payload(number=10, head="e" * 40)  # another PR: never superseded
    assert relay.sender.send("pull_request", other, delivery_id="other-pr").status_code == 202
    release.set()
    relay.drain()
    # the running head (not cancelled: its run was already going), then only the newest
    assert calls == ["s-0", "s-4", "other-pr"]
    with relay.app.state.session_factory() as s:
        for n in (1, 2, 3):  # queued behind s-0, superseded before their turn
            row = get_delivery(s, f"s-{n}")
            assert row.status == "processed"
            assert row.error == (f"superseded: local run skipped, head {heads[4]} is newer "
                                 "(delivery s-4)")
        assert get_delivery(s, "s-4").error is None


def test_trunk_pushes_and_a_closed_pr_keep_their_runs(start_relay, settings) -> None:
    calls, release = [], threading.Event()
    relay = _serve(start_relay, settings, calls, release)
    for n in range(3):
        body = push_payload(before=f"{n + 1:x}" * 40, after=f"{n + 2:x}" * 40)
        assert relay.sender.send("push", body, delivery_id=f"p-{n}").status_code == 202
    release.set()
    relay.drain()
    assert calls == ["p-0", "p-1", "p-2"]  # the grid has a cell per commit
