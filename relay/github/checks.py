"""GitHub check runs and issue comments, the two ways L3/L4 results reach the upstream PR.

Rule sources (GitHub REST docs): ``POST /repos/{o}/{r}/check-runs`` (``name``, ``head_sha``,
``status`` queued|in_progress|completed, ``conclusion`` required when completed — success,
failure, neutral, cancelled, skipped, timed_out, action_required — ``external_id``,
``details_url``, ``output{title, summary}``), ``PATCH /repos/{o}/{r}/check-runs/{id}``;
``GET /repos/{o}/{r}/issues/{n}/comments`` (paginated, ``per_page`` ≤ 100),
``POST`` the same path, ``PATCH /repos/{o}/{r}/issues/comments/{id}``.
"""

from __future__ import annotations

from typing import Any

from relay.github.client import GitHubClient

__all__ = ["CHECK_CONCLUSIONS", "create_check_run", "update_check_run", "upsert_marked_comment"]

CHECK_CONCLUSIONS = frozenset({"success", "failure", "neutral", "cancelled", "skipped",
                               "timed_out", "action_required"})


def create_check_run(gh: GitHubClient, repo: str, fields: dict[str, Any]) -> int:
    """Create a check run on ``repo`` with ``fields`` (must hold name and head_sha); its id."""
    return int(gh.request("POST", f"/repos/{repo}/check-runs", json=fields).json()["id"])


def update_check_run(gh: GitHubClient, repo: str, check_run_id: int,
                     fields: dict[str, Any]) -> None:
    """Update check run ``check_run_id`` of ``repo`` with ``fields``."""
    gh.request("PATCH", f"/repos/{repo}/check-runs/{check_run_id}", json=fields)


def upsert_marked_comment(gh: GitHubClient, repo: str, number: int, marker: str,
                          body: str) -> tuple[int, bool]:
    """Edit the comment on issue/PR ``number`` whose body contains ``marker`` (a hidden HTML
    comment), or create one; ``body`` must contain ``marker``.  Returns (comment id, created).
    """
    if marker not in body:
        raise ValueError("the comment body must contain its marker")
    url: str | None = f"/repos/{repo}/issues/{number}/comments"
    params: dict[str, Any] | None = {"per_page": 100}
    while url is not None:
        resp = gh.get(url, params=params)
        for comment in resp.json():
            if marker in (comment.get("body") or ""):
                gh.request("PATCH", f"/repos/{repo}/issues/comments/{comment['id']}",
                           json={"body": body})
                return int(comment["id"]), False
        url, params = resp.links.get("next", {}).get("url"), None
    created = gh.request("POST", f"/repos/{repo}/issues/{number}/comments", json={"body": body})
    return int(created.json()["id"]), True
