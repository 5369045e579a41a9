"""From a stored delivery to a ``RunRequest``: one small function per event (Zuul's
``GithubEventProcessor`` habit), picked from ``HANDLERS`` by the event name.

* ``pull_request`` (actions opened/reopened/synchronize): the PR's files from the PR files API
  (``RELAY_GITHUB_API_URL``), ``ref`` = ``refs/pull/<n>/head``;
* ``push``: the files from the payload's ``commits[]`` lists (branch creations and deletions
  skipped), then their patches from GitHub's compare API (``relay.github.compare``: per commit
  past its 300-file cap; file names only, with a note, when GitHub fails), so a push selects
  what the same change as a PR selects; ``ref`` = the pushed ref; the commits are kept for
  culprit bisection;
* anything else: nothing to run (``None``).

With ``RELAY_COMMIT_ENV`` set (``relay.envs.commits``) both become regression runs: head
environment = resolve(head / ``after``), base environment = resolve(base / ``before``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from relay.domain.delivery import Delivery
from relay.envs.commits import CommitEnvResolver, resolver_for
from relay.github.client import GitHubClient
from relay.github.compare import with_patches
from relay.github.webhooks import PR_RUN_ACTIONS, PullRequestEvent, PushEvent, push_changeset
from relay.logs import delivery_log
from relay.pipeline.request import RunRequest
from relay.settings import Settings
from selection.models import ChangeSet

__all__ = ["HANDLERS", "request_for", "on_pull_request", "on_push", "push_commits",
           "TIMELINE_COMMITS_CAP", "WEBHOOK_COMMITS_CAP"]

log = logging.getLogger(__name__)

Handler = Callable[[Delivery, Settings], "RunRequest | None"]
ZERO_SHA = "0" * 40
#: GitHub docs (push payload): ``commits[]`` "includes a maximum of 20 commits … applied to
#: timeline events only"; webhook deliveries list up to 2,048.  A list of exactly 20 or of
#: 2,048+ may be cut, so it is re-read from the compare API.
TIMELINE_COMMITS_CAP = 20
WEBHOOK_COMMITS_CAP = 2048


def push_commits(event: PushEvent, settings: Settings, *, forced: bool = False) -> list[str] | None:
    """The pushed commits' shas, oldest → newest, ending with ``after`` — or ``None`` when they
    cannot be bisected: a forced push (``before`` is not an ancestor), a list that does not end
    at ``after``, or a list that may be cut (see ``TIMELINE_COMMITS_CAP``) and that the compare
    API could not complete."""
    shas = [c.id for c in event.commits if c.id]
    if forced:
        return None
    if len(shas) == TIMELINE_COMMITS_CAP or len(shas) >= WEBHOOK_COMMITS_CAP:
        with GitHubClient.from_settings(settings) as github:
            shas = github.compare_commits(event.repository.full_name, event.before, event.after,
                                          limit=WEBHOOK_COMMITS_CAP) or []
    if not shas or shas[-1] != event.after:
        return None
    return shas


def _request(changeset: ChangeSet, delivery: Delivery, resolver: CommitEnvResolver | None, *,
             ref: str | None, commits: list[str] | None = None) -> RunRequest:
    """A webhook ``RunRequest``; with a commit → environment resolver, a regression run.
    Raises ``CommitEnvError`` when a commit's environment cannot be resolved."""
    envs = {}
    if resolver is not None:
        envs = {"head_env": resolver.resolve(changeset.head),
                "base_env": resolver.resolve(changeset.base)}
    return RunRequest(changeset=changeset, trigger="webhook", delivery_id=delivery.id, ref=ref,
                      commits=commits if resolver is not None else None, **envs)


def on_pull_request(delivery: Delivery, settings: Settings) -> RunRequest | None:
    """A run of the PR's new head; other actions (closed, labeled, ...) run nothing."""
    event = PullRequestEvent.model_validate(delivery.payload)
    if event.action not in PR_RUN_ACTIONS:
        delivery_log(log, delivery.id).info("pull_request action %r runs nothing", event.action)
        return None
    pr = event.pull_request
    repo = event.repository.full_name
    with GitHubClient.from_settings(settings) as github:
        files = github.list_pr_files(repo, event.number)
    changeset = ChangeSet(upstream=repo, base=pr.base.sha, head=pr.head.sha, title=pr.title,
                          labels=[label.name for label in pr.labels], files=files)
    return _request(changeset, delivery, resolver_for(settings.commit_env),
                    ref=f"refs/pull/{event.number}/head")


def on_push(delivery: Delivery, settings: Settings) -> RunRequest | None:
    """A run of ``before..after`` of a push; branch creations and deletions run nothing."""
    event = PushEvent.model_validate(delivery.payload)
    if event.deleted or event.after == ZERO_SHA or event.before == ZERO_SHA:
        delivery_log(log, delivery.id).info("push creating/deleting %s runs nothing", event.ref)
        return None
    resolver = resolver_for(settings.commit_env)
    commits = (push_commits(event, settings, forced=bool(delivery.payload.get("forced")))
               if resolver is not None else None)
    with GitHubClient.from_settings(settings) as github:
        changeset = with_patches(push_changeset(event), github)
    return _request(changeset, delivery, resolver, ref=event.ref, commits=commits)


HANDLERS: dict[str, Handler] = {"pull_request": on_pull_request, "push": on_push}


def request_for(delivery: Delivery, settings: Settings) -> RunRequest | None:
    """The run ``delivery`` asks for, or ``None`` (an event or action that runs nothing).
    Raises for a malformed payload (``pydantic.ValidationError``), GitHub failures
    (``GitHubAPIError``) and ``CommitEnvError``."""
    handler = HANDLERS.get(delivery.event)
    return handler(delivery, settings) if handler is not None else None
