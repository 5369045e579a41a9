"""The dashboard pages about changes, rendered on the server (``relay.service.templating``) from
the same query layer as their JSON twins (``relay.service.queries``; the twin's path is the
page's with ``/api/v1`` in front):

``GET /``                      the HUD-style grid: upstream commits × backend / spec group /
                               downstream job, cells coloured by conclusion, linked to the run;
                               work in flight as pending cells (refreshes while there is any)
``GET /runs/{id}``             a run: change, trigger, PR and commit links, Dr. CI-style verdict
                               summary, results by outcome (they add up), spec groups, timings per
                               stage, culprit, failure output per failed test, results and the
                               selection with reasons — filtered by ``test``, ``op``, ``verdict``,
                               ``outcome``
``GET /commits/{sha}``         the runs on a commit, the runs that blamed it, its downstream jobs
``GET /tests/history?test=ID`` one test over commits, with an SVG chart of outcome and duration
``GET /tests?test=&op=&verdict=`` search the newest runs' tests

Unknown runs answer a 404 page, malformed input a 400 page, each saying why.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from relay.errors import RunNotFound
from relay.service.deps import SessionDep, StateDep
from relay.service.queries import commits, runs, tests
from relay.service.queries import grid as grid_q
from relay.service.queries.common import SHA
from relay.service.queries.run_logs import log_file, run_logs
from relay.service.routes.dashboard import VERDICT_PATTERN, backend_readiness
from relay.service.templating import render
from relay.store.grid import inflight_deliveries
from relay.store.runs import load_run

__all__ = ["router", "error_page"]

router = APIRouter()


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    """A page saying what was wrong with the request (``status``: 400, 404)."""
    return render(request, "error.html", status=status, status_code=status, message=message)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, state: StateDep, session: SessionDep,
          commits_: int = Query(30, alias="commits", ge=1, le=200)) -> HTMLResponse:
    settings = state.settings
    grid = grid_q.grid_json(session, commits=commits_, backend=settings.backend, upstream=settings.upstream_repo)
    names = [settings.backend] + [e.name for e in state.allowlist.get().external()]
    ready = [r for n in dict.fromkeys(names) if (r := backend_readiness(state, session, n))]
    inflight = len(inflight_deliveries(session))
    live = inflight > 0 or any(c["conclusion"] == "pending" for row in grid["rows"] for c in row["cells"].values())
    return render(request, "grid.html", grid=grid, readiness=ready, inflight=inflight, live=live,
                  json_url=f"/api/v1/grid?commits={commits_}")


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str, session: SessionDep, state: StateDep,
             test: str | None = Query(None, max_length=500), op: str | None = Query(None, max_length=200),
             verdict: str | None = Query(None, pattern=f"{VERDICT_PATTERN}|^$"),
             outcome: str | None = Query(None, max_length=30)) -> HTMLResponse:
    try:
        view = runs.run_view(session, run_id, test=test or None, op=op or None, verdict=verdict or None,
                             outcome=outcome or None)
    except RunNotFound:
        return error_page(request, 404, f"run not found: {run_id}")
    logs = run_logs(state.settings.state_dir, run_id)
    return render(request, "run.html", view=view, logs=logs, json_url=f"/api/v1/runs/{quote(run_id, safe='')}")


@router.get("/runs/{run_id}/logs/{path:path}")
def run_log(run_id: str, path: str, state: StateDep) -> Response:
    """A shard's raw ``pytest.log`` or ``junit.xml`` (``relay.service.queries.run_logs``)."""
    found = log_file(state.settings.state_dir, run_id, path)
    if found is None:
        return PlainTextResponse(f"no pytest.log or junit.xml {path!r} in run {run_id}\n", status_code=404)
    return FileResponse(found[0], media_type=found[1])


@router.get("/runs/{run_id}/spec-proposal.patch", response_class=PlainTextResponse)
def run_spec_proposal(run_id: str, session: SessionDep) -> PlainTextResponse:
    """The run's spec write-back as a patch file (``git apply`` it from the root it names)."""
    try:
        run = load_run(session, run_id)
    except RunNotFound:
        return PlainTextResponse(f"run not found: {run_id}\n", status_code=404)
    if not run.spec_proposal:
        return PlainTextResponse(f"run {run_id} proposed no spec edit\n", status_code=404)
    # text/plain (and nosniff, from ``relay.service.headers``): a browser shows it, never runs it
    return PlainTextResponse(run.spec_proposal, media_type="text/plain; charset=utf-8")


@router.get("/commits/{sha}", response_class=HTMLResponse)
def commit_page(request: Request, sha: str, state: StateDep, session: SessionDep) -> HTMLResponse:
    if not SHA.fullmatch(sha):
        return error_page(request, 400, "a commit is 7 to 64 hex characters")
    view = commits.commit_view(session, sha, state.settings.upstream_repo)
    return render(request, "commit.html", view=view, json_url=f"/api/v1/commits/{view['sha']}")


@router.get("/tests/history", response_class=HTMLResponse)
def test_page(request: Request, session: SessionDep, test: str = Query("", max_length=500),
              limit: int = Query(100, ge=1, le=1000)) -> HTMLResponse:
    if not test:
        return error_page(request, 400, "give a test id or upstream test name: /tests/history?test=ID")
    view = tests.test_view(session, test, limit)
    return render(request, "test.html", view=view, json_url=f"/api/v1/tests/history?test={quote(test, safe='')}")


@router.get("/tests", response_class=HTMLResponse)
def search_page(request: Request, session: SessionDep, test: str | None = Query(None, max_length=500),
                op: str | None = Query(None, max_length=200),
                verdict: str | None = Query(None, pattern=f"{VERDICT_PATTERN}|^$")) -> HTMLResponse:
    query = {"test": test or None, "op": op or None, "verdict": verdict or None}
    if not any(query.values()):
        return render(request, "search.html", query=query, found=[], runs_searched=0,
                      message="Search the newest runs' tests by part of a test id, an op or a verdict.")
    found = tests.search_json(session, limit=200, **query)
    return render(request, "search.html", query=query, found=found["tests"], runs_searched=found["runs_searched"],
                  message=None, json_url="/api/v1/tests?" + str(request.url.query))
