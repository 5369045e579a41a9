"""``GET /healthz`` (database reachable via ``SELECT 1``) and ``GET /metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from relay.service.deps import MetricsDep, SessionDep
from relay.store import ping

__all__ = ["router"]

router = APIRouter()


@router.get("/healthz")
def healthz(session: SessionDep) -> JSONResponse:
    """200 ``{"status": "ok", "database": "ok"}``; 503 with the error class when the DB fails."""
    try:
        ping(session)
    except Exception as exc:  # noqa: BLE001 - any driver error means "not ready"
        return JSONResponse({"status": "error", "database": type(exc).__name__}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok"})


@router.get("/metrics")
def metrics(app_metrics: MetricsDep) -> Response:
    """Prometheus text exposition of this app's registry."""
    return Response(generate_latest(app_metrics.registry),
                    media_type=CONTENT_TYPE_LATEST)
