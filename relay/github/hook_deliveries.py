"""A repository webhook's delivery log on GitHub: list the attempts, ask for a redelivery.

Rule source (GitHub REST docs, "REST API endpoints for repository webhooks" and "Handling
failed webhook deliveries"):

* ``GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries`` lists delivery *attempts*, newest
  first, with cursor pagination: ``per_page`` ≤ 100 (default 30) and ``cursor`` taken from the
  ``Link`` header's ``rel="next"`` URL.  Each entry (``hook-delivery-item``) carries ``id`` (of
  the attempt), ``guid`` (the ``X-GitHub-Delivery`` header; every redelivery of an event keeps
  it), ``delivered_at``, ``redelivery``, ``duration`` (s), ``status`` (``"OK"`` or a reason such
  as ``"failed to connect"``), ``status_code`` (the answer's HTTP status, 0 when there was no
  answer), ``event``, ``action``, ``installation_id``, ``repository_id``, ``throttled_at``.
* ``POST /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts`` asks GitHub
  to send that delivery again (202 Accepted; the send itself happens asynchronously).
* GitHub never retries a failed delivery by itself, and only the past 3 days can be redelivered
  (``DELIVERY_WINDOW``).  Repository hooks need a token with admin rights on the repository;
  GitHub answers 404 for a hook that does not exist *or* that the token may not see.

GitHub Apps have the same pair under ``/app/hook/deliveries`` and
``/app/hook/deliveries/{delivery_id}/attempts``, authenticated with the app's JWT instead of a
token; only the repository-hook form is built here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict

from relay.errors import GitHubAPIError, HookNotFound
from relay.github.client import PER_PAGE, GitHubClient

__all__ = [
    "DELIVERY_WINDOW",
    "HookDelivery",
    "HookNotFound",
    "list_hook_deliveries",
    "redeliver",
    "check_repo",
]

#: How far back GitHub keeps deliveries that can be redelivered (github.com; GHES keeps 7 days).
DELIVERY_WINDOW = timedelta(days=3)
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class HookDelivery(BaseModel):
    """One delivery attempt as GitHub lists it (``hook-delivery-item``); unknown keys ignored.

    ``duration`` is in seconds; ``status_code`` is 0 when the receiver gave no answer
    (connection refused, timeout)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: int
    guid: str
    delivered_at: datetime
    redelivery: bool = False
    duration: float | None = None
    status: str = ""
    status_code: int = 0
    event: str
    action: str | None = None
    installation_id: int | None = None
    repository_id: int | None = None
    throttled_at: datetime | None = None

    @property
    def succeeded(self) -> bool:
        """Whether the receiver answered 2xx (anything else, 0 included, is a failed attempt)."""
        return 200 <= self.status_code < 300


def check_repo(repo: str) -> str:
    """``repo`` if it reads ``owner/name``; raises ``ValueError`` naming the bad value."""
    if not _REPO.fullmatch(repo or ""):
        raise ValueError(f"repository must be owner/name, not {repo!r}")
    return repo


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def list_hook_deliveries(github: GitHubClient, repo: str, hook_id: int, *,
                         since: datetime | None = None, now: datetime | None = None,
                         per_page: int = PER_PAGE) -> list[HookDelivery]:
    """Every attempt of hook ``hook_id`` on ``repo`` delivered at or after ``since``, newest
    first.

    ``since`` defaults to ``now`` (default: the current UTC time) minus ``DELIVERY_WINDOW``; a
    naive datetime is taken as UTC.  Pages of ``per_page`` (≤ 100) entries are fetched only
    until the first entry older than ``since`` (GitHub lists newest first).  Raises
    ``ValueError`` for a malformed ``repo``, ``HookNotFound`` for a 404, ``GitHubAPIError``
    for any other refusal (5xx/429 are retried by ``GitHubClient`` first).
    """
    check_repo(repo)
    now = _utc(now or datetime.now(UTC))
    since = _utc(since) if since is not None else now - DELIVERY_WINDOW
    url = f"/repos/{repo}/hooks/{hook_id}/deliveries"
    found: list[HookDelivery] = []
    try:
        for page in github.pages(url, {"per_page": max(1, min(per_page, PER_PAGE))}):
            for item in page:
                entry = HookDelivery.model_validate(item)
                if _utc(entry.delivered_at) < since:
                    return found
                found.append(entry)
            if not page:
                break
    except GitHubAPIError as exc:
        if exc.status_code == 404:
            raise HookNotFound(repo, hook_id, exc.url) from None
        raise
    return found


def redeliver(github: GitHubClient, repo: str, hook_id: int, delivery_id: int) -> None:
    """Ask GitHub to send attempt ``delivery_id`` of hook ``hook_id`` again (202; GitHub sends
    it asynchronously, with the same ``X-GitHub-Delivery`` guid).  Raises ``ValueError`` for a
    malformed ``repo`` and ``GitHubAPIError`` when GitHub refuses (404: unknown hook or attempt;
    422: e.g. a delivery older than GitHub keeps); 5xx/429 are retried by ``GitHubClient``."""
    check_repo(repo)
    github.request("POST", f"/repos/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts")
