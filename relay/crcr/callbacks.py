"""Downstream status callbacks (CRCR) → the job state machine, the outbox, metrics.

Body (CRCR; design §6)::

    {"delivery_id": "...", "event_type": "pull_request" (optional), "payload": {} (optional),
     "workflow": {"status": "in_progress"|"completed", "run_id": 123, "name": "CI",
                  "run_attempt": 1, "job_name": "test", "conclusion": "success",
                  "test_results": {"passed": 1, "failed": 0, "skipped": 0},
                  "artifact_url": "..."}}

``handle_callback`` is called once per authenticated, rate-limited callback; in one
transaction it moves the job (``in_progress`` creates it IN_PROGRESS, ``completed`` moves
IN_PROGRESS → COMPLETED) and writes the outbox rows that report it: a HUD body for L2+, a
check-run sync for L3/L4, a PR-comment sync when an L3/L4 job completed unsuccessfully.
Errors: ``CallbackUnknown`` (404, no dispatch of that delivery to the caller's repo),
``CallbackForbidden`` (403, token for another delivery), ``CallbackTransitionError`` (400,
duplicate or skipped state).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from relay.crcr.tokens import Caller
from relay.errors import CallbackForbidden, CallbackTransitionError, CallbackUnknown
from relay.reporting.models import HudBody, Workflow
from relay.store.dispatches import get_dispatch
from relay.store.jobs import complete_job, get_job, start_job
from relay.store.outbox import enqueue
from relay.store.tables import DispatchRecord, JobRecord, utcnow

__all__ = ["CallbackBody", "handle_callback", "hud_body_for_job", "BAD_CONCLUSIONS"]

BAD_CONCLUSIONS = frozenset({"failure", "timed_out", "cancelled", "startup_failure"})


class CallbackBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    delivery_id: str = Field(min_length=1, max_length=100)
    event_type: str | None = Field(default=None, max_length=100)
    payload: dict[str, Any] | None = None
    workflow: Workflow


def hud_body_for_job(job: JobRecord, dispatch: DispatchRecord, body: CallbackBody
                     ) -> dict[str, Any]:
    """The HUD body: relay-measured metrics as ``trusted``, the callback as ``untrusted``."""
    hud = HudBody.model_validate({
        "trusted": {"ci_metrics": {"queue_time_ms": job.queue_ms, "execution_time_ms": job.exec_ms},
                    "verified_repo": dispatch.repo, "downstream_repo_level": dispatch.level},
        "untrusted": {"callback_payload": {
            "event_type": body.event_type or dispatch.event_type,
            "delivery_id": body.delivery_id, "payload": body.payload or {},
            "workflow": body.workflow.model_dump(mode="json")}},
    })
    return hud.model_dump(mode="json")


def handle_callback(session: Session, caller: Caller, body: CallbackBody,
                    now: datetime | None = None) -> dict[str, Any]:
    """Apply one callback; returns ``{"state", "job_id", "queue_ms", "exec_ms"}`` (committed)."""
    now = now or utcnow()
    if caller.delivery_id is not None and caller.delivery_id != body.delivery_id:
        raise CallbackForbidden("token was issued for another delivery")
    dispatch = get_dispatch(session, body.delivery_id, caller.repo)
    if dispatch is None:
        raise CallbackUnknown(f"no dispatch of delivery {body.delivery_id} to {caller.repo}")
    wf = body.workflow
    key = dict(run_id=str(wf.run_id), run_attempt=wf.run_attempt, job_name=wf.job_name or "")
    if wf.status == "in_progress":
        job = start_job(session, dispatch, workflow_name=wf.name, now=now, **key)
        if job is None:
            session.rollback()
            raise CallbackTransitionError("duplicate in_progress: the job is already reported")
    else:
        job = get_job(session, body.delivery_id, caller.repo, **key)
        if job is None:
            raise CallbackTransitionError("skipped state: completed before in_progress")
        results = wf.test_results.model_dump() if wf.test_results else None
        if not complete_job(session, job, conclusion=wf.conclusion or "neutral",
                            test_results=results, artifact_url=wf.artifact_url, now=now):
            session.rollback()
            raise CallbackTransitionError(f"job is {job.state}, not IN_PROGRESS: "
                                          "duplicate or late completion")
    if dispatch.level in ("L2", "L3", "L4"):
        enqueue(session, "hud", hud_body_for_job(job, dispatch, body))
    if dispatch.level in ("L3", "L4") and dispatch.head_sha:
        enqueue(session, "check", {"job_id": job.id})
        if wf.status == "completed" and (wf.conclusion or "") in BAD_CONCLUSIONS \
                and dispatch.pr_number is not None:
            enqueue(session, "comment", {"job_id": job.id})
    session.commit()
    return {"state": job.state, "job_id": job.id, "queue_ms": job.queue_ms,
            "exec_ms": job.exec_ms}
