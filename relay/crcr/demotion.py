"""L3 demotion while a demotion PR is open upstream (CRCR ``utils/demotion.py``).

CRCR's level-sync workflow opens a pull request on the upstream, from the branch
``crcr-demotion/<org>/<repo>``, that moves an L3 repo to L2.  While it is open the relay creates
no *new* upstream check runs for that repo — as if it were L2 already — while dispatches and
dashboard results go on (still stamped L3).  A job that started before the demotion still gets
its check run finished (else the one shown in progress would hang).

``reconcile`` runs with every sweep (``relay.crcr.sweeper``): for each L3 repo it lists the
upstream's open PRs with ``head=<upstream owner>:crcr-demotion/<org>/<repo>`` (GitHub REST
``GET /repos/{o}/{r}/pulls?state=open&head=…``); open → demoted (first time kept); none → the
allowlist is re-read *first* (a merged demotion PR means L2 now, and a stale cached L3 would
otherwise get check runs again), then the demotion ends; if the re-read fails it stays.  A repo
whose PRs cannot be listed is left as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.allowlist import Allowlist
from relay.github.client import GitHubClient
from relay.store.demotions import clear_demotion, demoted_since, set_demotion
from relay.store.tables import as_utc

__all__ = ["BRANCH_PREFIX", "suppressed", "reconcile"]

log = logging.getLogger(__name__)
BRANCH_PREFIX = "crcr-demotion/"


def suppressed(session: Session, level: str | None, repo: str,
               job_started_at: datetime | None = None) -> bool:
    """Whether new upstream check runs of ``repo`` (at ``level``) are held back: an L3 repo
    under demotion, for a job started at or after the demotion (``None``: now — a new job, a
    label, a re-run)."""
    if level != "L3":
        return False
    since = demoted_since(session, repo)
    return since is not None and (job_started_at is None or as_utc(job_started_at) >= since)


def _open_demotion_pr(gh: GitHubClient, upstream: str, repo: str) -> int | None:
    owner = upstream.split("/", 1)[0]
    pulls = gh.get(f"/repos/{upstream}/pulls",
                   {"state": "open", "head": f"{owner}:{BRANCH_PREFIX}{repo}", "per_page": 10}).json()
    return int(pulls[0]["number"]) if pulls else None


def reconcile(session_factory: sessionmaker[Session], allowlist: Callable[[], Allowlist],
              refresh: Callable[[], object] | None, github: Callable[[], GitHubClient],
              upstream: str) -> dict[str, bool]:
    """Record which L3 repos have an open demotion PR (module docstring); returns
    ``{repo: demoted}`` for the repos it could decide.  ``refresh`` re-reads the allowlist
    (``None``: a fixed allowlist)."""
    repos = [e.name for e in allowlist().external() if e.level == "L3"]
    decided: dict[str, bool] = {}
    if not repos:
        return decided
    with github() as gh, session_factory() as session:
        for repo in repos:
            try:
                number = _open_demotion_pr(gh, upstream, repo)
                if number is None and demoted_since(session, repo) is not None and refresh:
                    refresh()
            except Exception as exc:  # noqa: BLE001 - GitHub or the allowlist: left as it is
                log.warning("demotion reconcile: %s left as it is: %s", repo, exc)
                continue
            if number is not None:
                set_demotion(session, repo, number)
            else:
                clear_demotion(session, repo)
            decided[repo] = number is not None
    return decided
