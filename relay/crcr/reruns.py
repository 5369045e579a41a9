"""Re-running a downstream run from the upstream PR's check run (CRCR, newer than RFC-0050).

Rules (CRCR ``webhook/event_handler.py`` ``_handle_check_run_rerequested`` /
``_handle_check_suite_rerequested``, ``tests/test_event_handler.py::TestCheckRunRerun``):

* ``check_run`` ``rerequested`` on a check run named ``crcr/<owner>/<repo>/<workflow>/...``
  whose ``external_id`` is ``<run_id>`` or ``<run_id>:<pr>``, for a repo at L3 or L4 →
  ``POST /repos/<owner>/<repo>/actions/runs/<run_id>/rerun-failed-jobs`` (GitHub REST, "Re-run
  failed jobs from a workflow run").  Another name, an empty or non-numeric run id, or a repo
  below L3 → nothing.
* ``check_suite`` ``rerequested`` ("Re-run all checks") → the suite's check runs
  (``GET /repos/<upstream>/check-suites/<id>/check-runs``, 100 a page), and per distinct L3+
  (repo, run id) among them one re-run of the *whole* run:
  ``POST /repos/<owner>/<repo>/actions/runs/<run_id>/rerun`` (CRCR ``utils/gh_helper.py``
  ``rerun_workflow_run``: it re-runs jobs that succeeded too, so re-running all checks of a
  green run re-runs them; ``rerun-failed-jobs`` would re-run nothing).
* GitHub's 403 "… is already running" is benign (the run is already going again).  Other
  failures: for a single check run the error is raised (``GitHubAPIError``: the delivery is
  retried when transient, else ends ``failed`` with it); within a suite it is logged and the
  other runs still re-run (CRCR).

Each function is called once per processed ``check_run`` / ``check_suite`` delivery (the
``rerun`` of its entry in ``relay.worker.handlers``) with its typed event, and returns the
``(repo, run id)`` pairs re-run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from relay.crcr.allowlist import Allowlist
from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from relay.github.events import CheckRun, CheckRunEvent, CheckSuiteEvent

__all__ = ["crcr_target", "rerun_check_run", "rerun_check_suite", "rerun_failed_jobs",
           "rerun_workflow_run"]

log = logging.getLogger(__name__)


def crcr_target(check_run: CheckRun, allowlist: Allowlist) -> tuple[str, int] | None:
    """``(repo, run id)`` a crcr check run points at when the repo is L3+, else ``None``."""
    parts = check_run.name.split("/")
    if len(parts) < 4 or parts[0] != "crcr":
        return None
    repo = f"{parts[1]}/{parts[2]}"
    run_id = check_run.external_id.split(":", 1)[0]
    if not run_id.isdigit() or allowlist.level_of(repo) not in ("L3", "L4"):
        return None
    return repo, int(run_id)


def _rerun(gh: GitHubClient, repo: str, run_id: int, what: str) -> bool:
    """``POST /repos/{repo}/actions/runs/{run_id}/{what}``; ``False`` when GitHub answers that
    the run is already running (403), ``True`` when asked; raises ``GitHubAPIError`` otherwise."""
    try:
        gh.request("POST", f"/repos/{repo}/actions/runs/{run_id}/{what}")
    except GitHubAPIError as exc:
        if exc.status_code == 403 and "already running" in str(exc).lower():
            log.info("rerun of %s run %d: already running", repo, run_id)
            return False
        raise
    return True


def rerun_failed_jobs(gh: GitHubClient, repo: str, run_id: int) -> bool:
    """Re-run the failed jobs of one downstream run (``…/rerun-failed-jobs``; see ``_rerun``)."""
    return _rerun(gh, repo, run_id, "rerun-failed-jobs")


def rerun_workflow_run(gh: GitHubClient, repo: str, run_id: int) -> bool:
    """Re-run every job of one downstream run (``…/rerun``; see ``_rerun``)."""
    return _rerun(gh, repo, run_id, "rerun")


def rerun_check_run(event: CheckRunEvent, allowlist: Allowlist,
                    github: Callable[[], GitHubClient]) -> list[tuple[str, int]]:
    """Re-run the failed jobs behind one rerequested crcr check run (module docstring)."""
    target = crcr_target(event.check_run, allowlist)
    if target is None:
        return []
    with github() as gh:
        return [target] if rerun_failed_jobs(gh, *target) else []


def _suite_runs(gh: GitHubClient, upstream: str, suite_id: int) -> list[CheckRun]:
    """The suite's check runs (GitHub REST ``GET /repos/{upstream}/check-suites/{id}/check-runs``,
    100 a page, at most 30 pages)."""
    runs: list[CheckRun] = []
    for page in range(1, 31):  # GitHub lists at most 1,000 check runs per suite
        body = gh.get(f"/repos/{upstream}/check-suites/{suite_id}/check-runs",
                      {"per_page": 100, "page": page}).json()
        batch = body.get("check_runs") or []
        runs.extend(CheckRun.model_validate(item) for item in batch)
        if not batch or len(runs) >= int(body.get("total_count", len(runs))):
            break
    return runs


def rerun_check_suite(event: CheckSuiteEvent, allowlist: Allowlist,
                      github: Callable[[], GitHubClient]) -> list[tuple[str, int]]:
    """Re-run each distinct L3+ downstream run of a rerequested check suite, whole (module
    docstring)."""
    suite_id, upstream = event.check_suite.id, event.repository.full_name
    if suite_id is None:
        return []
    done: list[tuple[str, int]] = []
    with github() as gh:
        targets = [crcr_target(cr, allowlist) for cr in _suite_runs(gh, upstream, suite_id)]
        for target in dict.fromkeys(t for t in targets if t is not None):
            try:
                if rerun_workflow_run(gh, *target):
                    done.append(target)
            except GitHubAPIError as exc:
                log.warning("rerun of %s run %d failed: %s", target[0], target[1], exc)
    return done
