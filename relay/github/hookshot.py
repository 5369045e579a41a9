"""Deliver a webhook the way GitHub's Hookshot does: one signed POST per delivery.

Rule source: GitHub docs, "Webhook events and payloads" → "Delivery headers": ``X-GitHub-Event``
(the event name), ``X-GitHub-Delivery`` (a GUID, fresh per delivery, kept on redelivery),
``X-GitHub-Hook-ID``, ``X-Hub-Signature-256`` (``relay.github.signing.sign`` over the exact body
bytes), ``User-Agent: GitHub-Hookshot/<id>`` and ``Content-Type: application/json``.

``relay send-webhook`` and the test suite's fake GitHub both send through ``delivery_headers``,
so what a user tries locally is signed exactly as the relay verifies it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from relay.errors import InputError
from relay.github.signing import HEADER, sign
from relay.retrying import STARTING, Backoff

__all__ = ["EXAMPLE_EVENTS", "Delivered", "delivery_headers", "example_payload", "load_payload",
           "send_delivery"]

#: events with an example payload of ours under ``examples/webhooks/<event>.json``
EXAMPLE_EVENTS = ("push", "pull_request")
_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "webhooks"


@dataclass(frozen=True)
class Delivered:
    """What the relay answered one delivery: HTTP ``status``, the ``delivery_id`` sent and the
    answer's JSON (or its text under ``"text"`` when it is not JSON)."""

    delivery_id: str
    status: int
    answer: dict


def delivery_headers(event: str, body: bytes, secret: str, *, delivery_id: str | None = None,
                     hook_id: str = "424242") -> dict[str, str]:
    """GitHub's delivery headers for ``body`` (bytes as sent): the event, a fresh GUID unless
    ``delivery_id`` is given, the hook id and the HMAC-SHA256 signature with ``secret``."""
    return {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/relay-cli",
            "X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": hook_id, HEADER: sign(body, secret)}


def example_payload(event: str) -> Path:
    """The bundled example payload of ``event``; raises ``InputError`` naming the events that
    have one when ``event`` has none (give ``--payload FILE`` for any other)."""
    path = _EXAMPLES / f"{event}.json"
    if event not in EXAMPLE_EVENTS or not path.is_file():
        raise InputError(f"no example payload for event {event!r} (examples exist for "
                         f"{', '.join(EXAMPLE_EVENTS)}); give one with --payload FILE")
    return path


def load_payload(path: Path) -> bytes:
    """The bytes of the JSON payload at ``path``, checked to parse as a JSON object; raises
    ``InputError`` with ``file:line:col`` when it does not (GitHub only sends objects)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise InputError(f"{path}:1:1: a webhook payload is a JSON object, not {type(parsed).__name__}")
    return text.encode("utf-8")


def send_delivery(url: str, event: str, body: bytes, secret: str, *,
                  timeout_s: float = 30.0, connect: Backoff = STARTING) -> Delivered:
    """POST ``body`` to the relay's webhook ``url`` as GitHub would (``delivery_headers``), the
    same delivery id on every try.  A refused connection is tried again under ``connect``
    (a relay started a moment ago in the background: ~20 s); raises ``httpx.HTTPError`` when
    the relay still cannot be reached.  Any HTTP answer is returned."""
    import httpx

    headers = delivery_headers(event, body, secret)
    retrying = connect.retrying(lambda exc: isinstance(exc, httpx.ConnectError))
    response = retrying(httpx.post, url, content=body, headers=headers, timeout=timeout_s)
    try:
        answer = response.json()
    except ValueError:
        answer = {"text": response.text[:500]}
    if not isinstance(answer, dict):
        answer = {"answer": answer}
    return Delivered(headers["X-GitHub-Delivery"], response.status_code, answer)
