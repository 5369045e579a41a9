"""The CRCR side of the fake GitHub: re-running a workflow run's failed jobs, a check suite's
check runs, a repository's commits and its open pull requests by head branch.  Mixed into
``tests.fakes.github.FakeGitHub`` (uses its ``check_runs``), with GitHub's answers:

* ``POST /repos/{o}/{r}/actions/runs/{id}/rerun-failed-jobs`` (recorded in ``reruns``) and
  ``POST …/{id}/rerun`` (the whole run, recorded in ``whole_reruns``) → 201; 403 ``"… is
  already running"`` for a run id in ``running``;
* ``GET /repos/{o}/{r}/check-suites/{id}/check-runs`` → ``{"total_count", "check_runs"}`` paged
  by ``per_page``/``page`` (runs of ``suites[id]``, by id from ``check_runs``);
* ``GET /repos/{o}/{r}/commits/{sha}`` → 200 for a sha in ``commits[repo]``, else 404 (422 for
  a malformed sha); ``commit_fail`` statuses are answered first;
* ``GET /repos/{o}/{r}/pulls?state=open&head=owner:branch`` → the open PRs of that head
  (``open_pulls[(repo, head)]`` = PR number).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

__all__ = ["CrcrRoutes"]

_SHA = re.compile(r"[0-9a-fA-F]{7,64}")


class CrcrRoutes:
    """Routes and state of the CRCR part of the fake (see the module docstring)."""

    def _crcr_state(self) -> None:
        if not hasattr(self, "reruns"):
            #: ``(repo, run_id)`` per accepted rerun-failed-jobs request
            self.reruns: list[tuple[str, int]] = []
            #: ``(repo, run_id)`` per accepted re-run of a whole run (``…/rerun``)
            self.whole_reruns: list[tuple[str, int]] = []
            self.running: set[int] = set()
            self.suites: dict[int, list[int]] = {}
            self.commits: dict[str, set[str]] = {}
            self.commit_fail: list[int] = []
            self.commit_lookups: list[str] = []
            self.open_pulls: dict[tuple[str, str], int] = {}

    def _crcr_routes(self, app: FastAPI, record: Any) -> None:
        self._crcr_state()

        def rerun_into(done: list[tuple[str, int]], owner: str, name: str, run_id: int,
                       request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            if run_id in self.running:
                return JSONResponse({"message": f"The workflow run {run_id} is already running."},
                                    status_code=403)
            done.append((f"{owner}/{name}", run_id))
            return JSONResponse({}, status_code=201)

        @app.post("/repos/{owner}/{name}/actions/runs/{run_id}/rerun-failed-jobs")
        def rerun(owner: str, name: str, run_id: int, request: Request) -> JSONResponse:
            return rerun_into(self.reruns, owner, name, run_id, request)

        @app.post("/repos/{owner}/{name}/actions/runs/{run_id}/rerun")
        def rerun_whole(owner: str, name: str, run_id: int, request: Request) -> JSONResponse:
            return rerun_into(self.whole_reruns, owner, name, run_id, request)

        @app.get("/repos/{owner}/{name}/check-suites/{suite_id}/check-runs")
        def suite_runs(owner: str, name: str, suite_id: int, request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            ids = self.suites.get(suite_id, [])
            per_page = min(int(request.query_params.get("per_page", 30)), 100)
            page = max(int(request.query_params.get("page", 1)), 1)
            chunk = ids[(page - 1) * per_page: page * per_page]
            runs = [{"id": i, **self.check_runs[i]} for i in chunk]
            return JSONResponse({"total_count": len(ids), "check_runs": runs})

        @app.get("/repos/{owner}/{name}/commits/{sha}")
        def commit(owner: str, name: str, sha: str, request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            self.commit_lookups.append(sha)
            if self.commit_fail:
                return JSONResponse({"message": "fake"}, status_code=self.commit_fail.pop(0))
            files = getattr(self, "commit_files", {}).get((f"{owner}/{name}", sha))
            if files is not None:  # a commit with its files (``FakeGitHub.commit_files``)
                files = files[:3000]
                page = max(int(request.query_params.get("page", 1)), 1)
                headers = {}
                if page * 300 < len(files):
                    headers["Link"] = f'<{request.url.include_query_params(page=page + 1)}>; rel="next"'
                return JSONResponse({"sha": sha, "files": files[(page - 1) * 300: page * 300]},
                                    headers=headers)
            if not _SHA.fullmatch(sha):
                return JSONResponse({"message": "No commit found for SHA"}, status_code=422)
            if sha in self.commits.get(f"{owner}/{name}", set()):
                return JSONResponse({"sha": sha, "commit": {"message": "x"}})
            return JSONResponse({"message": "Not Found"}, status_code=404)

        @app.get("/repos/{owner}/{name}/pulls")
        def pulls(owner: str, name: str, request: Request) -> JSONResponse:
            if (failed := record(request)) is not None:
                return failed
            head = request.query_params.get("head", "")
            number = self.open_pulls.get((f"{owner}/{name}", head))
            return JSONResponse([{"number": number, "state": "open", "head": {"ref": head}}]
                                if number is not None else [])
