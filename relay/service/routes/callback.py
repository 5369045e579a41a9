"""``POST /api/crcr/callback``: downstream status callbacks (CRCR; design §5, §6).

Order: body ≤ 1 MB (413) → bearer token (401; ``relay.crcr.tokens``) → per-repo rate limit
(429 with ``Retry-After``) → JSON (400) and shape (422) → state machine
(``relay.crcr.callbacks``: 404 unknown dispatch, 403 token for another delivery, 400 duplicate
or skipped state) → 200 ``{"status": "ok", "state": ..., "job_id": ..., "queue_ms": ...,
"exec_ms": ...}``.  Every refusal is JSON ``{"detail": reason}``.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from relay.crcr.callbacks import CallbackBody, handle_callback
from relay.crcr.tokens import authenticate
from relay.errors import CallbackError, CallbackRateLimited
from relay.service.body import read_capped
from relay.service.jsonbody import parse_json_body

__all__ = ["router", "CALLBACK_BODY_CAP"]

CALLBACK_BODY_CAP = 1024 * 1024  # bytes
router = APIRouter()


@router.post("/api/crcr/callback")
async def callback(request: Request) -> JSONResponse:
    state = request.app.state
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
            state.rate_limiter.check(caller.repo)
            try:
                data, _ = parse_json_body(raw)
            except ValueError as exc:
                raise HTTPException(400, str(exc)) from None
            body = CallbackBody.model_validate(data)
            return handle_callback(session, caller, body)

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
    except ValidationError as exc:
        counter.labels("rejected").inc()
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        return JSONResponse({"detail": errors}, status_code=422)
    counter.labels(result["state"].lower()).inc()
    if state.deliverer is not None:
        state.deliverer.kick()
    return JSONResponse({"status": "ok", **result}, status_code=200)
