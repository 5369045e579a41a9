"""The ``run_progress`` table: how far the run of a delivery being processed has come, so the
deliveries page can show it while it works (one row per delivery, upserted).

Written by ``relay.worker.progress.DeliveryProgress`` (the pipeline's ``Progress`` port of a
webhook run, at most about once a second), read by ``progress_for``.  ``done`` counts finished
tests of ``total`` to run; ``counts`` holds them per outcome; ``phase`` is the pipeline phase
(``selecting``, ``running tests``, ``refining`` …).  Times are UTC.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.store.tables import Base, as_utc, utcnow

__all__ = ["RunProgressRecord", "write_progress", "progress_for"]


class RunProgressRecord(Base):
    """The latest progress of one delivery's run."""

    __tablename__ = "run_progress"

    delivery_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    phase: Mapped[str] = mapped_column(String(200), default="")
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def write_progress(session: Session, delivery_id: str, *, phase: str, total: int, done: int,
                   counts: dict[str, int], restart: bool = False) -> None:
    """Upsert the progress of ``delivery_id`` and commit; ``restart``: a new attempt (the start
    time is reset)."""
    now = utcnow()
    row = session.get(RunProgressRecord, delivery_id)
    if row is None:
        row = RunProgressRecord(delivery_id=delivery_id, started_at=now)
        session.add(row)
    elif restart:
        row.started_at = now
    row.phase, row.total, row.done, row.counts, row.updated_at = phase[:200], total, done, dict(counts), now
    session.commit()


def progress_for(session: Session, delivery_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{delivery id: {phase, total, done, counts, started_at, updated_at}}`` (ISO times) for
    the given deliveries that have reported progress."""
    if not delivery_ids:
        return {}
    rows = session.scalars(select(RunProgressRecord)
                           .where(RunProgressRecord.delivery_id.in_(list(delivery_ids))))
    return {r.delivery_id: {"phase": r.phase, "total": r.total, "done": r.done,
                            "counts": dict(r.counts or {}),
                            "started_at": as_utc(r.started_at).isoformat(),
                            "updated_at": as_utc(r.updated_at).isoformat()}
            for r in rows}
