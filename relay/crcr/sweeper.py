"""The zombie sweeper (CRCR ``callback/cleanup_handler.py``) and, on the same beat, the L3
demotion reconcile (``relay.crcr.demotion``; CRCR's sweeper event runs both).

A job with no completion ``job_timeout_s`` after its ``in_progress`` becomes ``TIMED_OUT``
(conclusion ``timed_out``); dispatches that never got a callback in that time become
``TIMED_OUT`` too.  The timeout is 6 h (design §6, ``RELAY_JOB_TIMEOUT_S``); CRCR's stored
default is 24 h (``ZOMBIE_TIMEOUT_SECONDS`` 86400) — the design wins here.

Each swept job's HUD body is the one stored at ``in_progress`` re-sent (CRCR
``_build_timeout_payload``): everything the downstream sent kept (url, check_run_id, started_at,
run id and attempt as sent), ``workflow.status`` ``completed``, ``conclusion`` ``timed_out``,
``completed_at`` the sweep's time (UTC ``%Y-%m-%dT%H:%M:%SZ``), ``ci_metrics`` ``queue_time``
null and ``execution_time`` the seconds since its ``in_progress``.  L3/L4 jobs also get their
check run completed ``timed_out``.  Called by the outbox deliverer every ``sweep_interval_s``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.allowlist import Allowlist
from relay.crcr.demotion import reconcile
from relay.github.client import GitHubClient
from relay.reporting.models import seconds
from relay.store.jobs import sweep_jobs
from relay.store.outbox import enqueue
from relay.store.tables import DispatchRecord, JobRecord, as_utc, utcnow

__all__ = ["sweep", "timeout_body", "sweep_and_reconcile"]

log = logging.getLogger(__name__)


def timeout_body(job: JobRecord, dispatch: DispatchRecord, now: datetime) -> dict[str, Any]:
    """The ``timed_out`` HUD body of a swept job (module docstring)."""
    exec_ms = (now - as_utc(job.started_at)).total_seconds() * 1000.0
    body = copy.deepcopy(job.hud_body) if job.hud_body else {
        "trusted": {"verified_repo": job.repo, "downstream_repo_level": dispatch.level},
        "untrusted": {"callback_payload": {
            "event_type": dispatch.event_type, "delivery_id": job.delivery_id,
            "workflow": {"name": job.workflow_name or "workflow", "run_id": job.run_id,
                         "run_attempt": job.run_attempt, "job_name": job.job_name or None}}}}
    body["trusted"]["ci_metrics"] = {"queue_time": None, "execution_time": seconds(exec_ms)}
    workflow = body["untrusted"]["callback_payload"].setdefault("workflow", {})
    workflow.update(status="completed", conclusion="timed_out",
                    completed_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return body


def sweep(session_factory: sessionmaker[Session], timeout_s: float,
          now: datetime | None = None) -> list[int]:
    """Run one sweep; returns the ids of the jobs marked ``TIMED_OUT``."""
    now = as_utc(now or utcnow())
    with session_factory() as session:
        swept = sweep_jobs(session, now, timeout_s)
        for job_id in swept:
            job = session.get(JobRecord, job_id)
            dispatch = session.get(DispatchRecord, job.dispatch_id) if job else None
            if job is None or dispatch is None:
                continue
            if dispatch.level in ("L2", "L3", "L4"):
                enqueue(session, "hud", timeout_body(job, dispatch, now))
            if dispatch.level in ("L3", "L4") and dispatch.head_sha and dispatch.pr_number is not None:
                enqueue(session, "check", {"job_id": job.id})
        session.commit()
    return swept


def sweep_and_reconcile(session_factory: sessionmaker[Session], timeout_s: float,
                        allowlist: Callable[[], Allowlist], refresh: Callable[[], object] | None,
                        github: Callable[[], GitHubClient], upstream: str) -> None:
    """One sweep, then the demotion reconcile; a failing reconcile does not fail the sweep."""
    sweep(session_factory, timeout_s)
    try:
        reconcile(session_factory, allowlist, refresh, github, upstream)
    except Exception:  # noqa: BLE001 - CRCR: the sweep stands whatever the reconcile does
        log.exception("demotion reconcile failed")
