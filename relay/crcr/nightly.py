"""Nightly and periodic callbacks: results of scheduled downstream runs that no dispatch started
(CRCR ``callback/callback_handler.py`` nightly path, ``tests/test_callback_handler.py::
TestNightlyCallback``; RFC-0056 for the commit check).

Rules: the caller is L2+ and its allowlist entry takes ``nightly`` events (else ignored); the
``status`` must be ``completed`` (400 ``nightly/periodic callbacks must have status
'completed', got '<s>'``); the reported commit — ``delivery_id``, and ``payload.head_sha`` when
given — must be an upstream commit (``relay.crcr.shas``; 400 otherwise); no dispatch record, no
job state, no check runs; the HUD body has ``queue_time`` and ``execution_time`` both ``null``
and the body verbatim (verdict normalized).  A second report of the same job (commit, repo,
run id, attempt, job name) answers ``{"ok": true, "status": "duplicate"}`` (CRCR: HUD's 409).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.crcr.allowlist import AllowEntry
from relay.crcr.callback_body import CallbackBody, hud_envelope, verbatim_payload
from relay.crcr.shas import UpstreamCommits
from relay.crcr.tokens import Caller
from relay.errors import CallbackInvalid
from relay.store.outbox import enqueue
from relay.store.tables import NightlyReportRecord

__all__ = ["handle_nightly"]


def _commits(body: CallbackBody, data: dict[str, Any]) -> list[str]:
    payload = data.get("payload")
    head = payload.get("head_sha") if isinstance(payload, dict) else None
    return list(dict.fromkeys([body.delivery_id] + ([head] if isinstance(head, str) and head else [])))


def handle_nightly(session: Session, caller: Caller, entry: AllowEntry, body: CallbackBody,
                   data: dict[str, Any], commits: UpstreamCommits, now: datetime) -> dict[str, Any]:
    """Record and report one nightly/periodic callback (module docstring); returns the JSON
    answer (committed).  Raises ``CallbackInvalid``."""
    if "nightly" not in entry.events:
        return {"ok": True, "status": "ignored"}
    wf = body.workflow
    if wf.status != "completed":
        raise CallbackInvalid(f"nightly/periodic callbacks must have status 'completed', "
                              f"got {wf.status!r}")
    for sha in _commits(body, data):
        if not commits.known(sha):
            raise CallbackInvalid(f"callback rejected: {sha[:100]!r} is not a commit of "
                                  f"{commits.upstream}")
    payload, verdict = verbatim_payload(data)
    session.add(NightlyReportRecord(
        sha=body.delivery_id, repo=caller.repo, event_type=str(body.event_type),
        run_id=wf.run_id, run_attempt=wf.run_attempt, job_name=wf.job_name or "",
        workflow_name=wf.name, conclusion=wf.conclusion_text, triage_verdict=verdict, received_at=now))
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return {"ok": True, "status": "duplicate"}
    enqueue(session, "hud", hud_envelope(caller.repo, entry.level, payload))
    session.commit()
    return {"ok": True, "status": "completed"}
