"""From a typed event to the local backend's ``RunRequest`` (the ``run`` part of an entry of
``relay.worker.handlers.HANDLERS``).

* ``pull_request`` (actions opened/reopened/synchronize): the PR's files from the PR files API
  (``RELAY_GITHUB_API_URL``), ``ref`` = ``refs/pull/<n>/head``; other actions run nothing;
* ``push``: the files from the payload's ``commits[]`` lists (branch creations and deletions
  run nothing), then their patches from GitHub's compare API (``relay.github.compare``: per
  commit past its 300-file cap; file names only, with a note, when GitHub fails), so a push
  selects what the same change as a PR selects; ``ref`` = the pushed ref; the commits are kept
  for culprit bisection.

With ``RELAY_COMMIT_ENV`` set (``relay.envs.commits``) both become regression runs: head
environment = resolve(head / ``after``), base environment = resolve(base / ``before``).
Each builder raises ``GitHubAPIError`` for GitHub failures and ``CommitEnvError`` when a
commit's environment cannot be resolved.
"""

from __future__ import annotations

import logging

from relay.envs.commits import CommitEnvResolver, resolver_for
from relay.github.client import GitHubClient
from relay.github.compare import with_patches
from relay.github.constants import PR_RUN_ACTIONS, ZERO_SHA
from relay.github.events import PullRequestEvent, PushEvent, push_changeset
from relay.logs import delivery_log
from relay.pipeline.request import RunRequest
from relay.settings import Settings
from selection.models import ChangeSet

__all__ = ["pr_run_request", "push_run_request", "push_commits", "TIMELINE_COMMITS_CAP",
           "WEBHOOK_COMMITS_CAP"]

log = logging.getLogger(__name__)

#: GitHub docs (push payload): ``commits[]`` "includes a maximum of 20 commits … applied to
#: timeline events only"; webhook deliveries list up to 2,048.  A list of exactly 20 or of
#: 2,048+ may be cut, so it is re-read from the compare API.
TIMELINE_COMMITS_CAP = 20
WEBHOOK_COMMITS_CAP = 2048


def push_commits(event: PushEvent, settings: Settings) -> list[str] | None:
    """The pushed commits' shas, oldest → newest, ending with ``after`` — or ``None`` when they
    cannot be bisected: a forced push (``before`` is not an ancestor), a list that does not end
    at ``after``, or a list that may be cut (see ``TIMELINE_COMMITS_CAP``) and that the compare
    API could not complete."""
    shas = [c.id for c in event.commits if c.id]
    if event.forced:
        return None
    if len(shas) == TIMELINE_COMMITS_CAP or len(shas) >= WEBHOOK_COMMITS_CAP:
        with GitHubClient.from_settings(settings) as github:
            shas = github.compare_commits(event.repository.full_name, event.before, event.after,
                                          limit=WEBHOOK_COMMITS_CAP) or []
    if not shas or shas[-1] != event.after:
        return None
    return shas


def _request(changeset: ChangeSet, delivery_id: str, resolver: CommitEnvResolver | None, *,
             ref: str | None, commits: list[str] | None = None) -> RunRequest:
    """A webhook ``RunRequest``; with a commit → environment resolver, a regression run.
    Raises ``CommitEnvError`` when a commit's environment cannot be resolved."""
    envs = {}
    if resolver is not None:
        envs = {"head_env": resolver.resolve(changeset.head),
                "base_env": resolver.resolve(changeset.base)}
    return RunRequest(changeset=changeset, trigger="webhook", delivery_id=delivery_id, ref=ref,
                      commits=commits if resolver is not None else None, **envs)


def pr_run_request(event: PullRequestEvent, delivery_id: str, settings: Settings) -> RunRequest | None:
    """A run of the PR's new head; other actions (closed, labeled, ...) run nothing."""
    if event.action not in PR_RUN_ACTIONS:
        delivery_log(log, delivery_id).info("pull_request action %r runs nothing", event.action)
        return None
    pr = event.pull_request
    repo = event.repository.full_name
    with GitHubClient.from_settings(settings) as github:
        files = github.list_pr_files(repo, event.number)
    changeset = ChangeSet(upstream=repo, base=pr.base.sha, head=pr.head.sha, title=pr.title,
                          labels=[label.name for label in pr.labels], files=files)
    return _request(changeset, delivery_id, resolver_for(settings.commit_env),
                    ref=f"refs/pull/{event.number}/head")


def push_run_request(event: PushEvent, delivery_id: str, settings: Settings) -> RunRequest | None:
    """A run of ``before..after`` of a push; branch creations and deletions run nothing."""
    if event.deleted or event.after == ZERO_SHA or event.before == ZERO_SHA:
        delivery_log(log, delivery_id).info("push creating/deleting %s runs nothing", event.ref)
        return None
    resolver = resolver_for(settings.commit_env)
    commits = push_commits(event, settings) if resolver is not None else None
    with GitHubClient.from_settings(settings) as github:
        changeset = with_patches(push_changeset(event), github)
    return _request(changeset, delivery_id, resolver, ref=event.ref, commits=commits)
