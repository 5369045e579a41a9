"""The HUD report of a webhook run, written as an outbox row in the run's own transaction
(the relay's deliverer, ``relay.crcr.outbox``, sends it)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from relay.domain.delivery import Delivery
from relay.domain.run import Run
from relay.reporting.body import build_hud_body
from relay.settings import Settings
from relay.store.outbox import enqueue

__all__ = ["enqueue_result", "REPORTED_LEVELS"]

#: Levels whose results go to the dashboard (CRCR: L1 is dispatch only).
REPORTED_LEVELS = ("L2", "L3", "L4")


def enqueue_result(session: Session, run: Run, delivery: Delivery, settings: Settings,
                   level: str | None) -> bool:
    """Write ``run``'s HUD body as an outbox row in ``session``'s transaction (the caller
    commits it with the run) when the local backend's ``level`` reports to the dashboard
    (L2–L4, as CRCR); ``queue_ms`` is the delivery's wait from acceptance to the run's start.
    Returns whether a row was written."""
    if level not in REPORTED_LEVELS:
        return False
    queue_ms = max(0.0, (run.started_at - delivery.received_at).total_seconds() * 1000.0)
    body = build_hud_body(run, settings, level=level, event_type=delivery.event, queue_ms=queue_ms)
    enqueue(session, "hud", body.model_dump(mode="json"))
    return True
