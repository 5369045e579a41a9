"""Sending HUD bodies to the dashboard: remote over HTTP, or in-process straight into the store.

``make_sender(settings, session_factory)`` gives ``send(body_bytes) -> httpx.Response``, one POST
without retries (the outbox and ``post_results`` retry):

* ``RELAY_DASHBOARD_URL`` set: ``POST {url}/api/crcr/results`` with the results token
  (``Settings.results_token``) in CRCR's ``x-hud-internal-bot`` header (HUD's API-token header,
  test-infra PR #8143; HUD compares its value with its internal API token);
* unset: the dashboard is this relay.  The body is validated and stored exactly as the ingest
  route would (``relay.reporting.ingest``) and the route's answer is returned (201 stored,
  200 duplicate, 400 not JSON, 422 wrong shape) — no app is built, no socket opened.

``post_results(run, settings, ...)`` builds a run's body and sends it under the one retry
policy (``relay.retrying.HTTP``: 5xx and transport errors 3 more times after 1, 2, 4 s; CRCR's
rule), raising ``HudPostError`` when it is refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import httpx
from pydantic import ValidationError
from sqlalchemy.orm import Session
from tenacity.wait import wait_base

from relay.domain.run import Run
from relay.errors import HudBodyTooLarge, HudPostError
from relay.logs import delivery_log
from relay.reporting.body import build_hud_body
from relay.reporting.ingest import ingest_body, validation_errors
from relay.reporting.models import HUD_BODY_CAP, HudBody
from relay.retrying import HTTP
from relay.settings import Settings
from relay.store.db import create_schema, make_engine, make_session_factory

__all__ = ["Send", "make_sender", "post_results", "RESULTS_PATH"]

log = logging.getLogger(__name__)

RESULTS_PATH = "/api/crcr/results"
#: ``send(body_bytes)`` → the dashboard's answer (one try)
Send = Callable[[bytes], httpx.Response]


class _Retryable(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"dashboard answered {response.status_code}")
        self.response = response


def _in_process(session_factory: Callable[[], Session]) -> Send:
    """A sender that stores into this relay's database as the ingest route does."""
    def send(data: bytes) -> httpx.Response:
        try:
            body = HudBody.model_validate(json.loads(data))
        except ValueError as exc:
            if isinstance(exc, ValidationError):
                return httpx.Response(422, json={"detail": validation_errors(exc)})
            return httpx.Response(400, json={"detail": f"invalid JSON: {exc}"})
        with session_factory() as session:
            new = ingest_body(session, body, json.loads(data))
        return httpx.Response(201 if new else 200, json={"status": "stored" if new else "duplicate"})

    return send


def make_sender(settings: Settings, session_factory: Callable[[], Session] | None = None, *,
                transport: httpx.BaseTransport | None = None) -> tuple[Send, Callable[[], None], str]:
    """``(send, close, where)`` for the configured dashboard (see the module docstring).
    ``session_factory``: this relay's database for the in-process dashboard (default: one opened
    on ``RELAY_DATABASE_URL`` and closed by ``close``); ``transport`` lets tests plug in
    ``httpx.MockTransport``."""
    if not settings.dashboard_url:
        if session_factory is not None:
            return _in_process(session_factory), lambda: None, "in-process" + RESULTS_PATH
        engine = make_engine(settings.database_url)
        create_schema(engine)
        return _in_process(make_session_factory(engine)), engine.dispose, "in-process" + RESULTS_PATH
    headers = {"Content-Type": "application/json", "User-Agent": "spyre-relay"}
    token = settings.results_token()
    if token is not None:
        headers["x-hud-internal-bot"] = token
    url = settings.dashboard_url + RESULTS_PATH
    client = httpx.Client(timeout=30.0, transport=transport, headers=headers)
    return (lambda body: client.post(url, content=body)), client.close, url


def _body_bytes(run: Run, settings: Settings, *, level: str, event_type: str | None,
                queue_ms: float | None) -> bytes:
    body = build_hud_body(run, settings, level=level, event_type=event_type, queue_ms=queue_ms)
    data = json.dumps(body.model_dump(mode="json"), separators=(",", ":")).encode("utf-8")
    if len(data) > HUD_BODY_CAP:
        raise HudBodyTooLarge(f"HUD body is {len(data)} bytes, cap {HUD_BODY_CAP}")
    return data


def post_results(run: Run, settings: Settings, *, session_factory: Callable[[], Session] | None = None,
                 level: str = "L1", event_type: str | None = None, queue_ms: float | None = None,
                 wait: wait_base | None = None, transport: httpx.BaseTransport | None = None) -> None:
    """Post ``run``'s HUD body (``build_hud_body``) to the dashboard.

    Raises ``HudBodyTooLarge`` (> 2 MB) or ``HudPostError`` (4xx, or 5xx / unreachable after
    the retries).
    """
    data = _body_bytes(run, settings, level=level, event_type=event_type, queue_ms=queue_ms)
    send, close, url = make_sender(settings, session_factory, transport=transport)

    def once() -> httpx.Response:
        resp = send(data)
        if resp.status_code >= 500:
            raise _Retryable(resp)
        return resp

    try:
        for attempt in HTTP.retrying(lambda e: isinstance(e, (_Retryable, httpx.TransportError)),
                                     wait=wait):
            with attempt:
                resp = once()
    except _Retryable as exc:
        raise HudPostError(exc.response.status_code, url, exc.response.text) from None
    except httpx.TransportError as exc:
        raise HudPostError(0, url, f"{type(exc).__name__}: {exc}") from None
    finally:
        close()
    if resp.status_code >= 400:
        raise HudPostError(resp.status_code, url, resp.text)
    delivery_log(log, run.delivery_id).info("posted results of run %s to %s (%d bytes)", run.id,
                                            url, len(data))
