"""The dashboard pages about the relay's own work (same query layer as the JSON twins):

``GET /deliveries``                   webhook deliveries: processing (with the run's progress),
                                      queued, retrying (with the next attempt's time), failed
                                      (with the error), done; refreshes while any is in flight
``GET /flaky``                        flaky tests and the quarantine
``GET /backends/{name}/readiness``    a backend's readiness: what its level means, the L3
                                      criteria with measured values, weekly trend charts
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from relay.service.deps import SessionDep, StateDep
from relay.service.queries.deliveries import deliveries_view
from relay.service.queries.readiness_view import readiness_view
from relay.service.routes.dashboard import backend_readiness, flaky_json
from relay.service.routes.page import error_page
from relay.service.templating import render
from relay.store.quarantine import quarantine_json
from relay.worker.queue import InProcessQueue

__all__ = ["router"]

router = APIRouter()


@router.get("/deliveries", response_class=HTMLResponse)
def deliveries_page(request: Request, state: StateDep, session: SessionDep) -> HTMLResponse:
    view = deliveries_view(session, now=datetime.now(UTC))
    queue = state.queue
    pool = ({"workers": queue.workers, "in_hand": queue.in_hand(), "scheduled": queue.scheduled()}
            if isinstance(queue, InProcessQueue) else None)
    return render(request, "deliveries.html", view=view, pool=pool, live=view["live"],
                  json_url="/api/v1/deliveries")


@router.get("/flaky", response_class=HTMLResponse)
def flaky_page(request: Request, session: SessionDep) -> HTMLResponse:
    return render(request, "flaky.html", flaky=flaky_json(session, 500)["flaky"],
                  quarantine=list(quarantine_json(session).values()), json_url="/api/v1/flaky")


@router.get("/backends/{name:path}/readiness", response_class=HTMLResponse)
def readiness_page(request: Request, name: str, state: StateDep, session: SessionDep) -> HTMLResponse:
    data = backend_readiness(state, session, name)
    if data is None:
        return error_page(request, 404, f"unknown backend or repo: {name}")
    names = [state.settings.backend] + [e.name for e in state.allowlist.get().external()]
    others = [n for n in dict.fromkeys(names) if n != name]
    return render(request, "readiness.html", r=readiness_view(data), others=others,
                  json_url=f"/api/v1/backends/{name}/readiness")
