"""Leases on claimed deliveries: a delivery ``processing`` belongs to whoever renews its lease.

A claim (``claim_many``, ``claim_delivery``) sets ``deliveries.lease_until`` to now + the lease
(``RELAY_LEASE_S``, 30 s by default); the attempt working on it renews the lease every third of
that while it works (``relay.worker.lease.Heartbeat``).  So "is anyone still working on this?"
has an answer that does not depend on the broker or on which process asks:

* a lease in the future: a live attempt holds it — the Celery task the broker handed out again
  after ``RELAY_VISIBILITY_TIMEOUT_S`` waits instead of running the delivery a second time, and
  another relay process's recovery leaves it alone;
* a lease in the past: the attempt died (kill -9, the machine gone) — recovery resets it;
* no lease (``NULL``) on a ``processing`` row: its planning attempt handed the rest to a Celery
  chord (``release``), which ends it; rows claimed before revision 0016 have none either.

Times are UTC; every function commits.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from relay.store.tables import DeliveryRecord, utcnow

__all__ = ["DEFAULT_LEASE_S", "renew", "release", "lease_of", "expired_processing_ids"]

#: seconds a claim or a renewal holds a delivery (``RELAY_LEASE_S``)
DEFAULT_LEASE_S = 30.0
_T = DeliveryRecord.__table__


def renew(session: Session, ids: list[str], lease_s: float, now: datetime | None = None) -> int:
    """Extend the lease of the ``ids`` still ``processing`` to ``now + lease_s``; returns how
    many rows were renewed."""
    if not ids:
        return 0
    until = (now or utcnow()) + timedelta(seconds=lease_s)
    result = session.execute(update(_T).where(_T.c.delivery_id.in_(ids), _T.c.status == "processing")
                             .values(lease_until=until))
    session.commit()
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def release(session: Session, delivery_id: str) -> None:
    """Clear the lease of a ``processing`` delivery whose work continues elsewhere (a chord)."""
    session.execute(update(_T).where(_T.c.delivery_id == delivery_id, _T.c.status == "processing")
                    .values(lease_until=None))
    session.commit()


def lease_of(session: Session, delivery_id: str) -> tuple[str, datetime | None] | None:
    """``(status, lease_until)`` of a delivery, or ``None`` when unknown."""
    row = session.execute(select(_T.c.status, _T.c.lease_until)
                          .where(_T.c.delivery_id == delivery_id)).first()
    if row is None:
        return None
    until = row.lease_until
    if until is not None and until.tzinfo is None:  # SQLite returns naive UTC
        until = until.replace(tzinfo=utcnow().tzinfo)
    return row.status, until


def expired_processing_ids(session: Session, now: datetime | None = None) -> list[str]:
    """Ids ``processing`` whose lease has run out or who have none: nobody renews them."""
    return list(session.scalars(select(_T.c.delivery_id).where(
        _T.c.status == "processing",
        or_(_T.c.lease_until.is_(None), _T.c.lease_until < (now or utcnow())))))
