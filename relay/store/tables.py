"""The relational schema (SQLAlchemy 2 typed declarative); one class per table.

``deliveries``   every webhook delivery accepted by ``POST /webhooks/github``
``delivery_payloads`` its raw body, one row per delivery (apart: see ``DeliveryPayloadRecord``)
``runs``         one pipeline ``Run`` (``relay.domain.run.Run``) per row
``test_results`` one ``RunResult`` per (run, test id)
``hud_results``  bodies received by the dashboard ingest ``POST /api/crcr/results``
``dispatches``   one CRCR ``repository_dispatch`` per (delivery, downstream repo)
``jobs``         downstream jobs reported by callbacks (CRCR state machine)
``token_uses``   callback tokens already presented (replay refusal)
``pr_labels``    labels seen on upstream PRs (L3 check gating)
``outbox``       HUD bodies waiting to be delivered
``nightly_reports`` nightly/periodic callbacks (no dispatch), one per job key
``demotions``    L3 repos with an open demotion PR upstream (no new check runs meanwhile)

The schema is created by Alembic (``relay/migrations``); change a table here *and* add a
revision.

Times are stored timezone-aware (UTC); SQLite drops the zone, loaders re-attach UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from relay.domain.delivery import DeliveryStatus

__all__ = ["Base", "DeliveryRecord", "DeliveryPayloadRecord", "RunRecord", "TestResultRecord", "HudResultRecord",
           "DispatchRecord", "JobRecord", "TokenUseRecord", "PrLabelRecord", "OutboxRecord",
           "NightlyReportRecord", "DemotionRecord",
           "DELIVERY_STATUSES", "utcnow", "as_utc"]

#: the stored values of ``deliveries.status`` (``relay.domain.delivery.DeliveryStatus``)
DELIVERY_STATUSES = tuple(status.value for status in DeliveryStatus)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """``value`` with UTC attached when it is naive (SQLite drops the zone on the way back)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


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
    status: Mapped[str] = mapped_column(String(20), default="received", index=True)
    error: Mapped[str | None] = mapped_column(Text)
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: processing attempts so far (each claim counts one); transient failures are retried
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: when a transient failure's retry is due (``received`` rows only; cleared by the claim)
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: until when the attempt working on a ``processing`` row holds it (``relay.store.leases``;
    #: renewed by its heartbeat; ``NULL``: handed on to a Celery chord, or claimed before 0016)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: ``"<repo>#<number>"`` and head sha of a run-asking ``pull_request`` delivery
    #: (``relay.store.supersede``: a newer head supersedes an older one's local run)
    subject: Mapped[str | None] = mapped_column(String(120), index=True)
    head_sha: Mapped[str | None] = mapped_column(String(64))
    #: the raw body's row (``delivery_payloads``), loaded on first access
    body: Mapped[DeliveryPayloadRecord | None] = relationship(
        primaryjoin="DeliveryRecord.delivery_id == foreign(DeliveryPayloadRecord.delivery_id)",
        lazy="select", viewonly=True)

    @property
    def payload(self) -> str | None:
        """The raw JSON body text, verbatim (``None`` if its row is missing)."""
        return self.body.payload if self.body is not None else None


class DeliveryPayloadRecord(Base):
    """The raw JSON body of one delivery, verbatim, written once with its ``deliveries`` row.

    Apart from the row whose status changes: SQLite rewrites a whole row on every UPDATE whose
    record changes size, overflow pages included, so a 25 KB payload beside the status was
    written three times per delivery (insert, claim, final state) — ~290 µs of the ~400 µs that
    processing a delivery cost in a batch (``bench/intake.py``).  Deliveries are never deleted.
    No foreign key: an SQLite batch migration recreates ``deliveries`` (copy, drop, rename), and
    a cascading key would delete every payload with the old table."""

    __tablename__ = "delivery_payloads"

    delivery_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    payload: Mapped[str] = mapped_column(Text, nullable=False)


class DeliveryDigestRecord(Base):
    """The SHA-256 of a delivery's raw signed body and the delivery that first brought it
    (``relay.store.digests``): a byte-identical body under a new delivery id within a day is a
    duplicate — GitHub keeps the id when it redelivers, so a second id is a copy (a proxy or a
    second hook replaying it).  One row per digest; the newest holder after a day."""

    __tablename__ = "delivery_digests"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(100), nullable=False)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class RunRecord(Base):
    """One pipeline run; ``stages`` and ``counts`` are JSON copies of the ``Run`` fields."""

    __tablename__ = "runs"
    #: a webhook delivery stores one run (its idempotency key): a second attempt of the same
    #: delivery — a broker redelivery, another relay process — cannot store another
    __table_args__ = (Index("uq_runs_webhook_delivery", "delivery_id", unique=True,
                            sqlite_where=text("trigger = 'webhook'"),
                            postgresql_where=text("trigger = 'webhook'")),)

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    backend: Mapped[str] = mapped_column(String(100))
    upstream: Mapped[str] = mapped_column(String(200))
    base: Mapped[str] = mapped_column(String(200))
    head: Mapped[str] = mapped_column(String(200), index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    trigger: Mapped[str] = mapped_column(String(20))
    ref: Mapped[str | None] = mapped_column(String(255))
    baseline_run: Mapped[str | None] = mapped_column(String(100))
    delivery_id: Mapped[str | None] = mapped_column(String(100), index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    finished_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    #: selection ended, execution began (``Run.selected_at``)
    selected_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    universe: Mapped[int] = mapped_column(Integer, default=0)
    selected: Mapped[int] = mapped_column(Integer, default=0)
    conclusion: Mapped[str] = mapped_column(String(20))
    stages: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    #: stage 4's spec write-back, a unified diff (``Run.spec_proposal``)
    spec_proposal: Mapped[str | None] = mapped_column(Text)
    #: failures not rerun: deterministic device refusals (``Run.reruns_skipped``)
    reruns_skipped: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: what the run was compared with (``Run.baseline``, ``relay.domain.baseline``; migration 0013)
    baseline: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    results: Mapped[list[TestResultRecord]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="TestResultRecord.id"
    )


class TestResultRecord(Base):
    """One executed test of a run; unique per (run_id, test_id)."""

    __test__ = False  # not a pytest test class
    __tablename__ = "test_results"
    __table_args__ = (UniqueConstraint("run_id", "test_id", name="uq_test_results_run_test"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    test_id: Mapped[str] = mapped_column(String(500), index=True)
    upstream: Mapped[str] = mapped_column(String(500))
    op: Mapped[str | None] = mapped_column(String(200))
    module: Mapped[str | None] = mapped_column(String(200))
    dtype: Mapped[str | None] = mapped_column(String(50))
    mode: Mapped[str] = mapped_column(String(30))
    outcome: Mapped[str] = mapped_column(String(20), index=True)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    message: Mapped[str | None] = mapped_column(Text)
    #: failure output, bounded (``relay.domain.results.DETAIL_MAX_CHARS``)
    detail: Mapped[str | None] = mapped_column(Text)
    #: why a failure was not rerun (``TestResult.not_rerun``), else NULL
    not_rerun: Mapped[str | None] = mapped_column(Text)

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


class DispatchRecord(Base):
    """One ``repository_dispatch`` of a delivery to one downstream repo (CRCR fan-out).

    Written (``status='pending'``) *before* the GitHub call, then ``sent`` or ``failed``; a
    delivery reprocessed after a crash re-sends ``pending`` rows (at-least-once).  ``state``
    is the CRCR dispatch state (``DISPATCHED`` until a job reports, ``TIMED_OUT`` by the
    sweeper).  ``trimmed_from``/``payload_bytes`` record a payload trimmed to the 65 KB cap.
    """

    __tablename__ = "dispatches"
    __table_args__ = (UniqueConstraint("delivery_id", "repo", name="uq_dispatches_delivery_repo"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(String(100), index=True)
    repo: Mapped[str] = mapped_column(String(200))
    level: Mapped[str] = mapped_column(String(4))
    device: Mapped[str | None] = mapped_column(String(100))
    event_type: Mapped[str] = mapped_column(String(100))
    upstream: Mapped[str] = mapped_column(String(200), default="")
    head_sha: Mapped[str | None] = mapped_column(String(64), index=True)
    pr_number: Mapped[int | None] = mapped_column(Integer)
    labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    state: Mapped[str] = mapped_column(String(20), default="DISPATCHED")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    payload_bytes: Mapped[int] = mapped_column(Integer, default=0)
    trimmed_from: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class JobRecord(Base):
    """One downstream job, keyed like CRCR: (delivery, repo, run_id, run_attempt, job_name).

    ``state``: ``IN_PROGRESS`` → ``COMPLETED`` (or ``TIMED_OUT`` by the sweeper); moves are
    conditional UPDATEs so two racing callbacks cannot both win.  Times are measured by the
    relay: ``queue_ms`` = dispatch sent → first ``in_progress``, ``exec_ms`` = in_progress →
    completed.  ``check_run_id``: the upstream check run reporting this job (L3/L4).
    """

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("delivery_id", "repo", "run_id", "run_attempt", "job_name",
                                       name="uq_jobs_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dispatch_id: Mapped[int] = mapped_column(ForeignKey("dispatches.id", ondelete="CASCADE"),
                                             index=True)
    delivery_id: Mapped[str] = mapped_column(String(100))
    repo: Mapped[str] = mapped_column(String(200), index=True)
    run_id: Mapped[str] = mapped_column(String(100))
    run_attempt: Mapped[int] = mapped_column(Integer, default=1)
    job_name: Mapped[str] = mapped_column(String(200), default="")
    workflow_name: Mapped[str] = mapped_column(String(200), default="")
    state: Mapped[str] = mapped_column(String(20), default="IN_PROGRESS", index=True)
    conclusion: Mapped[str | None] = mapped_column(String(30))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    queue_ms: Mapped[float | None] = mapped_column(Float)
    exec_ms: Mapped[float | None] = mapped_column(Float)
    test_results: Mapped[dict[str, int] | None] = mapped_column(JSON)
    artifact_url: Mapped[str | None] = mapped_column(Text)
    check_run_id: Mapped[int | None] = mapped_column(Integer)
    #: the HUD body sent for the ``in_progress`` callback (CRCR keeps it for the zombie sweeper,
    #: which re-sends it ``timed_out``); the validated triage verdict of the latest callback
    hud_body: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    triage_verdict: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class TokenUseRecord(Base):
    """A callback bearer token already presented (``token_key`` UNIQUE): replays are refused."""

    __tablename__ = "token_uses"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_key: Mapped[str] = mapped_column(String(200), unique=True)
    used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PrLabelRecord(Base):
    """A label seen on an upstream PR (from payloads and ``labeled`` events); drives L3 checks."""

    __tablename__ = "pr_labels"
    __table_args__ = (UniqueConstraint("upstream", "pr_number", "label", name="uq_pr_labels"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    upstream: Mapped[str] = mapped_column(String(200))
    pr_number: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(200))


class OutboxRecord(Base):
    """A message to deliver (``kind='hud'``: a HUD results body), written in the same
    transaction as the result it reports; ``pending`` → ``delivered`` by the deliverer,
    retried with backoff (``next_attempt_at``) on 5xx/transport errors; ``dead`` on 4xx."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(20), default="hud")
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class NightlyReportRecord(Base):
    """A nightly/periodic callback (CRCR: no dispatch, ``completed`` only, the commit checked
    against the upstream), unique per (commit, repo, run_id, run_attempt, job_name): a second
    report of the same job is answered ``duplicate``."""

    __tablename__ = "nightly_reports"
    __table_args__ = (UniqueConstraint("sha", "repo", "run_id", "run_attempt", "job_name",
                                       name="uq_nightly_reports_job"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sha: Mapped[str] = mapped_column(String(100))
    repo: Mapped[str] = mapped_column(String(200), index=True)
    event_type: Mapped[str] = mapped_column(String(20))
    run_id: Mapped[str] = mapped_column(String(100))
    run_attempt: Mapped[int] = mapped_column(Integer, default=1)
    job_name: Mapped[str] = mapped_column(String(200), default="")
    workflow_name: Mapped[str] = mapped_column(String(200), default="")
    conclusion: Mapped[str | None] = mapped_column(String(30))
    triage_verdict: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DemotionRecord(Base):
    """An L3 repo whose demotion PR (branch ``crcr-demotion/<org>/<repo>`` on the upstream) is
    open since ``since`` (CRCR ``utils/demotion.py``): no new upstream check runs for it."""

    __tablename__ = "demotions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200), unique=True)
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    pr_number: Mapped[int | None] = mapped_column(Integer)
