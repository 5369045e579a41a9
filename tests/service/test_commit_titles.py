"""One title per commit: a push's run is titled by its head commit's message (first line), the
same title the grid shows for the delivery while it is in flight (``relay.github.events``,
``relay.service.queries.grid.delivery_head``); ``push to <ref>`` only without a message."""

from __future__ import annotations

import json
from pathlib import Path

from relay.github.events import commit_title, parse_event, push_changeset
from relay.service.queries.grid import delivery_head

PUSH = Path(__file__).resolve().parents[2] / "examples" / "webhooks" / "push.json"


def test_a_push_run_and_its_in_flight_row_have_the_commit_title() -> None:
    text = PUSH.read_text()
    title = "[softmax] Keep the max-subtraction in fp32 for half inputs"
    assert push_changeset(parse_event("push", json.loads(text))).title == title
    assert delivery_head("push", text)["title"] == title


def test_without_a_message_both_say_push_to_the_ref() -> None:
    payload = {**json.loads(PUSH.read_text()), "head_commit": None}
    assert push_changeset(parse_event("push", payload)).title == "push to refs/heads/main"
    assert delivery_head("push", json.dumps(payload))["title"] == "push to refs/heads/main"


def test_commit_title_is_the_first_non_blank_line() -> None:
    assert commit_title("\n  Fix softmax  \n\nbody") == "Fix softmax" and commit_title("") == ""
