"""Dedup by body: a byte-identical signed body under a new delivery id within a day.

GitHub keeps ``X-GitHub-Delivery`` when it redelivers, so the UNIQUE delivery id catches its
redeliveries (``relay.store.deliveries``).  The same signed bytes arriving under *another* id —
a proxy or load balancer replaying a request, a second hook on the same repository, a
hand-made redelivery — would run everything twice (dispatches, check runs, a test run).
``claim_digest`` records the body's SHA-256 in the intake's transaction: the first holder
keeps it for ``DIGEST_WINDOW`` (one day); a second id inside the window is a duplicate.

Race-free across threads and relay processes: one ``INSERT … ON CONFLICT (digest) DO UPDATE
… WHERE received_at < cutoff RETURNING`` on SQLite (≥ 3.35) and PostgreSQL alike; a row comes
back only when this delivery now holds the digest.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from relay.store.tables import DeliveryDigestRecord

__all__ = ["DIGEST_WINDOW", "body_digest", "claim_digest"]

#: how long a body's first delivery id holds it
DIGEST_WINDOW = timedelta(days=1)
_D = DeliveryDigestRecord.__table__


def body_digest(raw: bytes) -> str:
    """SHA-256 of the raw request body (the bytes the signature covers), 64 hex digits."""
    return hashlib.sha256(raw).hexdigest()


def claim_digest(session: Session | Connection, digest: str, delivery_id: str,
                 now: datetime) -> str | None:
    """Make ``delivery_id`` the holder of ``digest`` (in the caller's transaction, which commits
    it).  ``None`` when it now holds it (a new body, or the previous holder is older than
    ``DIGEST_WINDOW``, or the holder is this same id — a plain redelivery, which the delivery
    id's UNIQUE constraint reports); else the id of the delivery that brought the same bytes
    within the window."""
    dialect = (session.get_bind() if isinstance(session, Session) else session).dialect.name
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = make(_D).values(digest=digest, delivery_id=delivery_id, received_at=now)
    stmt = stmt.on_conflict_do_update(
        index_elements=[_D.c.digest],
        set_={"delivery_id": stmt.excluded.delivery_id, "received_at": stmt.excluded.received_at},
        where=(_D.c.received_at < now - DIGEST_WINDOW) | (_D.c.delivery_id == delivery_id),
    ).returning(_D.c.delivery_id)
    if session.execute(stmt).first() is not None:
        return None
    return session.scalar(select(_D.c.delivery_id).where(_D.c.digest == digest))
