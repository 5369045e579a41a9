"""The dashboard JSON (design §5), all under ``/api/v1``:

``GET /dashboard``                 ``{"runs": [Run without results and verdicts]}``, newest
                                   first (``verdict_counts``, ``environments``,
                                   ``baseline_run``, ``culprit`` included)
``GET /runs/{id}``                 the full Run JSON (results, verdicts, environments,
                                   baseline_run, culprit); 404 unknown
``GET /commits/{sha}``             ``{"sha", "runs": [Run without results and verdicts],
                                   "blamed_in": [the same, for runs whose culprit is this
                                   commit], "jobs": [job]}`` for a full sha or a ≥ 7 hex-char
                                   prefix; 400 otherwise
``GET /deliveries?status=S``       ``{"deliveries": [{delivery_id, event, action, status, error,
                                   received_at, processed_at}]}``, newest first (no payloads)
``GET /tests/history?test=ID``     ``{"test", "history": [{run_id, head, outcome, ...}]}``
``GET /flaky``                     ``{"flaky": [{test_id, upstream, flaky_runs, last_seen,
                                   quarantine}]}``; ``quarantine`` is null or the test's row
``GET /quarantine``                ``{"quarantine": [{test_id, state, reason, flaky_runs, greens,
                                   issue_repo, issue_number, issue_url, disabled_at,
                                   reenable_proposed_at}]}``
``GET /backends/{name}/readiness`` ``relay.service.readiness.readiness`` for a local backend or
                                   an allowlisted ``org/repo``; 404 when neither
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request

from relay.errors import RunNotFound
from relay.service.deps import SessionDep
from relay.service.readiness import readiness
from relay.store import list_runs, load_run
from relay.store.culprits import runs_blaming
from relay.store.deliveries import recent_deliveries
from relay.store.history import flaky_tests, jobs_for_commit, runs_for_commit, test_history
from relay.store.runs import load_runs

__all__ = ["router", "job_json", "backend_readiness"]

router = APIRouter(prefix="/api/v1")
SHA = re.compile(r"[0-9a-fA-F]{7,64}")  # SHA-1 (40) or SHA-256 (64) object names
#: what run listings leave out (the full lists are on ``/runs/{id}``)
LISTED = {"results", "verdicts", "selection"}


@router.get("/dashboard")
def dashboard(session: SessionDep, limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """``{"runs": [Run JSON without "results" and "verdicts"]}``, newest first; ``counts`` and
    ``verdict_counts`` per run included."""
    runs = list_runs(session, limit)
    return {"runs": [r.model_dump(mode="json", exclude=LISTED) for r in runs]}


@router.get("/runs/{run_id}")
def run_detail(run_id: str, session: SessionDep) -> dict[str, Any]:
    """The full Run JSON with ``results``; 404 ``{"detail": ...}`` for an unknown id."""
    try:
        return load_run(session, run_id).model_dump(mode="json")
    except RunNotFound:
        raise HTTPException(404, f"run not found: {run_id}") from None


def job_json(job: Any, dispatch: Any) -> dict[str, Any]:
    return {"repo": job.repo, "level": dispatch.level, "delivery_id": job.delivery_id,
            "run_id": job.run_id, "run_attempt": job.run_attempt, "job_name": job.job_name,
            "workflow": job.workflow_name, "state": job.state, "conclusion": job.conclusion,
            "queue_ms": job.queue_ms, "exec_ms": job.exec_ms, "test_results": job.test_results,
            "head_sha": dispatch.head_sha, "pr_number": dispatch.pr_number}


@router.get("/commits/{sha}")
def commit(sha: str, session: SessionDep) -> dict[str, Any]:
    if not SHA.fullmatch(sha):
        raise HTTPException(400, "sha must be 7 to 64 hex characters")
    """Runs on the commit (head or base), runs that blamed it as their culprit, downstream jobs."""
    sha = sha.lower()
    runs = [r.model_dump(mode="json", exclude=LISTED)
            for r in load_runs(session, runs_for_commit(session, sha))]
    blamed = [r.model_dump(mode="json", exclude=LISTED)
              for r in load_runs(session, runs_blaming(session, sha))]
    jobs = [job_json(j, d) for j, d in jobs_for_commit(session, sha)]
    return {"sha": sha, "runs": runs, "blamed_in": blamed, "jobs": jobs}


@router.get("/deliveries")
def deliveries(session: SessionDep,
               status: str | None = Query(None, pattern="^(received|processing|processed|ignored|failed)$"),
               limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """``{"deliveries": [...]}``: the newest webhook deliveries (optionally of one ``status``)
    with their processing ``error`` — where a delivery that failed (GitHub unreachable, bad
    payload) shows up; no payloads."""
    return {"deliveries": recent_deliveries(session, status, limit)}


@router.get("/tests/history")
def history(session: SessionDep, test: str = Query(..., min_length=1, max_length=500),
            limit: int = Query(100, ge=1, le=1000)) -> dict[str, Any]:
    return {"test": test, "history": test_history(session, test, limit)}


@router.get("/flaky")
def flaky(session: SessionDep, limit: int = Query(200, ge=1, le=2000)) -> dict[str, Any]:
    from relay.store.quarantine import quarantine_json

    states = quarantine_json(session)
    return {"flaky": [{**row, "quarantine": states.get(row["test_id"])}
                      for row in flaky_tests(session, limit)]}


@router.get("/quarantine")
def quarantine(session: SessionDep) -> dict[str, Any]:
    """Every quarantined test (``relay.quarantine.policy``), oldest disable first."""
    from relay.store.quarantine import quarantine_json

    return {"quarantine": list(quarantine_json(session).values())}


def backend_readiness(request: Request, session: Any, name: str) -> dict[str, Any] | None:
    state = request.app.state
    allowlist = state.allowlist() if getattr(state, "allowlist", None) else None
    entry = allowlist.get(name) if allowlist is not None else None
    local = "/" not in name
    if entry is None and name != state.settings.backend:
        return None
    return readiness(session, name, entry.level if entry else None, local=local)


@router.get("/backends/{name:path}/readiness")
def backend(name: str, request: Request, session: SessionDep) -> dict[str, Any]:
    result = backend_readiness(request, session, name)
    if result is None:
        raise HTTPException(404, f"unknown backend or repo: {name}")
    return result
