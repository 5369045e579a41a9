"""Downstream jobs and their CRCR state machine, with atomic transitions.

States (CRCR): a dispatch is ``DISPATCHED``; the first ``in_progress`` callback of a job
creates its row ``IN_PROGRESS`` (the UNIQUE job key makes a second one fail); ``completed``
is a conditional ``UPDATE … WHERE state = 'IN_PROGRESS'`` so two racing completions cannot
both win; the sweeper moves ``IN_PROGRESS`` older than the job timeout to ``TIMED_OUT``.
Functions do not commit unless they say so: the callback handler commits the transition and
its outbox rows together.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.tables import DispatchRecord, JobRecord

__all__ = ["start_job", "complete_job", "get_job", "sweep_jobs", "jobs_for_pr", "list_jobs",
           "job_key"]


def _ms(later: datetime, earlier: datetime | None) -> float | None:
    if earlier is None:
        return None
    if earlier.tzinfo is None and later.tzinfo is not None:
        later = later.replace(tzinfo=None)
    return max(0.0, (later - earlier).total_seconds() * 1000.0)


def job_key(delivery_id: str, repo: str, run_id: str, run_attempt: int, job_name: str
            ) -> tuple[Any, ...]:
    return (JobRecord.delivery_id == delivery_id, JobRecord.repo == repo,
            JobRecord.run_id == run_id, JobRecord.run_attempt == run_attempt,
            JobRecord.job_name == job_name)


def get_job(session: Session, delivery_id: str, repo: str, run_id: str, run_attempt: int,
            job_name: str) -> JobRecord | None:
    return session.scalar(select(JobRecord).where(*job_key(delivery_id, repo, run_id,
                                                            run_attempt, job_name)))


def start_job(session: Session, dispatch: DispatchRecord, *, run_id: str, run_attempt: int,
              job_name: str, workflow_name: str, now: datetime) -> JobRecord | None:
    """Insert the job ``IN_PROGRESS`` (flushed, not committed); ``None`` if it exists already.

    ``queue_ms`` = now − the dispatch's ``sent_at`` (or ``created_at``) for the first job of
    the run (run id and attempt) to start; later jobs of that run get ``None`` — CRCR measures
    queue time per workflow run, anchored at its first job."""
    first = session.scalar(select(JobRecord.id).where(
        JobRecord.delivery_id == dispatch.delivery_id, JobRecord.repo == dispatch.repo,
        JobRecord.run_id == run_id, JobRecord.run_attempt == run_attempt).limit(1)) is None
    job = JobRecord(dispatch_id=dispatch.id, delivery_id=dispatch.delivery_id, repo=dispatch.repo,
                    run_id=run_id, run_attempt=run_attempt, job_name=job_name,
                    workflow_name=workflow_name, state="IN_PROGRESS", started_at=now,
                    queue_ms=_ms(now, dispatch.sent_at or dispatch.created_at) if first else None)
    session.add(job)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return None
    session.execute(update(DispatchRecord).where(DispatchRecord.id == dispatch.id,
                                                 DispatchRecord.state == "DISPATCHED")
                    .values(state="IN_PROGRESS"))
    return job


def complete_job(session: Session, job: JobRecord, *, conclusion: str | None,
                 test_results: dict[str, int] | None, artifact_url: str | None,
                 now: datetime) -> bool:
    """``IN_PROGRESS`` → ``COMPLETED`` (not committed); ``False`` if the job was not
    ``IN_PROGRESS`` at the moment of the UPDATE.  ``exec_ms`` = now − ``started_at``."""
    result = session.execute(
        update(JobRecord).where(JobRecord.id == job.id, JobRecord.state == "IN_PROGRESS")
        .values(state="COMPLETED", conclusion=conclusion, completed_at=now,
                exec_ms=_ms(now, job.started_at), test_results=test_results,
                artifact_url=artifact_url))
    if result.rowcount != 1:  # type: ignore[attr-defined]
        return False
    session.refresh(job)
    return True


def sweep_jobs(session: Session, now: datetime, timeout_s: float) -> list[int]:
    """Mark jobs ``IN_PROGRESS`` since before ``now − timeout_s`` (and dispatches still
    ``DISPATCHED`` that long) ``TIMED_OUT``; commits; returns the job ids swept."""
    cutoff = now - timedelta(seconds=timeout_s)
    ids = list(session.scalars(select(JobRecord.id).where(JobRecord.state == "IN_PROGRESS",
                                                          JobRecord.started_at < cutoff)))
    swept = []
    for job_id in ids:
        res = session.execute(update(JobRecord).where(JobRecord.id == job_id,
                                                      JobRecord.state == "IN_PROGRESS")
                              .values(state="TIMED_OUT", conclusion="timed_out", completed_at=now))
        if res.rowcount == 1:  # type: ignore[attr-defined]
            swept.append(job_id)
    session.execute(update(DispatchRecord).where(DispatchRecord.state == "DISPATCHED",
                                                 DispatchRecord.created_at < cutoff)
                    .values(state="TIMED_OUT"))
    session.commit()
    return swept


def jobs_for_pr(session: Session, upstream: str, pr_number: int) -> list[tuple[JobRecord,
                                                                             DispatchRecord]]:
    """Every (job, dispatch) reported for ``upstream#pr_number``, oldest first."""
    rows = session.execute(select(JobRecord, DispatchRecord)
                           .join(DispatchRecord, JobRecord.dispatch_id == DispatchRecord.id)
                           .where(DispatchRecord.upstream == upstream,
                                  DispatchRecord.pr_number == pr_number)
                           .order_by(JobRecord.id))
    return [(j, d) for j, d in rows]


def list_jobs(session: Session, repo: str | None = None, since: datetime | None = None
              ) -> list[JobRecord]:
    stmt = select(JobRecord).order_by(JobRecord.id)
    if repo is not None:
        stmt = stmt.where(JobRecord.repo == repo)
    if since is not None:
        stmt = stmt.where(JobRecord.started_at >= since)
    return list(session.scalars(stmt))
