"""``POST /webhooks/github``: verify, record, acknowledge — nothing else (design §5).

Order of checks (GitHub docs, "Best practices for using webhooks" and "Validating webhook
deliveries"; Zuul's ``GithubWebController.payload``):

1. body size: ``Content-Length`` and the bytes received, over 25 MB → 413 (GitHub caps
   payloads at 25 MB);
2. ``X-Hub-Signature-256`` over the raw body → 400 missing/malformed, 401 wrong;
3. ``X-GitHub-Event`` / ``X-GitHub-Delivery`` present → else 400; body is a JSON object →
   else 400;
4. insert the delivery (UNIQUE ``delivery_id``) and commit; an existing id → 200
   ``{"status": "duplicate"}``;
5. answer: ``ping`` → 200 ``{"status": "pong"}``; events the relay does not handle → 200
   ``{"status": "ignored"}`` (stored as ``ignored``); otherwise hand the id to the task queue
   and → 202 ``{"status": "accepted", "delivery_id": ...}``.

GitHub counts a response slower than 10 s as failed, so all work happens after the answer.
"""

from __future__ import annotations

import json
import re

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from relay.app.body import read_capped
from relay.app.metrics import event_label
from relay.errors import SignatureError
from relay.github import signing
from relay.github.webhooks import HANDLED_EVENTS
from relay.store import insert_delivery

__all__ = ["router", "WEBHOOK_BODY_CAP"]

WEBHOOK_BODY_CAP = 25 * 1024 * 1024  # bytes; GitHub caps webhook payloads at 25 MB
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,100}")

router = APIRouter()


def _reject(request: Request, status: int, detail: str, event: str | None = None) -> JSONResponse:
    request.app.state.metrics.deliveries.labels(event_label(event), "rejected").inc()
    return JSONResponse({"detail": detail}, status_code=status)


@router.post("/webhooks/github", status_code=202)
async def github_webhook(request: Request) -> JSONResponse:
    """Accept one GitHub delivery; see the module docstring for the answers."""
    state = request.app.state
    headers = request.headers
    event = headers.get("x-github-event")
    try:
        body = await read_capped(request, WEBHOOK_BODY_CAP)
    except HTTPException as exc:
        return _reject(request, exc.status_code, str(exc.detail), event)
    try:
        signing.verify(body, state.webhook_secret, headers.get("x-hub-signature-256"))
    except SignatureError as exc:
        return _reject(request, exc.status_code, str(exc), event)

    delivery_id = headers.get("x-github-delivery")
    if not event or not _NAME.fullmatch(event):
        return _reject(request, 400, "missing or invalid X-GitHub-Event header")
    if not delivery_id or not _NAME.fullmatch(delivery_id):
        return _reject(request, 400, "missing or invalid X-GitHub-Delivery header", event)
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _reject(request, 400, f"body is not valid JSON: {exc}", event)
    if not isinstance(payload, dict):
        return _reject(request, 400, "body must be a JSON object", event)

    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    if event == "ping":
        status = "processed"
    elif event in HANDLED_EVENTS:
        status = "received"
    else:
        status = "ignored"

    def _insert() -> bool:
        with state.session_factory() as session:
            return insert_delivery(session, delivery_id=delivery_id, event=event,
                                   action=(action or "")[:100] or None,
                                   hook_id=headers.get("x-github-hook-id"),
                                   payload=body.decode("utf-8"), status=status)

    inserted = await run_in_threadpool(_insert)
    counter = state.metrics.deliveries
    if not inserted:
        counter.labels(event_label(event), "duplicate").inc()
        return JSONResponse({"status": "duplicate", "delivery_id": delivery_id}, status_code=200)
    if event == "ping":
        counter.labels("ping", "pong").inc()
        return JSONResponse({"status": "pong", "delivery_id": delivery_id}, status_code=200)
    if status == "ignored":
        counter.labels(event_label(event), "ignored").inc()
        return JSONResponse({"status": "ignored", "delivery_id": delivery_id}, status_code=200)
    state.queue.submit_delivery(delivery_id)
    counter.labels(event_label(event), "accepted").inc()
    return JSONResponse({"status": "accepted", "delivery_id": delivery_id}, status_code=202)
