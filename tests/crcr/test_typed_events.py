"""Issue 26: one typed event per GitHub event, parsed once at the edge, and one handler table.

Every event the relay acts on has a typed model and exactly one ``HANDLERS`` entry; a parsed
delivery keeps the verbatim payload (what CRCR sends downstream) beside its typed event; the
fan-out facts, label checks and re-run targets are read from the typed event."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from relay.crcr.allowlist import parse_allowlist
from relay.crcr.fanout import ChangeFacts, change_facts
from relay.crcr.reruns import crcr_target
from relay.domain.delivery import Delivery
from relay.errors import PayloadInvalid
from relay.github.constants import HANDLED_EVENTS, ZERO_SHA
from relay.github.events import (
    EVENT_MODELS,
    CheckRun,
    CheckSuiteEvent,
    PullRequestEvent,
    PushEvent,
    parse_delivery,
    parse_event,
)
from relay.worker.handlers import HANDLERS
from tests.fakes.fixtures import fixture_dir, fixture_names
from tests.fakes.github import pull_request_payload, push_payload


def _delivery(event: str, payload: dict) -> Delivery:
    return Delivery(id="d-1", event=event, received_at=datetime.now(UTC), payload=payload)


def test_one_model_and_one_handler_entry_per_handled_event() -> None:
    assert set(EVENT_MODELS) == set(HANDLERS) == HANDLED_EVENTS
    # what runs locally and what re-runs downstream never share an entry
    assert not [name for name, h in HANDLERS.items() if h.rerun is not None and h.run is not None]
    assert {name for name, h in HANDLERS.items() if h.fanout is not None} == {"pull_request", "push"}


@pytest.mark.parametrize("name", fixture_names("github-webhooks", "*.json"))
def test_every_real_payload_parses_into_its_own_model(name: str) -> None:
    event = name.split(".", 1)[0]
    payload = json.loads((fixture_dir("github-webhooks") / name).read_bytes())
    delivery = _delivery(event, payload)
    parsed = parse_delivery(delivery)
    assert type(parsed.typed) is EVENT_MODELS[event]
    assert parsed.payload is delivery.payload  # verbatim: never the typed model re-serialised
    assert parsed.payload == payload and parsed.id == delivery.id


def test_a_payload_of_the_wrong_shape_names_its_fields() -> None:
    bad = {**pull_request_payload(), "number": 10**30}
    del bad["pull_request"]["head"]
    with pytest.raises(PayloadInvalid) as raised:
        parse_event("pull_request", bad)
    message = str(raised.value)
    assert message.startswith("pull_request payload: ")
    assert "number: " in message and "pull_request.head: Field required" in message
    assert parse_event("membership", {"anything": 1}) is None  # no typed view, no problem


def test_change_facts_come_from_the_typed_event() -> None:
    pr = PullRequestEvent.model_validate(pull_request_payload(number=12, labels=("ciflow/crcr/spyre",)))
    assert change_facts(pr) == ChangeFacts("pytorch/pytorch", "a" * 40, 12, ("ciflow/crcr/spyre",))
    trunk = PushEvent.model_validate(push_payload(after="e" * 40) | {"ref": "refs/tags/ciflow/trunk/66"})
    assert change_facts(trunk) == ChangeFacts("pytorch/pytorch", "e" * 40, 66)
    for ref in ("refs/heads/main", "refs/tags/ciflow/trunk/x1", f"refs/tags/ciflow/trunk/{2**31}",
                "refs/tags/ciflow/trunk/\u00b2"):
        assert change_facts(PushEvent.model_validate(push_payload() | {"ref": ref})).pr_number is None
    deleted = PushEvent.model_validate(push_payload(after=ZERO_SHA))
    assert change_facts(deleted).head_sha is None


def test_check_fields_are_read_as_leniently_as_crcr_reads_them() -> None:
    allowlist = parse_allowlist({"L4": ["acme/l4-ci"], "L2": ["acme/l2-ci"]})
    assert crcr_target(CheckRun(name="crcr/acme/l4-ci/CI/t", external_id="77:9"), allowlist) == ("acme/l4-ci", 77)
    assert crcr_target(CheckRun.model_validate({"name": "crcr/acme/l4-ci/CI/t", "external_id": 88}),
                       allowlist) == ("acme/l4-ci", 88)
    assert crcr_target(CheckRun.model_validate({"name": None, "external_id": None}), allowlist) is None
    assert crcr_target(CheckRun(name="crcr/acme/l2-ci/CI/t", external_id="5"), allowlist) is None
    suite = {"action": "rerequested", "repository": {"full_name": "pytorch/pytorch"}}
    for value in (True, "9001", None):
        assert CheckSuiteEvent.model_validate(suite | {"check_suite": {"id": value}}).check_suite.id is None
    assert CheckSuiteEvent.model_validate(suite | {"check_suite": {"id": 9001}}).check_suite.id == 9001
    assert PushEvent.model_validate(push_payload() | {"forced": "yes"}).forced is True
