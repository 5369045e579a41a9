"""The relational schema (SQLAlchemy 2 typed declarative); one class per table.

``deliveries``   every webhook delivery accepted by ``POST /webhooks/github``
``runs``         one pipeline ``Run`` (``relay.models.Run``) per row
``test_results`` one ``TestResult`` per (run, test id)
``hud_results``  bodies received by the dashboard ingest ``POST /api/crcr/results``

Times are stored timezone-aware (UTC); SQLite drops the zone, loaders re-attach UTC.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["Base", "DeliveryRecord", "RunRecord", "TestResultRecord", "HudResultRecord",
           "DELIVERY_STATUSES", "utcnow"]

DELIVERY_STATUSES = ("received", "processing", "processed", "ignored", "failed")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    """Declarative base; ``Base.metadata`` is the target for Alembic autogenerate."""


class DeliveryRecord(Base):
    """One GitHub delivery; ``delivery_id`` (``X-GitHub-Delivery``) is UNIQUE for dedup."""

    __tablename__ = "deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    event: Mapped[str] = mapped_column(String(100), nullable=False)
    action: Mapped[str | None] = mapped_column(String(100))
    hook_id: Mapped[str | None] = mapped_column(String(100))
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    payload: Mapped[str] = mapped_column(Text, nullable=False)  # the raw JSON body, verbatim
    status: Mapped[str] = mapped_column(String(20), default="received", index=True)
    error: Mapped[str | None] = mapped_column(Text)
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RunRecord(Base):
    """One pipeline run; ``stages`` and ``counts`` are JSON copies of the ``Run`` fields."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    backend: Mapped[str] = mapped_column(String(100))
    upstream: Mapped[str] = mapped_column(String(200))
    base: Mapped[str] = mapped_column(String(200))
    head: Mapped[str] = mapped_column(String(200), index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    trigger: Mapped[str] = mapped_column(String(20))
    delivery_id: Mapped[str | None] = mapped_column(String(100), index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    universe: Mapped[int] = mapped_column(Integer, default=0)
    selected: Mapped[int] = mapped_column(Integer, default=0)
    conclusion: Mapped[str] = mapped_column(String(20))
    stages: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)

    results: Mapped[list["TestResultRecord"]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="TestResultRecord.id"
    )


class TestResultRecord(Base):
    """One executed test of a run; unique per (run_id, test_id)."""

    __test__ = False  # not a pytest test class
    __tablename__ = "test_results"
    __table_args__ = (UniqueConstraint("run_id", "test_id", name="uq_test_results_run_test"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    test_id: Mapped[str] = mapped_column(String(500))
    upstream: Mapped[str] = mapped_column(String(500))
    op: Mapped[str | None] = mapped_column(String(200))
    module: Mapped[str | None] = mapped_column(String(200))
    dtype: Mapped[str | None] = mapped_column(String(50))
    mode: Mapped[str] = mapped_column(String(30))
    outcome: Mapped[str] = mapped_column(String(20), index=True)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    message: Mapped[str | None] = mapped_column(Text)

    run: Mapped[RunRecord] = relationship(back_populates="results")


class HudResultRecord(Base):
    """A body received by the dashboard ingest, keyed like a CRCR job.

    Unique per (delivery_id, repo, run_id, attempt, job_name) — CRCR tracks jobs by
    ``(delivery, repo, run_id, run_attempt, job_name)`` — so the same post twice is stored once.
    """

    __tablename__ = "hud_results"
    __table_args__ = (
        UniqueConstraint("delivery_id", "repo", "run_id", "attempt", "job_name",
                         name="uq_hud_results_job"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(String(100))
    repo: Mapped[str] = mapped_column(String(200))
    run_id: Mapped[str] = mapped_column(String(100))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    job_name: Mapped[str] = mapped_column(String(200), default="")
    status: Mapped[str] = mapped_column(String(20))
    conclusion: Mapped[str | None] = mapped_column(String(30))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
