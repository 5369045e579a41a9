"""The outbox: messages written in the same transaction as the result they report.

``enqueue`` adds a row to the caller's session (no commit — the caller commits it together
with the result).  The deliverer calls ``due`` (pending rows whose ``next_attempt_at`` has
passed, oldest first), then ``delivered`` / ``retry_later`` / ``dead`` per row; each commits.
Kinds: ``hud`` (a HUD results body), ``check`` and ``comment`` (``{"job_id": n}``: sync
the job's check run / failing-repo PR comment).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from relay.retrying import Backoff
from relay.store.tables import OutboxRecord, utcnow

__all__ = ["enqueue", "due", "delivered", "retry_later", "dead", "outbox_counts",
           "OUTBOX_KINDS"]

OUTBOX_KINDS = ("hud", "check", "comment")


def enqueue(session: Session, kind: str, body: dict[str, Any]) -> OutboxRecord:
    """Add a ``pending`` message (flushed, not committed)."""
    if kind not in OUTBOX_KINDS:
        raise ValueError(f"unknown outbox kind {kind!r}")
    row = OutboxRecord(kind=kind, body=body, status="pending", next_attempt_at=utcnow())
    session.add(row)
    session.flush()
    return row


def due(session: Session, now: datetime | None = None, limit: int = 50) -> list[OutboxRecord]:
    """Pending rows to try now, FIFO per kind: the oldest pending rows of each kind, stopping
    at the first one still waiting for its ``next_attempt_at`` (so a message is never
    overtaken by a newer one of its kind — a HUD ``in_progress`` must not land after its
    ``completed``)."""
    now = now or utcnow()
    rows = session.scalars(select(OutboxRecord).where(OutboxRecord.status == "pending")
                           .order_by(OutboxRecord.id).limit(limit * 4))
    out: list[OutboxRecord] = []
    blocked: set[str] = set()
    for row in rows:
        at = row.next_attempt_at
        if at.tzinfo is None:
            at = at.replace(tzinfo=now.tzinfo)
        if row.kind in blocked:
            continue
        if at > now:
            blocked.add(row.kind)
            continue
        out.append(row)
        if len(out) >= limit:
            break
    return out


def delivered(session: Session, row_id: int) -> None:
    session.execute(update(OutboxRecord).where(OutboxRecord.id == row_id)
                    .values(status="delivered", delivered_at=utcnow(),
                            attempts=OutboxRecord.attempts + 1, last_error=None))
    session.commit()


def retry_later(session: Session, row: OutboxRecord, error: str, backoff: Backoff) -> float:
    """Schedule the next attempt after ``backoff.delay(failures)`` seconds; returns the delay."""
    delay = backoff.delay(row.attempts + 1)
    session.execute(update(OutboxRecord).where(OutboxRecord.id == row.id)
                    .values(attempts=OutboxRecord.attempts + 1, last_error=error[:2000],
                            next_attempt_at=utcnow() + timedelta(seconds=delay)))
    session.commit()
    return delay


def dead(session: Session, row_id: int, error: str) -> None:
    session.execute(update(OutboxRecord).where(OutboxRecord.id == row_id)
                    .values(status="dead", last_error=error[:2000],
                            attempts=OutboxRecord.attempts + 1))
    session.commit()


def outbox_counts(session: Session) -> dict[str, int]:
    rows = session.execute(select(OutboxRecord.status, func.count()).group_by(OutboxRecord.status))
    return {status: int(n) for status, n in rows}
