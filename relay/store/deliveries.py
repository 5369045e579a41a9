"""Webhook deliveries: insert-once (dedup by the UNIQUE ``delivery_id``), claim, mark, recover.

Lifecycle: ``received`` → ``processing`` → ``processed`` | ``failed``; events the relay does not
handle are stored directly as ``ignored``.  GitHub reuses ``X-GitHub-Delivery`` on redelivery,
so the UNIQUE constraint is the dedup: a second insert raises ``IntegrityError`` and is reported
as a duplicate (this is race-free across threads and processes).

The per-delivery statements (insert, claim, load, mark) are Core statements on the table, not
ORM unit-of-work operations: they run once or twice per webhook and the ORM path costs about
3× as much (≈3 ms vs ≈1 ms per insert of a 25 KB body on the bench machine).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload

from relay.domain.delivery import Delivery
from relay.domain.jsonlimits import depth_error, quick_bound, too_deep
from relay.errors import PayloadInvalid
from relay.retrying import DELIVERY
from relay.store.db import check_file
from relay.store.digests import DIGEST_WINDOW, claim_digest
from relay.store.dispatches import fail_pending_dispatches
from relay.store.leases import DEFAULT_LEASE_S, expired_processing_ids
from relay.store.tables import (
    DELIVERY_STATUSES,
    DeliveryPayloadRecord,
    DeliveryRecord,
    DispatchRecord,
    as_utc,
    utcnow,
)

log = logging.getLogger(__name__)
_T = DeliveryRecord.__table__
_P = DeliveryPayloadRecord.__table__

__all__ = [
    "recent_deliveries",
    "insert_delivery",
    "insert_deliveries",
    "get_delivery",
    "load_delivery",
    "claim_delivery",
    "finish_processing",
    "claim_many",
    "events_of",
    "finish_many",
    "mark_delivery",
    "pending_deliveries",
    "reset_stale_processing",
    "due_received",
    "processing_ids",
    "reset_processing",
    "end_orphan_dispatches",
    "hold_received",
    "POISON_ATTEMPTS",
]

#: claims of one delivery interrupted (process killed, database gone) before it is given up
#: as ``failed`` instead of being reset once more: a payload that crashes the process every time
#: must not crash-loop the relay (``relay.retrying.DELIVERY``'s attempts)
POISON_ATTEMPTS = DELIVERY.attempts or 5


def insert_delivery(
    session: Session | Connection,
    *,
    delivery_id: str,
    event: str,
    payload: str,
    action: str | None = None,
    hook_id: str | None = None,
    status: str = "received",
    error: str | None = None,
    digest: str | None = None,
    subject: str | None = None,
    head_sha: str | None = None,
) -> bool:
    """Insert and COMMIT one delivery; ``False`` (after rollback) if the id is already stored.

    ``payload`` is the raw JSON body text, stored verbatim (in ``delivery_payloads``, the same
    transaction); ``error`` is the row's error text (an ``ignored`` delivery's reason);
    ``digest``, the raw body's SHA-256 (``relay.store.digests.body_digest``), makes a
    byte-identical body under another delivery id within a day a duplicate too (``False``);
    ``subject`` / ``head_sha`` name a run-asking PR and its head (``relay.store.supersede``).
    Relies on the UNIQUE constraint, not on a prior SELECT, so concurrent redeliveries cannot
    both be inserted.  Raises ``ValueError`` for an unknown ``status``.
    """
    row = {"delivery_id": delivery_id, "event": event, "payload": payload, "action": action,
           "hook_id": hook_id, "status": status, "error": error, "digest": digest,
           "subject": subject, "head_sha": head_sha}
    try:
        return _insert(session, [row])[0]
    except IntegrityError:
        session.rollback()
        return False


def _insert(session: Session | Connection, rows: list[dict[str, Any]]) -> list[bool]:
    """The ``deliveries`` rows and their ``delivery_payloads`` rows, committed; per row ``False``
    when its ``digest`` (``relay.store.digests``) names a body another delivery id brought within
    a day — that row is not stored, and the duplicate is logged with the original's id."""
    now = utcnow()
    for r in rows:
        if r.get("status", "received") not in DELIVERY_STATUSES:
            raise ValueError(f"unknown delivery status {r['status']!r}")
    new = []
    for r in rows:
        original = claim_digest(session, r["digest"], r["delivery_id"], now) if r.get("digest") else None
        if original is not None:
            log.warning("delivery %s: body byte-identical to delivery %s within %s; answered as a "
                        "duplicate, not stored", r["delivery_id"], original, DIGEST_WINDOW)
        new.append(original is None)
    kept = [r for r, fresh in zip(rows, new, strict=True) if fresh]
    if kept:
        session.execute(insert(_T), [
            {"delivery_id": r["delivery_id"], "event": r["event"], "action": r.get("action"),
             "hook_id": r.get("hook_id"), "status": r.get("status", "received"), "received_at": now,
             "error": r.get("error"), "subject": r.get("subject"), "head_sha": r.get("head_sha"),
             "processed_at": now if r.get("status") in ("processed", "ignored") else None}
            for r in kept])
        session.execute(insert(_P), [{"delivery_id": r["delivery_id"], "payload": r["payload"]}
                                     for r in kept])
    session.commit()
    return new


def insert_deliveries(session: Session | Connection, rows: list[dict[str, Any]]) -> list[bool]:
    """Insert many deliveries in ONE transaction (group commit); per row ``True`` if new.
    ``session`` may be a Core ``Connection`` (the intake writer keeps one open: a Session per
    batch costs ~3× the insert itself on the bench machine).

    ``rows`` hold ``insert_delivery``'s keyword arguments.  When the batch hits the UNIQUE
    constraint (a redelivery, or two copies in the same batch) it is rolled back and every row
    is inserted on its own, so each duplicate is found exactly as by ``insert_delivery``.
    """
    check_file(session)  # never acknowledge into a deleted SQLite file
    try:
        return _insert(session, rows)
    except IntegrityError:
        session.rollback()
    return [insert_delivery(session, **r) for r in rows]


def get_delivery(session: Session, delivery_id: str) -> DeliveryRecord | None:
    """The stored row for ``delivery_id`` (its ``payload`` loaded too) or ``None``."""
    return session.scalar(select(DeliveryRecord).options(joinedload(DeliveryRecord.body))
                          .where(DeliveryRecord.delivery_id == delivery_id))


def parse_payload(text: str) -> dict[str, Any]:
    """A stored payload's JSON object; raises ``PayloadInvalid`` when it is not JSON, not an
    object, or nests deeper than ``MAX_DEPTH`` (a row stored before the limit was 256)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise PayloadInvalid(f"stored payload is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise PayloadInvalid("stored payload is not a JSON object")
    if not quick_bound(text) and too_deep(value):
        raise PayloadInvalid(depth_error())
    return value


_DELIVERY_COLUMNS = (_T.c.delivery_id, _T.c.event, _T.c.action, _T.c.hook_id, _T.c.received_at,
                     _T.c.attempts)


def _as_delivery(row: Any, payload: str | None) -> Delivery:
    if payload is None:
        raise PayloadInvalid("stored payload is missing")
    return Delivery(id=row.delivery_id, event=row.event, action=row.action, hook_id=row.hook_id,
                    received_at=as_utc(row.received_at), payload=parse_payload(payload),
                    attempts=row.attempts or 0)


def _payloads(session: Session, ids: list[str]) -> dict[str, str]:
    """The stored payload texts of ``ids`` (``delivery_payloads``)."""
    return dict(session.execute(select(_P.c.delivery_id, _P.c.payload)
                                .where(_P.c.delivery_id.in_(ids))).all())


def load_delivery(session: Session, delivery_id: str) -> Delivery | None:
    """The stored delivery as a ``Delivery`` value object (payload parsed) or ``None``; raises
    ``PayloadInvalid`` for a payload that cannot be used (``parse_payload``)."""
    row = session.execute(select(*_DELIVERY_COLUMNS, _P.c.payload)
                          .join_from(_T, _P, _P.c.delivery_id == _T.c.delivery_id, isouter=True)
                          .where(_T.c.delivery_id == delivery_id)).first()
    return _as_delivery(row, row.payload) if row is not None else None


def events_of(session: Session, ids: list[str]) -> dict[str, str]:
    """``{delivery_id: event}`` of the ``ids`` stored (no payloads read)."""
    if not ids:
        return {}
    return dict(session.execute(select(_T.c.delivery_id, _T.c.event)
                                .where(_T.c.delivery_id.in_(ids))).all())


def claim_many(session: Session, ids: list[str], lease_s: float = DEFAULT_LEASE_S
               ) -> dict[str, Delivery | PayloadInvalid]:
    """Claim every id of ``ids`` still ``received`` (``received`` → ``processing``, one more
    attempt) in ONE statement (``UPDATE … RETURNING``: SQLite ≥ 3.35, PostgreSQL), committed,
    then read their payloads (written once at intake, never changed): per claimed id its ``Delivery`` (``attempts``
    counting this claim) or the ``PayloadInvalid`` its stored payload raises (claimed all the
    same: the caller marks it ``failed``).  Ids not ``received`` (unknown, already taken) are
    absent.  The in-process workers take a backlog this way: one claim transaction per batch.
    Each claim holds the delivery for ``lease_s`` seconds (``relay.store.leases``)."""
    if not ids:
        return {}
    # ``coalesce(status)``, not ``status``: without table statistics SQLite would walk the
    # status index over every ``received`` row (the whole backlog) and test each against the
    # id list; as an expression the term cannot use that index, so the UNIQUE id index is used
    rows = session.execute(
        update(_T).where(_T.c.delivery_id.in_(ids), func.coalesce(_T.c.status, "") == "received")
        .values(status="processing", attempts=_T.c.attempts + 1, next_attempt_at=None,
                lease_until=utcnow() + timedelta(seconds=lease_s))
        .returning(*_DELIVERY_COLUMNS)).all()
    session.commit()  # the write lock is held for the UPDATE only; payloads are read after it
    texts = _payloads(session, [row.delivery_id for row in rows]) if rows else {}
    session.commit()
    claimed: dict[str, Delivery | PayloadInvalid] = {}
    for row in rows:
        try:
            claimed[row.delivery_id] = _as_delivery(row, texts.get(row.delivery_id))
        except PayloadInvalid as exc:
            claimed[row.delivery_id] = exc
    return claimed


def finish_many(session: Session, marks: list[tuple[str, str, str | None]]) -> None:
    """Final states of many claimed deliveries in ONE transaction, committed: per
    ``(delivery_id, status, error)`` (``status`` one of ``processed``/``ignored``/``failed``)
    the row's status, error and ``processed_at``, and its dispatch rows still ``pending`` ended
    ``failed`` with ``"delivery <status>: <error>"`` (as ``mark_delivery`` after a final state).
    Raises ``ValueError`` for a status that is not final."""
    if not marks:
        return
    for _id, status, _error in marks:
        if status not in ("processed", "ignored", "failed"):
            raise ValueError(f"not a final delivery status: {status!r}")
    D = DispatchRecord.__table__
    pending = set(session.scalars(select(D.c.delivery_id).distinct().where(
        D.c.delivery_id.in_([m[0] for m in marks]), D.c.status == "pending")))
    for delivery_id, status, error in marks:
        if delivery_id in pending:
            fail_pending_dispatches(session, delivery_id, f"delivery {status}: {error or ''}")
    session.connection().execute(
        update(_T).where(_T.c.delivery_id == bindparam("b_id"))
        .values(status=bindparam("b_status"), error=bindparam("b_error"),
                processed_at=utcnow(), next_attempt_at=None),
        [{"b_id": d, "b_status": st, "b_error": err} for d, st, err in marks])
    session.commit()


def claim_delivery(session: Session, delivery_id: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
    """Atomically move ``received`` → ``processing`` (counting one more attempt) and commit;
    ``False`` if not ``received``.

    This is what makes a delivery processed once even when it is submitted twice (restart
    recovery racing a fresh submit, or two workers).
    """
    result = session.execute(
        update(_T).where(_T.c.delivery_id == delivery_id, _T.c.status == "received")
        .values(status="processing", attempts=_T.c.attempts + 1, next_attempt_at=None,
                lease_until=utcnow() + timedelta(seconds=lease_s))
    )
    session.commit()
    return result.rowcount == 1  # type: ignore[attr-defined]


def finish_processing(session: Session, delivery_id: str, status: str,
                      error: str | None = None) -> bool:
    """Move the delivery from ``processing`` to the final ``status`` with ``error``, stamping
    ``processed_at``; no commit (the caller's transaction also stores the run).  ``False`` when
    the row is not ``processing``: another attempt of the same delivery finished it first (a
    broker redelivering a task that outlived its visibility timeout), so this attempt stores
    nothing — a run is stored once per delivery."""
    result = session.execute(
        update(_T).where(_T.c.delivery_id == delivery_id, _T.c.status == "processing")
        .values(status=status, error=error, processed_at=utcnow(), next_attempt_at=None))
    return result.rowcount == 1  # type: ignore[attr-defined]


def mark_delivery(session: Session, delivery_id: str, status: str, error: str | None = None, *,
                  next_attempt_at: datetime | None = None) -> None:
    """Set ``status`` (one of ``DELIVERY_STATUSES``) and ``error`` text, stamp ``processed_at``
    for final states, record when a retry is due (``next_attempt_at``, UTC; ``None`` clears
    it), and commit."""
    if status not in DELIVERY_STATUSES:
        raise ValueError(f"unknown delivery status {status!r}")
    final = status in ("processed", "ignored", "failed")
    session.execute(
        update(_T).where(_T.c.delivery_id == delivery_id)
        .values(status=status, error=error, processed_at=utcnow() if final else None,
                next_attempt_at=next_attempt_at)
    )
    session.commit()


def pending_deliveries(session: Session) -> list[str]:
    """Ids of deliveries still ``received``, oldest first (for restart recovery)."""
    rows = session.scalars(
        select(DeliveryRecord.delivery_id)
        .where(DeliveryRecord.status == "received")
        .order_by(DeliveryRecord.id)
    )
    return list(rows)


def reset_stale_processing(session: Session) -> int:
    """Move every ``processing`` row nobody holds (lease run out or none:
    ``relay.store.leases``) back to ``received`` (``reset_processing``) and commit; returns how
    many went back.  In-process mode at startup: a delivery left ``processing`` by this relay was
    interrupted by a crash or shutdown; one another relay process on the same database still
    renews is left to it."""
    return reset_processing(session, expired_processing_ids(session))[0]


def processing_ids(session: Session) -> list[str]:
    """Ids of the deliveries ``processing`` now."""
    return list(session.scalars(select(_T.c.delivery_id).where(_T.c.status == "processing")))


def reset_processing(session: Session, ids: list[str]) -> tuple[int, int]:
    """Rows of ``ids`` still ``processing`` whose claim was interrupted: back to ``received``,
    or — after ``POISON_ATTEMPTS`` claims — ``failed`` ("interrupted N times"), never claimed
    again.  Commits; returns ``(reset, given_up)``."""
    if not ids:
        return 0, 0
    where = (_T.c.delivery_id.in_(ids), _T.c.status == "processing")
    given_up = session.execute(
        update(_T).where(*where, _T.c.attempts >= POISON_ATTEMPTS)
        .values(status="failed", processed_at=utcnow(), next_attempt_at=None,
                error=f"processing interrupted {POISON_ATTEMPTS} times (the process died or the "
                      "database went away each time); not retried"))
    reset = session.execute(update(_T).where(*where).values(status="received"))
    session.commit()
    return int(reset.rowcount or 0), int(given_up.rowcount or 0)  # type: ignore[attr-defined]


def due_received(session: Session, older_than: datetime, now: datetime | None = None
                 ) -> list[str]:
    """Ids of ``received`` deliveries stored before ``older_than`` whose retry (if any) is due,
    oldest first: candidates for a submit that never happened or was lost."""
    now = now or utcnow()
    return list(session.scalars(
        select(_T.c.delivery_id).where(
            _T.c.status == "received", _T.c.received_at <= older_than,
            or_(_T.c.next_attempt_at.is_(None), _T.c.next_attempt_at <= now))
        .order_by(_T.c.id).limit(1000)))


def hold_received(session: Session, ids: list[str], until: datetime) -> None:
    """Set ``next_attempt_at`` of the ``ids`` still ``received`` to ``until`` (a re-submission
    is not repeated before then); commits."""
    if ids:
        session.execute(update(_T).where(_T.c.delivery_id.in_(ids), _T.c.status == "received")
                        .values(next_attempt_at=until))
        session.commit()


def end_orphan_dispatches(session: Session) -> int:
    """Dispatch rows still ``pending`` whose delivery is final (processed, ignored, failed):
    ``failed`` — nothing will send them.  Commits; returns how many."""
    D = DispatchRecord.__table__
    final = select(_T.c.delivery_id).where(_T.c.status.in_(("processed", "ignored", "failed")))
    result = session.execute(update(D).where(D.c.status == "pending",
                                             D.c.delivery_id.in_(final))
                             .values(status="failed", error="never sent: its delivery ended"))
    session.commit()
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def recent_deliveries(session: Session, status: str | None = None, limit: int = 50
                      ) -> list[dict[str, Any]]:
    """The newest deliveries (``status`` given: only those), without payloads:
    ``[{delivery_id, event, action, status, error, received_at, processed_at, attempts,
    next_attempt_at}]`` (ISO times; ``next_attempt_at``: when a retry is due, else null)."""
    stmt = select(_T.c.delivery_id, _T.c.event, _T.c.action, _T.c.status, _T.c.error,
                  _T.c.received_at, _T.c.processed_at, _T.c.attempts, _T.c.next_attempt_at
                  ).order_by(_T.c.id.desc()).limit(limit)
    if status is not None:
        stmt = stmt.where(_T.c.status == status)
    return [{"delivery_id": r.delivery_id, "event": r.event, "action": r.action,
             "status": r.status, "error": r.error,
             "received_at": as_utc(r.received_at).isoformat(),
             "processed_at": as_utc(r.processed_at).isoformat() if r.processed_at else None,
             "attempts": r.attempts or 0,
             "next_attempt_at": as_utc(r.next_attempt_at).isoformat() if r.next_attempt_at else None}
            for r in session.execute(stmt)]
