"""``GET /``: the dashboard page, rendered on the server from ``relay/service/templates/index.html``
(Jinja2, autoescaped; no JavaScript build step).  It shows the same data as the JSON routes:
recent runs (with their verdict counts, NEW and FLAKY tests with reasons, and the culprit
commit a bisection found), readiness of the local backend and every allowlisted repo, recent
downstream jobs, flaky tests."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy import select

from relay.service.deps import SessionDep
from relay.service.routes.dashboard import SHA, backend_readiness, job_json
from relay.store import list_runs
from relay.store.deliveries import recent_deliveries
from relay.store.history import flaky_tests, notable_verdicts
from relay.store.tables import DispatchRecord, JobRecord

__all__ = ["router"]

router = APIRouter()
_env = Environment(loader=FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"),
                   autoescape=select_autoescape(["html"]))
# a run's head is a commit (linked to its page, as /api/v1/commits/{sha} accepts) or a label
# such as a version or a change-set file's "pr-head" (shown, not linked)
_env.tests["match_sha"] = lambda value: bool(SHA.fullmatch(str(value)))


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 3_600_000:
        return f"{value / 3_600_000:.1f} h"
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    return f"{value / 1000:.1f} s"


_env.filters["ms"] = _fmt_ms


@router.get("/", response_class=HTMLResponse)
def index(request: Request, session: SessionDep) -> HTMLResponse:
    state = request.app.state
    names = [state.settings.backend] + [e.name for e in state.allowlist().external()]
    ready = [r for n in dict.fromkeys(names) if (r := backend_readiness(request, session, n))]
    rows = session.execute(select(JobRecord, DispatchRecord)
                           .join(DispatchRecord, JobRecord.dispatch_id == DispatchRecord.id)
                           .order_by(JobRecord.id.desc()).limit(50))
    runs = list_runs(session, 50)
    html = _env.get_template("index.html").render(
        runs=runs, notable=notable_verdicts(session, [r.id for r in runs if r.verdict_counts]),
        readiness=ready, jobs=[job_json(j, d) for j, d in rows],
        flaky=flaky_tests(session, 50), upstream=state.settings.upstream_repo,
        failed=recent_deliveries(session, "failed", 20))
    return HTMLResponse(html)
