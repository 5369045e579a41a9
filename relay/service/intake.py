"""``POST /webhooks/github``: verify, record, acknowledge — nothing else (design §5).

Order of checks (GitHub docs, "Best practices for using webhooks" and "Validating webhook
deliveries"; Zuul's ``GithubWebController.payload``):

1. body size: ``Content-Length`` and the bytes received, over 25 MB → 413 (GitHub caps
   payloads at 25 MB); a non-numeric ``Content-Length`` → 400;
2. ``X-Hub-Signature-256`` over the raw body → 400 missing, 401 malformed or wrong (CRCR);
3. ``X-GitHub-Event`` / ``X-GitHub-Delivery`` present → else 400; body is a JSON object →
   else 400;
4. insert the delivery (UNIQUE ``delivery_id``) and commit (``relay.service.writer``: group
   commit); an existing id → 200 ``{"status": "duplicate"}``, and so is a byte-identical body
   under a new id within a day (``relay.store.digests``; logged); the database failing → 503;
5. answer: ``ping`` → 200 ``{"status": "pong"}``; deliveries the relay does not act on
   (``relay.github.webhooks.ignored_reason``: another repository than ``RELAY_UPSTREAM_REPO``,
   or an event/action/label CRCR does not act on) → 200 ``{"status": "ignored", "reason": ...}``
   (stored as ``ignored`` with that reason as its error text); otherwise hand the id to the task queue and → 202
   ``{"status": "accepted", "delivery_id": ...}``.  Other methods on the path → 405.

GitHub counts a response slower than 10 s as failed, so all work happens after the answer.

Served by ``WebhookIntake``, a pure-ASGI handler that ``RelayApp`` (the FastAPI application
class of the relay) calls for this one path before any middleware, rather than a FastAPI route:
on the bench machine FastAPI's routing/request machinery alone caps a POST route at ~350–470
req/s against ~1,600 for a raw ASGI app (``bench/intake.py``), and this is the one hot path.
Every other route stays in FastAPI.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from fastapi import FastAPI

from relay.errors import SignatureError
from relay.github import signing
from relay.github.webhooks import ignored_reason, intake_status, pr_subject
from relay.service.body import BodyRefused, read_body
from relay.service.jsonbody import parse_json_body
from relay.service.metrics import event_label
from relay.service.state import RelayState
from relay.store.digests import body_digest

__all__ = ["WebhookIntake", "RelayApp", "WEBHOOK_BODY_CAP", "WEBHOOK_PATH"]

log = logging.getLogger(__name__)

WEBHOOK_BODY_CAP = 25 * 1024 * 1024  # bytes; GitHub caps webhook payloads at 25 MB
WEBHOOK_PATH = "/webhooks/github"
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,100}")
_HOOK_ID = re.compile(r"[0-9]{1,20}")
#: a JSON ``\u0000`` escape (an odd run of backslashes before ``u0000``: ``\\u0000`` is text)
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


async def _respond(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class WebhookIntake:
    """The ASGI handler of ``POST /webhooks/github`` (an HTTP scope with that path).
    ``state`` is the app's ``RelayState`` (webhook secret, writer, queue, metrics; read at each
    request, so a replaced queue takes effect).  An unexpected error is logged and answered 500
    ``{"detail": ...}`` (JSON, like every other route), before or without storing the delivery."""

    def __init__(self, state: RelayState) -> None:
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        event = headers.get("x-github-event")
        if scope["method"] != "POST":
            await _respond(send, 405, {"detail": "method not allowed; GitHub POSTs deliveries"})
            return
        try:
            status, answer = await self._accept(receive, headers, event)
        except BodyRefused as exc:
            self.state.metrics.deliveries.labels(event_label(event), "rejected").inc()
            status, answer = exc.status, {"detail": exc.detail}
        except Exception:  # noqa: BLE001 - a bug here must still answer in JSON
            log.exception("webhook intake failed")
            status, answer = 500, {"detail": "internal server error"}
        await _respond(send, status, answer)


    async def _accept(self, receive: Any, headers: dict[str, str], event: str | None
                      ) -> tuple[int, dict[str, Any]]:
        state = self.state
        body = await read_body(receive, headers.get("content-length"), WEBHOOK_BODY_CAP)
        try:
            signing.verify(body, state.webhook_secret, headers.get("x-hub-signature-256"))
        except SignatureError as exc:
            raise BodyRefused(exc.status_code, str(exc)) from None
        delivery_id = headers.get("x-github-delivery")
        if not event or not _NAME.fullmatch(event):
            raise BodyRefused(400, "missing or invalid X-GitHub-Event header")
        if not delivery_id or not _NAME.fullmatch(delivery_id):
            raise BodyRefused(400, "missing or invalid X-GitHub-Delivery header")
        try:
            payload, text = parse_json_body(body)
        except ValueError as exc:
            raise BodyRefused(400, str(exc)) from None
        if not isinstance(payload, dict):
            raise BodyRefused(400, "body must be a JSON object")
        if _NUL_ESCAPE.search(text):  # GitHub never sends one; PostgreSQL text cannot hold it
            raise BodyRefused(400, "body contains a NUL character (\\u0000)")

        hook_id = headers.get("x-github-hook-id")
        if hook_id is not None and not _HOOK_ID.fullmatch(hook_id):
            raise BodyRefused(400, "invalid X-GitHub-Hook-ID header (GitHub sends a number)")
        action = payload.get("action")
        # GitHub's actions are short snake_case words; anything else is no action we handle
        # (and must not reach a column: NUL bytes, 10 KB strings)
        action = action if isinstance(action, str) and _NAME.fullmatch(action) else None
        status = intake_status(event, payload, state.settings.upstream_repo)
        reason = (ignored_reason(event, payload, state.settings.upstream_repo)
                  if status == "ignored" else None)
        if reason is not None:  # it quotes the payload's action: no NUL (PostgreSQL), no 10 KB
            reason = reason.replace("\x00", "")[:300]

        subject, head_sha = pr_subject(event, payload)  # a newer head supersedes this one's run
        try:
            inserted = await state.writer.insert(
                delivery_id=delivery_id, event=event, action=action,
                hook_id=hook_id, payload=text,
                status=status, error=reason, digest=body_digest(body),
                subject=subject, head_sha=head_sha)
        except Exception as exc:  # noqa: BLE001 - not stored: GitHub must see a failure
            raise BodyRefused(503, f"delivery not stored: {type(exc).__name__}") from None
        counter = state.metrics.deliveries
        if not inserted:
            counter.labels(event_label(event), "duplicate").inc()
            return 200, {"status": "duplicate", "delivery_id": delivery_id}
        if event == "ping":
            counter.labels("ping", "pong").inc()
            return 200, {"status": "pong", "delivery_id": delivery_id}
        if status == "ignored":
            counter.labels(event_label(event), "ignored").inc()
            return 200, {"status": "ignored", "delivery_id": delivery_id, "reason": reason}
        state.queue.submit_delivery(delivery_id)
        counter.labels(event_label(event), "accepted").inc()
        return 202, {"status": "accepted", "delivery_id": delivery_id}


class RelayApp(FastAPI):
    """The relay's FastAPI application, built with its ``RelayState`` in one step: ``state`` is
    that object (Starlette only ever assigns ``app.state``, so routes read it typed through
    ``relay.service.deps.StateDep``); with ``webhooks``, ``POST /webhooks/github`` goes straight
    to the ``WebhookIntake``, ahead of Starlette's middleware stack; every other request is
    FastAPI's.  ``fastapi_options`` are ``FastAPI``'s (title, lifespan, ...)."""

    def __init__(self, state: RelayState, *, webhooks: bool, **fastapi_options: Any) -> None:
        super().__init__(**fastapi_options)
        self.state: RelayState = state  # type: ignore[assignment]  # replaces Starlette's bag
        self.intake = WebhookIntake(state) if webhooks else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.intake is not None and scope["type"] == "http" and scope["path"] == WEBHOOK_PATH:
            await self.intake(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
