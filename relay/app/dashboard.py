"""The dashboard JSON (design §5): ``GET /api/v1/dashboard`` and ``GET /api/v1/runs/{id}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from relay.app.deps import SessionDep
from relay.errors import RunNotFound
from relay.store import list_runs, load_run

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")


@router.get("/dashboard")
def dashboard(session: SessionDep, limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
    """``{"runs": [Run JSON without "results"]}``, newest first; ``counts`` per run included."""
    runs = list_runs(session, limit)
    return {"runs": [r.model_dump(mode="json", exclude={"results"}) for r in runs]}


@router.get("/runs/{run_id}")
def run_detail(run_id: str, session: SessionDep) -> dict[str, Any]:
    """The full Run JSON with ``results``; 404 ``{"detail": ...}`` for an unknown id."""
    try:
        return load_run(session, run_id).model_dump(mode="json")
    except RunNotFound:
        raise HTTPException(404, f"run not found: {run_id}") from None
