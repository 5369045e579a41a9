"""Downstream status callbacks (CRCR ``callback/callback_handler.py``; design §6).

Body (CRCR's callback action)::

    {"event_type": "pull_request|push|nightly|periodic", "delivery_id": "...", "payload": {...},
     "workflow": {"status": "in_progress|completed", "run_id": 123, "name": "CI",
                  "run_attempt": 1, "job_name": "test", "conclusion": "success", "url": "...",
                  "test_results": {...}, "artifact_url": "...", "triage_verdict": {...}, ...}}

``handle_callback`` is called once per authenticated callback (``relay.service.routes.callback``)
with the parsed JSON object, in this order (CRCR's):

1. the caller's current allowlist level: not listed or L1 → ``{"ok": true, "status": "ignored"}``;
2. the per-repo rate limit (429; ``relay.crcr.ratelimit``);
3. required fields ``delivery_id``, ``workflow``, ``workflow.status``, ``workflow.run_id`` (an
   integer, as a number or a string of digits), ``workflow.name`` → 400 ``callback body missing
   required field: '<key>'``; ``run_attempt`` defaults to 1;
4. ``event_type`` ``nightly`` / ``periodic`` → ``relay.crcr.nightly`` (no dispatch needed);
5. a per-dispatch token bound to another delivery → 403; no dispatch of ``delivery_id`` to the
   caller → 400 ``callback rejected: no matching dispatch record``; an unknown status → 400;
6. the job's state, in one transaction with its outbox rows: ``in_progress`` creates it
   ``IN_PROGRESS``, ``completed`` moves ``IN_PROGRESS → COMPLETED`` (anything else → 400
   ``callback rejected: invalid state transition …``); rows: the HUD body (every caller here is
   L2+), a check-run sync for L3/L4, a PR-comment sync when an L3/L4 job failed;
7. → ``{"ok": true, "status": <status>}`` plus our extras (``state``, ``job_id``,
   ``queue_time``, ``execution_time`` in seconds).

The HUD body (``relay.reporting.models``) carries the callback body verbatim, only
``workflow.triage_verdict`` replaced by its validated form or removed (``relay.crcr.verdict``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from relay.crcr.allowlist import AllowEntry, Allowlist
from relay.crcr.callback_body import CallbackBody, hud_envelope, parse_callback, verbatim_payload
from relay.crcr.nightly import handle_nightly
from relay.crcr.ratelimit import RateLimiter
from relay.crcr.shas import UpstreamCommits
from relay.crcr.tokens import Caller
from relay.errors import CallbackForbidden, CallbackInvalid, CallbackTransitionError, CallbackUnknown
from relay.reporting.models import seconds
from relay.store.dispatches import get_dispatch
from relay.store.jobs import complete_job, get_job, start_job
from relay.store.outbox import enqueue
from relay.store.tables import DispatchRecord, JobRecord, utcnow

__all__ = ["CallbackContext", "CallbackBody", "handle_callback", "BAD_CONCLUSIONS",
           "NIGHTLY_EVENTS", "STATUSES"]

BAD_CONCLUSIONS = frozenset({"failure", "timed_out", "cancelled", "startup_failure"})
NIGHTLY_EVENTS = frozenset({"nightly", "periodic"})
STATUSES = ("in_progress", "completed")
@dataclass
class CallbackContext:
    """What callbacks need besides the store: the current ``allowlist``, the ``rate_limiter``
    and the upstream's ``commits`` (nightly SHA checks)."""

    allowlist: Callable[[], Allowlist]
    rate_limiter: RateLimiter
    commits: UpstreamCommits


def _transition(body: CallbackBody, repo: str, why: str) -> CallbackTransitionError:
    return CallbackTransitionError(
        f"callback rejected: invalid state transition delivery_id={body.delivery_id} repo={repo} "
        f"status={body.workflow.status} ({why})")


def _move(session: Session, dispatch: DispatchRecord, body: CallbackBody, repo: str,
          verdict: dict[str, Any] | None, now: datetime) -> JobRecord:
    """Apply the state transition (not committed); raises ``CallbackTransitionError``."""
    wf = body.workflow
    key = dict(run_id=wf.run_id, run_attempt=wf.run_attempt, job_name=wf.job_name or "")
    if wf.status == "in_progress":
        job = start_job(session, dispatch, workflow_name=wf.name, now=now, **key)
        if job is None:
            session.rollback()
            raise _transition(body, repo, "duplicate in_progress: the job is already reported")
    else:
        job = get_job(session, body.delivery_id, repo, **key)
        if job is None:
            raise _transition(body, repo, "skipped state: completed before in_progress")
        if not complete_job(session, job, conclusion=wf.conclusion_text or "neutral",
                            test_results=wf.counts, artifact_url=wf.artifact, now=now):
            session.rollback()
            raise _transition(body, repo, f"job is {job.state}, not IN_PROGRESS: duplicate or "
                                          "late completion")
    if verdict is not None:
        job.triage_verdict = verdict
    return job


def _dispatched(session: Session, caller: Caller, entry: AllowEntry, body: CallbackBody,
                data: dict[str, Any], now: datetime) -> dict[str, Any]:
    dispatch = get_dispatch(session, body.delivery_id, caller.repo)
    if dispatch is None:
        raise CallbackUnknown("callback rejected: no matching dispatch record")
    wf = body.workflow
    if wf.status not in STATUSES:
        raise CallbackInvalid(f"unknown callback status: {wf.status!r}")
    payload, verdict = verbatim_payload(data)
    job = _move(session, dispatch, body, caller.repo, verdict, now)
    hud = hud_envelope(caller.repo, entry.level, payload, queue_ms=job.queue_ms,
                       exec_ms=job.exec_ms if wf.status == "completed" else None)
    if wf.status == "in_progress":
        hud["trusted"]["ci_metrics"]["execution_time"] = None
        job.hud_body = hud  # the zombie sweeper re-sends it timed_out
    else:
        hud["trusted"]["ci_metrics"]["queue_time"] = None
    enqueue(session, "hud", hud)
    if entry.level in ("L3", "L4") and dispatch.head_sha and dispatch.pr_number is not None:
        enqueue(session, "check", {"job_id": job.id})
        if wf.status == "completed" and (wf.conclusion_text or "") in BAD_CONCLUSIONS:
            enqueue(session, "comment", {"job_id": job.id})
    session.commit()
    return {"ok": True, "status": wf.status, "state": job.state, "job_id": job.id,
            "queue_time": seconds(job.queue_ms), "execution_time": seconds(job.exec_ms)}


def handle_callback(session: Session, caller: Caller, data: Any, ctx: CallbackContext,
                    now: datetime | None = None) -> dict[str, Any]:
    """Apply one callback (module docstring); returns the JSON answer (committed).  Raises
    ``CallbackRateLimited``, ``CallbackInvalid``, ``CallbackForbidden``, ``CallbackUnknown``,
    ``CallbackTransitionError``."""
    entry = ctx.allowlist().get(caller.repo)
    if entry is None or entry.local or entry.level == "L1":
        return {"ok": True, "status": "ignored"}
    ctx.rate_limiter.check(caller.repo)
    body = parse_callback(data)
    if caller.delivery_id is not None and caller.delivery_id != body.delivery_id:
        raise CallbackForbidden("token was issued for another delivery")
    if body.event_type in NIGHTLY_EVENTS:
        return handle_nightly(session, caller, entry, body, data, ctx.commits, now or utcnow())
    return _dispatched(session, caller, entry, body, data, now or utcnow())
