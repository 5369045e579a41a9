"""``POST /api/crcr/callback``: downstream status callbacks (CRCR; design §5, §6).

Order: body ≤ 1 MB (413) → bearer token (401/403; ``relay.crcr.tokens``: a per-dispatch token
or an OIDC JWT, scheme matched in any case) → JSON (400 ``Invalid JSON body``) →
``relay.crcr.callbacks.handle_callback`` (the caller's level: unlisted or L1 → 200 ignored; the
per-repo rate limit → 429 with ``Retry-After``; required fields, unknown dispatch, unknown
status, state transitions → 400; nightly/periodic) → 200 ``{"ok": true, "status": ...}``.
Every refusal is JSON ``{"detail": reason}``.

The token is checked before the body is parsed (as the webhook's signature is): CRCR parses
first, which only changes which of 400/401 a request that is both unauthenticated and malformed
gets.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from relay.crcr.callbacks import handle_callback
from relay.crcr.tokens import authenticate
from relay.errors import CallbackError, CallbackRateLimited
from relay.service.body import read_capped
from relay.service.deps import StateDep
from relay.service.jsonbody import parse_json_body

__all__ = ["router", "CALLBACK_BODY_CAP"]

CALLBACK_BODY_CAP = 1024 * 1024  # bytes
router = APIRouter()


@router.post("/api/crcr/callback")
async def callback(request: Request, state: StateDep) -> JSONResponse:
    counter = state.metrics.callbacks
    try:
        raw = await read_capped(request, CALLBACK_BODY_CAP)
    except HTTPException as exc:
        counter.labels("rejected").inc()
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)

    def _work() -> dict:
        with state.session_factory() as session:
            caller = authenticate(request.headers.get("authorization"),
                                  key=state.settings.callback_key(), oidc=state.oidc,
                                  session=session)
            try:
                data, _ = parse_json_body(raw)
            except ValueError as exc:
                raise HTTPException(400, f"Invalid JSON body: {exc}") from None
            return handle_callback(session, caller, data, state.callbacks)

    try:
        result = await run_in_threadpool(_work)
    except CallbackRateLimited as exc:
        counter.labels("rate_limited").inc()
        return JSONResponse({"detail": str(exc)}, status_code=429,
                            headers={"Retry-After": str(exc.retry_after)})
    except CallbackError as exc:
        counter.labels("rejected").inc()
        return JSONResponse({"detail": str(exc)}, status_code=exc.status_code)
    except HTTPException as exc:
        counter.labels("rejected").inc()
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
    counter.labels(str(result.get("state", result["status"])).lower()).inc()
    if state.deliverer is not None:
        state.deliverer.kick()
    return JSONResponse(result, status_code=200)
