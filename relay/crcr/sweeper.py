"""The zombie sweeper (CRCR): jobs with no completion ``job_timeout_s`` (6 h) after their
``in_progress`` become ``TIMED_OUT`` (conclusion ``timed_out``); dispatches that never got a
callback in that time become ``TIMED_OUT`` too.  Called by the outbox deliverer every
``sweep_interval_s``; each swept L2+ job gets a HUD body, L3/L4 jobs a check update.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from relay.store.jobs import sweep_jobs
from relay.store.outbox import enqueue
from relay.store.tables import DispatchRecord, JobRecord, utcnow

__all__ = ["sweep"]


def sweep(session_factory: sessionmaker[Session], timeout_s: float,
          now: datetime | None = None) -> list[int]:
    """Run one sweep; returns the ids of the jobs marked ``TIMED_OUT``."""
    from relay.crcr.callbacks import CallbackBody, hud_body_for_job

    now = now or utcnow()
    with session_factory() as session:
        swept = sweep_jobs(session, now, timeout_s)
        for job_id in swept:
            job = session.get(JobRecord, job_id)
            dispatch = session.get(DispatchRecord, job.dispatch_id) if job else None
            if job is None or dispatch is None:
                continue
            if dispatch.level in ("L2", "L3", "L4"):
                body = CallbackBody.model_validate({
                    "delivery_id": job.delivery_id, "event_type": dispatch.event_type,
                    "workflow": {"status": "completed", "conclusion": "timed_out",
                                 "run_id": job.run_id, "run_attempt": job.run_attempt,
                                 "name": job.workflow_name or "workflow",
                                 "job_name": job.job_name or None}})
                enqueue(session, "hud", hud_body_for_job(job, dispatch, body))
            if dispatch.level in ("L3", "L4") and dispatch.head_sha:
                enqueue(session, "check", {"job_id": job.id})
        session.commit()
    return swept
