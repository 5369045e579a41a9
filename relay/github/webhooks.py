"""Typed views of the GitHub webhook payload parts the relay reads (the stored delivery itself is
``relay.domain.delivery.Delivery``).

Vendor JSON becomes our own typed event at the edge (Zuul's ``GithubEventProcessor`` habit).
Field sources: GitHub docs, "Webhook events and payloads" — ``pull_request`` carries
``action``, ``number``, ``pull_request.{head.sha, base.sha, base.ref, labels, merged, title}``
and no file list (fetch it from the PR files API); ``push`` carries ``before``, ``after``,
``ref`` and ``commits[]`` with ``added``/``removed``/``modified`` path lists.  Unknown keys are
ignored everywhere so new GitHub fields never break intake.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from selection.models import ChangedFile, ChangeSet

__all__ = [
    "Repository",
    "Label",
    "Ref",
    "PullRequest",
    "PullRequestEvent",
    "PushCommit",
    "PushEvent",
    "PingEvent",
    "HANDLED_EVENTS",
    "EVENT_ACTIONS",
    "PR_ACTIONS",
    "PR_RUN_ACTIONS",
    "PR_DISPATCH_ACTIONS",
    "CRCR_LABEL_PREFIX",
    "is_handled",
    "ignored_reason",
    "intake_status",
    "payload_problem",
    "push_changeset",
    "PR_NUMBER_MAX",
]

#: Events the relay processes; others are recorded as ``ignored`` (design §5).
HANDLED_EVENTS = frozenset({"pull_request", "push", "check_run", "check_suite", "ping"})
#: ``pull_request`` actions dispatched downstream (CRCR ``_PULL_REQUEST_ALLOW_ACTIONS``).
PR_DISPATCH_ACTIONS = frozenset({"opened", "reopened", "synchronize", "closed"})
#: ``pull_request`` actions handled: the dispatched ones, and ``labeled`` with a ``ciflow/crcr/``
#: label (it only starts the L3 check runs of that device; CRCR).
PR_ACTIONS = PR_DISPATCH_ACTIONS | {"labeled"}
#: ``pull_request`` actions on which the local backend runs the pipeline (a new head).
PR_RUN_ACTIONS = frozenset({"opened", "reopened", "synchronize"})
#: the label prefix whose ``labeled`` events start L3 check runs (``ciflow/crcr/<device>``)
CRCR_LABEL_PREFIX = "ciflow/crcr/"
#: event → the actions handled (``None``: every action).  Anything else is stored ``ignored``.
EVENT_ACTIONS: dict[str, frozenset[str] | None] = {
    "pull_request": PR_ACTIONS,
    "push": None,
    "check_run": frozenset({"rerequested"}),
    "check_suite": frozenset({"rerequested"}),
    "ping": None,
}


def is_handled(event: str, action: str | None) -> bool:
    """Whether (``event``, ``action``) is of a kind the relay processes (before looking at the
    payload; ``ignored_reason`` looks at it too)."""
    if event not in EVENT_ACTIONS:
        return False
    actions = EVENT_ACTIONS[event]
    return actions is None or action in actions


def ignored_reason(event: str, payload: dict[str, Any], upstream: str) -> str | None:
    """Why a delivery is acknowledged but not processed, or ``None`` when it is processed.

    Rules (CRCR ``webhook/lambda_function.py``, ``webhook/event_handler.py``): only events of the
    ``upstream`` repository count (``repository.full_name`` compared case-insensitively;
    ``ping`` is answered whatever its repository); ``pull_request`` opened / reopened /
    synchronize / closed, every ``push``, ``check_run`` and ``check_suite`` ``rerequested``, and
    ``labeled`` with a ``ciflow/crcr/<device>`` label are processed; other actions and labels are
    ignored."""
    if event == "ping":
        return None
    action = payload.get("action")
    action = action if isinstance(action, str) else None
    if not is_handled(event, action):
        return f"{event}{'.' + action if action else ''} is not an event the relay acts on"
    repo = payload.get("repository")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    if not isinstance(name, str) or name.lower() != upstream.lower():
        return f"repository {str(name)[:200]!r} is not the upstream {upstream}"
    if event == "pull_request" and action == "labeled":
        label = payload.get("label")
        label_name = label.get("name") if isinstance(label, dict) else None
        if not isinstance(label_name, str) or not label_name.startswith(CRCR_LABEL_PREFIX):
            return f"label {str(label_name)[:200]!r} is not a {CRCR_LABEL_PREFIX}<device> label"
    return None


def intake_status(event: str, payload: dict[str, Any], upstream: str) -> str:
    """The status a delivery is stored with: ``processed`` for ``ping``, ``ignored`` when
    ``ignored_reason`` gives one, else ``received`` (queued for processing)."""
    if event == "ping":
        return "processed"
    return "ignored" if ignored_reason(event, payload, upstream) else "received"

_IGNORE = ConfigDict(extra="ignore", frozen=True)


class Repository(BaseModel):
    model_config = _IGNORE
    full_name: str


class Label(BaseModel):
    model_config = _IGNORE
    name: str


class Ref(BaseModel):
    """``pull_request.head`` / ``pull_request.base``: a commit sha on a branch."""

    model_config = _IGNORE
    sha: str
    ref: str = ""


class PullRequest(BaseModel):
    model_config = _IGNORE
    number: int | None = None
    title: str = ""
    head: Ref
    base: Ref
    labels: list[Label] = Field(default_factory=list)
    merged: bool | None = None


#: PR numbers are stored in 32-bit integer columns (dispatches, jobs, check runs)
PR_NUMBER_MAX = 2**31 - 1


class PullRequestEvent(BaseModel):
    """The ``pull_request`` webhook payload (the parts we read); ``number`` is 1 ..
    ``PR_NUMBER_MAX``."""

    model_config = _IGNORE
    action: str
    number: int = Field(ge=1, le=PR_NUMBER_MAX)
    pull_request: PullRequest
    repository: Repository
    label: Label | None = None


class PushCommit(BaseModel):
    model_config = _IGNORE
    id: str = ""
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)


class PushEvent(BaseModel):
    """The ``push`` webhook payload (the parts we read); ``commits`` holds at most 2,048 entries."""

    model_config = _IGNORE
    ref: str
    before: str
    after: str
    commits: list[PushCommit] = Field(default_factory=list)
    repository: Repository
    deleted: bool = False


class PingEvent(BaseModel):
    """The ``ping`` payload sent when a hook is created."""

    model_config = _IGNORE
    zen: str = ""
    hook_id: int | None = None


#: the typed view each processed event must fit (``payload_problem``)
_EVENT_MODELS: dict[str, type[BaseModel]] = {"pull_request": PullRequestEvent, "push": PushEvent}


def payload_problem(event: str, payload: dict[str, Any]) -> str | None:
    """Why ``payload`` is not the shape GitHub sends for ``event`` (the fields the relay reads,
    ``PullRequestEvent`` / ``PushEvent``), in one line per field — or ``None`` when it fits (or
    ``event`` has no typed view).  A delivery with a problem ends ``failed`` with it: the same
    bytes would fail every retry."""
    model = _EVENT_MODELS.get(event)
    if model is None:
        return None
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        parts = [f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}"
                 for err in exc.errors(include_url=False, include_input=False)[:5]]
        return f"{event} payload: " + "; ".join(parts)
    return None


def push_changeset(event: PushEvent) -> ChangeSet:
    """A ``ChangeSet`` for ``before..after`` built from the commits' path lists.

    A path's final status is taken from the last commit touching it, except that a path added
    earlier in the same push stays ``added`` when later modified, and a path added then removed
    is dropped.  No ``patch`` text: push payloads carry none.
    """
    status: dict[str, str] = {}
    for commit in event.commits:
        for path in commit.added:
            status[path] = "added"
        for path in commit.modified:
            status[path] = "added" if status.get(path) == "added" else "modified"
        for path in commit.removed:
            if status.get(path) == "added":
                del status[path]
            else:
                status[path] = "removed"
    files = [ChangedFile(filename=p, status=s) for p, s in sorted(status.items())]  # type: ignore[arg-type]
    return ChangeSet(
        upstream=event.repository.full_name,
        base=event.before,
        head=event.after,
        title=f"push to {event.ref}",
        files=files,
    )
