"""Re-running a downstream run from the upstream PR's check run (CRCR, newer than RFC-0050).

Rules (CRCR ``webhook/event_handler.py`` ``_handle_check_run_rerequested`` /
``_handle_check_suite_rerequested``, ``tests/test_event_handler.py::TestCheckRunRerun``):

* ``check_run`` ``rerequested`` on a check run named ``crcr/<owner>/<repo>/<workflow>/...``
  whose ``external_id`` is ``<run_id>`` or ``<run_id>:<pr>``, for a repo at L3 or L4 →
  ``POST /repos/<owner>/<repo>/actions/runs/<run_id>/rerun-failed-jobs`` (GitHub REST, "Re-run
  failed jobs from a workflow run").  Another name, an empty or non-numeric run id, or a repo
  below L3 → nothing.
* ``check_suite`` ``rerequested`` → the suite's check runs
  (``GET /repos/<upstream>/check-suites/<id>/check-runs``, 100 a page), and one rerun per
  distinct (repo, run id) among them as above.
* GitHub's 403 "… is already running" is benign (the run is already going again).  Other
  failures: for a single check run the error is raised (``GitHubAPIError``: the delivery is
  retried when transient, else ends ``failed`` with it); within a suite it is logged and the
  other runs still re-run (CRCR).

Each function is called once per processed ``check_run`` / ``check_suite`` delivery and returns
the ``(repo, run id)`` pairs re-run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from relay.crcr.allowlist import Allowlist
from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient

__all__ = ["crcr_target", "rerun_check_run", "rerun_check_suite", "rerun_failed_jobs"]

log = logging.getLogger(__name__)


def crcr_target(check_run: dict[str, Any], allowlist: Allowlist) -> tuple[str, int] | None:
    """``(repo, run id)`` a crcr check run points at when the repo is L3+, else ``None``."""
    parts = str(check_run.get("name") or "").split("/")
    if len(parts) < 4 or parts[0] != "crcr":
        return None
    repo = f"{parts[1]}/{parts[2]}"
    run_id = str(check_run.get("external_id") or "").split(":", 1)[0]
    if not run_id.isdigit() or allowlist.level_of(repo) not in ("L3", "L4"):
        return None
    return repo, int(run_id)


def rerun_failed_jobs(gh: GitHubClient, repo: str, run_id: int) -> bool:
    """``POST /repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs``; ``False`` when GitHub
    answers that the run is already running (403), ``True`` when asked; raises
    ``GitHubAPIError`` otherwise."""
    try:
        gh.request("POST", f"/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs")
    except GitHubAPIError as exc:
        if exc.status_code == 403 and "already running" in str(exc).lower():
            log.info("rerun of %s run %d: already running", repo, run_id)
            return False
        raise
    return True


def rerun_check_run(payload: dict[str, Any], allowlist: Allowlist,
                    github: Callable[[], GitHubClient]) -> list[tuple[str, int]]:
    """Re-run the failed jobs behind one rerequested crcr check run (module docstring)."""
    target = crcr_target(payload.get("check_run") or {}, allowlist)
    if target is None:
        return []
    with github() as gh:
        return [target] if rerun_failed_jobs(gh, *target) else []


def _suite_runs(gh: GitHubClient, upstream: str, suite_id: int) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for page in range(1, 31):  # GitHub lists at most 1,000 check runs per suite
        body = gh.get(f"/repos/{upstream}/check-suites/{suite_id}/check-runs",
                      {"per_page": 100, "page": page}).json()
        batch = body.get("check_runs") or []
        runs.extend(batch)
        if not batch or len(runs) >= int(body.get("total_count", len(runs))):
            break
    return runs


def rerun_check_suite(payload: dict[str, Any], allowlist: Allowlist,
                      github: Callable[[], GitHubClient]) -> list[tuple[str, int]]:
    """Re-run each distinct L3+ downstream run of a rerequested check suite (module docstring)."""
    suite_id = (payload.get("check_suite") or {}).get("id")
    upstream = str((payload.get("repository") or {}).get("full_name", ""))
    if not isinstance(suite_id, int) or isinstance(suite_id, bool):
        return []
    done: list[tuple[str, int]] = []
    with github() as gh:
        targets = [crcr_target(cr, allowlist) for cr in _suite_runs(gh, upstream, suite_id)]
        for target in dict.fromkeys(t for t in targets if t is not None):
            try:
                if rerun_failed_jobs(gh, *target):
                    done.append(target)
            except GitHubAPIError as exc:
                log.warning("rerun of %s run %d failed: %s", target[0], target[1], exc)
    return done
