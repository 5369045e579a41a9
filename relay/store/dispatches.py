"""Dispatch records (one per delivery × downstream repo) and the PR labels seen upstream.

``ensure_dispatch`` inserts the ``pending`` row *before* the GitHub call (the UNIQUE
(delivery_id, repo) makes a re-run find the existing row instead of inserting a second one);
``mark_dispatch`` records the outcome.  Each function commits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.tables import DispatchRecord, PrLabelRecord, utcnow

__all__ = ["ensure_dispatch", "mark_dispatch", "get_dispatch", "record_labels", "pr_labels",
           "list_dispatches", "fail_pending_dispatches"]


def ensure_dispatch(session: Session, **fields: Any) -> DispatchRecord:
    """The dispatch row for (``delivery_id``, ``repo``), inserted as ``pending`` with
    ``fields`` when new (committed before returning)."""
    session.add(DispatchRecord(**fields))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
    row = get_dispatch(session, fields["delivery_id"], fields["repo"])
    assert row is not None
    return row


def get_dispatch(session: Session, delivery_id: str, repo: str) -> DispatchRecord | None:
    return session.scalar(select(DispatchRecord).where(DispatchRecord.delivery_id == delivery_id,
                                                       DispatchRecord.repo == repo))


def mark_dispatch(session: Session, dispatch_id: int, status: str, *, error: str | None = None,
                  payload_bytes: int | None = None, trimmed_from: int | None = None) -> None:
    """Set ``status`` (``sent`` stamps ``sent_at``), bump ``attempts``, record sizes; commit."""
    values: dict[str, Any] = {"status": status, "error": error,
                              "attempts": DispatchRecord.attempts + 1}
    if status == "sent":
        values["sent_at"] = utcnow()
    if payload_bytes is not None:
        values["payload_bytes"] = payload_bytes
    if trimmed_from is not None:
        values["trimmed_from"] = trimmed_from
    session.execute(update(DispatchRecord).where(DispatchRecord.id == dispatch_id).values(**values))
    session.commit()


def fail_pending_dispatches(session: Session, delivery_id: str, error: str) -> int:
    """Mark the delivery's rows still ``pending`` ``failed`` with ``error`` (its delivery reached
    a final state, so nothing will send them); no commit.  Returns how many."""
    table = DispatchRecord.__table__  # a Core UPDATE: no ORM bulk-update machinery per delivery
    result = session.execute(update(table)
                             .where(table.c.delivery_id == delivery_id, table.c.status == "pending")
                             .values(status="failed", error=error[:2000]))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def list_dispatches(session: Session, delivery_id: str | None = None) -> list[DispatchRecord]:
    stmt = select(DispatchRecord).order_by(DispatchRecord.id)
    if delivery_id is not None:
        stmt = stmt.where(DispatchRecord.delivery_id == delivery_id)
    return list(session.scalars(stmt))


def record_labels(session: Session, upstream: str, pr_number: int, labels: list[str]) -> None:
    """Remember ``labels`` on ``upstream#pr_number`` (idempotent); commits."""
    for label in labels:
        session.add(PrLabelRecord(upstream=upstream, pr_number=pr_number, label=label[:200]))
        try:
            session.commit()
        except IntegrityError:
            session.rollback()


def pr_labels(session: Session, upstream: str, pr_number: int) -> set[str]:
    return set(session.scalars(select(PrLabelRecord.label).where(
        PrLabelRecord.upstream == upstream, PrLabelRecord.pr_number == pr_number)))
