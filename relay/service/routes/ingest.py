"""``POST /api/crcr/results``: the dashboard ingest in CRCR's HUD body shape (design §5, §6).

Authentication: the results token (``Settings.results_token()``: ``RELAY_DASHBOARD_TOKEN``, or
derived from the webhook secret) in HUD's ``x-hud-internal-bot`` header (what CRCR sends,
test-infra PR #8143) or as ``Authorization: Bearer <token>`` (scheme in any case), compared in
constant time; missing or wrong → 401 before the body is read.  Without any secret configured
the ingest is open (a local replay's in-process
post).  Answers: 201 ``{"status": "stored"}`` for a new job key, 200 ``{"status": "duplicate"}`` when
the same (delivery_id, verified_repo, run_id, run_attempt, job_name) was posted before (stored
once, newest body kept); 413 over 2 MB; 400 not JSON; 422 wrong shape (pydantic errors).
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from relay.reporting.ingest import ingest_body, validation_errors
from relay.reporting.models import HUD_BODY_CAP, HudBody
from relay.service.body import read_capped
from relay.service.deps import StateDep
from relay.service.jsonbody import parse_json_body

__all__ = ["router"]

router = APIRouter()


def _authorized(request: Request, expected: str) -> bool:
    """The results token in ``x-hud-internal-bot`` or as a bearer token (constant time)."""
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    given = [request.headers.get("x-hud-internal-bot", "")]
    if scheme.lower() == "bearer":
        given.append(bearer.strip())
    return any(hmac.compare_digest(g.encode("utf-8", "surrogateescape"), expected.encode())
               for g in given if g)


@router.post("/api/crcr/results", status_code=201)
async def ingest_results(request: Request, state: StateDep) -> JSONResponse:
    """Validate and store one HUD body; see the module docstring for the answers."""
    metrics = state.metrics.hud_results
    expected = state.settings.results_token()
    if expected is not None and not _authorized(request, expected):
            metrics.labels("rejected").inc()
            return JSONResponse({"detail": "missing or wrong bearer token for the results ingest"},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
    try:
        raw = await read_capped(request, HUD_BODY_CAP)
        try:
            data, _ = parse_json_body(raw)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
    except HTTPException as exc:
        metrics.labels("rejected").inc()
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
    try:
        body = HudBody.model_validate(data)
    except ValidationError as exc:
        metrics.labels("rejected").inc()
        return JSONResponse({"detail": validation_errors(exc)}, status_code=422)

    def _store() -> bool:
        with state.session_factory() as session:
            return ingest_body(session, body, data)

    new = await run_in_threadpool(_store)
    metrics.labels("stored" if new else "duplicate").inc()
    if new:
        return JSONResponse({"status": "stored"}, status_code=201)
    return JSONResponse({"status": "duplicate"}, status_code=200)
