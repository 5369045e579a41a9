"""Restart recovery and failure handling of delivery processing."""

from __future__ import annotations

import json

from relay.service import create_app
from relay.settings import Settings
from relay.store import (
    claim_delivery,
    create_schema,
    get_delivery,
    insert_delivery,
    make_engine,
    make_session_factory,
)
from tests.fakes.github import pull_request_payload, push_payload
from tests.service.conftest import Recorder


def _seed(settings: Settings) -> None:
    engine = make_engine(settings.database_url)
    create_schema(engine)
    with make_session_factory(engine)() as s:
        body = json.dumps(pull_request_payload())
        insert_delivery(s, delivery_id="left-1", event="pull_request", payload=body, action="opened")
        insert_delivery(s, delivery_id="left-2", event="pull_request", payload=body, action="opened")
        assert claim_delivery(s, "left-2", lease_s=0)  # interrupted while processing: no heartbeat
        insert_delivery(s, delivery_id="done-1", event="pull_request", payload=body,
                        status="processed")
    engine.dispose()


def test_pending_deliveries_processed_by_a_new_app(settings, recorder: Recorder, start_relay) -> None:
    _seed(settings)
    relay = start_relay(settings, processor=recorder, report=False)
    recorder.wait_for(2)
    relay.drain()
    assert sorted(d.id for d in recorder.calls) == ["left-1", "left-2"]
    with relay.app.state.session_factory() as s:
        assert get_delivery(s, "left-1").status == "processed"
        assert get_delivery(s, "left-2").status == "processed"


def test_failing_processor_marks_failed_and_keeps_delivery(relay, recorder: Recorder) -> None:
    recorder.fail = RuntimeError("selection exploded")
    assert relay.sender.send("pull_request", pull_request_payload(), delivery_id="f-1").status_code == 202
    relay.drain()
    with relay.app.state.session_factory() as s:
        row = get_delivery(s, "f-1")
    assert row.status == "failed" and row.error == "RuntimeError: selection exploded"
    assert json.loads(row.payload)["number"] == 7
    # the worker survives: the next delivery is processed
    recorder.fail = None
    relay.sender.send("pull_request", pull_request_payload(number=8), delivery_id="f-2")
    relay.drain()
    with relay.app.state.session_factory() as s:
        assert get_delivery(s, "f-2").status == "processed"


def test_submitting_twice_processes_once(settings, recorder: Recorder) -> None:
    app = create_app(settings, processor=recorder, report=False)
    with app.state.session_factory() as s:
        insert_delivery(s, delivery_id="twice", event="push", payload=json.dumps(push_payload()))
    app.state.queue.submit_delivery("twice")
    app.state.queue.submit_delivery("twice")
    assert app.state.queue.join(10)
    app.state.queue.close()
    assert [d.id for d in recorder.calls] == ["twice"]
