"""The dashboard JSON (design §5), all under ``/api/v1``; every route reads through
``relay.service.queries``, as its page twin (same path without ``/api/v1``) does:

``GET /dashboard``                 ``{"runs": [Run without results, verdicts and selection]}``,
                                   newest first (``verdict_counts``, ``environments``,
                                   ``baseline_run``, ``culprit`` included)
``GET /grid?commits=N``            the HUD-style grid: ``{"columns", "rows"}`` (``queries.grid``)
``GET /runs/{id}``                 the full Run JSON (results with their failure output,
                                   selection with reasons, verdicts, environments, baseline_run,
                                   culprit); 404 unknown
``GET /commits/{sha}``             ``{"sha", "runs": [Run without results and verdicts],
                                   "blamed_in": [the same, for runs whose culprit is this
                                   commit], "jobs": [job]}`` for a full sha or a ≥ 7 hex-char
                                   prefix; 400 otherwise
``GET /deliveries?status=S``       ``{"deliveries": [{delivery_id, event, action, status, error,
                                   received_at, processed_at, attempts, next_attempt_at,
                                   progress, run_id}]}``, newest first (no payloads)
``GET /tests/history?test=ID``     ``{"test", "history": [{run_id, head, outcome, ...}]}``
``GET /tests?test=&op=&verdict=``  ``{"query", "runs_searched", "tests": [latest result per test]}``
``GET /flaky``                     ``{"flaky": [{test_id, upstream, flaky_runs, last_seen,
                                   quarantine}]}``; ``quarantine`` is null or the test's row
``GET /quarantine``                ``{"quarantine": [{test_id, state, reason, flaky_runs, greens,
                                   issue_repo, issue_number, issue_url, disabled_at,
                                   reenable_proposed_at}]}``
``GET /backends/{name}/readiness`` ``relay.service.readiness.readiness`` for a local backend or
                                   an allowlisted ``org/repo``; 404 when neither

Bad input answers 4xx with a JSON ``detail`` (FastAPI's 422 for a query parameter out of range).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from sqlalchemy.orm import Session

from relay.errors import RunNotFound
from relay.service.deps import SessionDep, StateDep
from relay.service.queries import commits, runs, tests
from relay.service.queries import deliveries as deliveries_q
from relay.service.queries import grid as grid_q
from relay.service.queries.common import SHA
from relay.service.readiness import readiness
from relay.service.state import RelayState
from relay.store.history import flaky_tests

__all__ = ["router", "backend_readiness", "flaky_json", "STATUS_PATTERN", "VERDICT_PATTERN"]

router = APIRouter(prefix="/api/v1")
#: the delivery statuses a ``status`` filter accepts (``relay.store.tables.DELIVERY_STATUSES``)
STATUS_PATTERN = "^(received|processing|processed|ignored|failed)$"
#: verdict classes a ``verdict`` filter accepts (``relay.domain.verdicts.VERDICTS``)
VERDICT_PATTERN = "^[A-Z_]{2,20}$"


@router.get("/dashboard")
def dashboard(session: SessionDep, limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """``{"runs": [Run JSON without "results", "verdicts" and "selection"]}``, newest first."""
    return runs.dashboard_json(session, limit)


@router.get("/grid")
def grid(state: StateDep, session: SessionDep, commits_: int = Query(30, alias="commits", ge=1, le=200)
         ) -> dict[str, Any]:
    """The HUD-style grid of the ``commits`` newest upstream commits (``queries.grid``)."""
    settings = state.settings
    return grid_q.grid_json(session, commits=commits_, backend=settings.backend, upstream=settings.upstream_repo)


@router.get("/runs/{run_id}")
def run_detail(run_id: str, session: SessionDep) -> dict[str, Any]:
    """The full Run JSON with ``results``; 404 ``{"detail": ...}`` for an unknown id."""
    try:
        return runs.run_json(session, run_id)
    except RunNotFound:
        raise HTTPException(404, f"run not found: {run_id}") from None


@router.get("/commits/{sha}")
def commit(sha: str, session: SessionDep) -> dict[str, Any]:
    """Runs on the commit (head or base), runs that blamed it as their culprit, downstream jobs."""
    if not SHA.fullmatch(sha):
        raise HTTPException(400, "sha must be 7 to 64 hex characters")
    return commits.commit_json(session, sha)


@router.get("/deliveries")
def deliveries(session: SessionDep, status: str | None = Query(None, pattern=STATUS_PATTERN),
               limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """The newest webhook deliveries (optionally of one ``status``) with their processing
    ``error``, retry time and progress — where a delivery that failed or waits shows up."""
    return deliveries_q.deliveries_json(session, status, limit)


@router.get("/tests/history")
def history(session: SessionDep, test: str = Query(..., min_length=1, max_length=500),
            limit: int = Query(100, ge=1, le=1000)) -> dict[str, Any]:
    """One test's results over runs, newest first."""
    return tests.history_json(session, test, limit)


@router.get("/tests")
def search(session: SessionDep, test: str | None = Query(None, max_length=500),
           op: str | None = Query(None, max_length=200), verdict: str | None = Query(None, pattern=VERDICT_PATTERN),
           limit: int = Query(200, ge=1, le=1000)) -> dict[str, Any]:
    """Tests of recent runs by id substring, OpInfo and verdict; 400 when no filter is given."""
    if not (test or op or verdict):
        raise HTTPException(400, "give at least one of test, op, verdict")
    return tests.search_json(session, test=test, op=op, verdict=verdict, limit=limit)


def flaky_json(session: Any, limit: int) -> dict[str, Any]:
    """``{"flaky": [{test_id, upstream, flaky_runs, last_seen, quarantine}]}``."""
    from relay.store.quarantine import quarantine_json

    states = quarantine_json(session)
    return {"flaky": [{**row, "quarantine": states.get(row["test_id"])} for row in flaky_tests(session, limit)]}


@router.get("/flaky")
def flaky(session: SessionDep, limit: int = Query(200, ge=1, le=2000)) -> dict[str, Any]:
    return flaky_json(session, limit)


@router.get("/quarantine")
def quarantine(session: SessionDep) -> dict[str, Any]:
    """Every quarantined test (``relay.quarantine.policy``), oldest disable first."""
    from relay.store.quarantine import quarantine_json

    return {"quarantine": list(quarantine_json(session).values())}


def backend_readiness(state: RelayState, session: Session, name: str) -> dict[str, Any] | None:
    """The readiness of ``name`` (the local backend or an allowlisted repo), ``None`` if neither."""
    entry = state.allowlist.get().get(name)
    local = "/" not in name
    if entry is None and name != state.settings.backend:
        return None
    return readiness(session, name, entry.level if entry else None, local=local)


@router.get("/backends/{name:path}/readiness")
def backend(name: str, state: StateDep, session: SessionDep) -> dict[str, Any]:
    result = backend_readiness(state, session, name)
    if result is None:
        raise HTTPException(404, f"unknown backend or repo: {name}")
    return result
