"""GitHub webhook payloads as our own typed events: one pydantic model per event the relay acts
on, parsed once per delivery at the edge (``parse_delivery``, when a worker claims it).

Vendor JSON becomes our own typed event at the edge (Zuul's ``GithubEventProcessor`` habit);
everything after — fan-out, check runs, re-runs, the local backend's run — reads these models,
never the payload dict.  The dict itself stays on the delivery only to be sent downstream
verbatim (CRCR ``client_payload.payload``).

Field sources: GitHub docs, "Webhook events and payloads" — ``pull_request`` carries ``action``,
``number``, ``pull_request.{head.sha, base.sha, base.ref, labels, merged, title}`` and no file
list (fetch it from the PR files API); ``push`` carries ``before``, ``after``, ``ref``,
``forced``, ``deleted`` and ``commits[]`` with ``added``/``removed``/``modified`` path lists;
``check_run`` carries ``check_run.{name, external_id}``; ``check_suite`` carries
``check_suite.id``; ``ping`` carries ``zen`` and ``hook_id``.  Unknown keys are ignored
everywhere so new GitHub fields never break intake.  The fields the CRCR rules read leniently
(a check run's name and external id, a suite id, ``forced``) keep that leniency here: a value
GitHub never sends makes the rule do nothing, as before, rather than fail the delivery.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from relay.domain.delivery import Delivery
from relay.errors import PayloadInvalid
from relay.github.constants import PR_NUMBER_MAX
from selection.models import ChangedFile, ChangeSet

__all__ = [
    "Repository",
    "Label",
    "Ref",
    "PullRequest",
    "PullRequestEvent",
    "HeadCommit",
    "commit_title",
    "PushCommit",
    "PushEvent",
    "CheckRun",
    "CheckRunEvent",
    "CheckSuite",
    "CheckSuiteEvent",
    "PingEvent",
    "WebhookEvent",
    "EVENT_MODELS",
    "ParsedDelivery",
    "parse_event",
    "parse_delivery",
    "push_changeset",
]

_IGNORE = ConfigDict(extra="ignore", frozen=True)


def _text_or_empty(value: Any) -> str:
    """CRCR reads these as ``str(value or "")``: ``None`` and other falsy values are ``""``."""
    return str(value or "")


def _id_or_none(value: Any) -> int | None:
    """A JSON integer (not a boolean, not a numeric string), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: text CRCR reads leniently (``str(value or "")``)
LenientText = Annotated[str, BeforeValidator(_text_or_empty)]



#: a commit sha as GitHub sends it: 40 hex (SHA-1) or 64 (SHA-256 repositories); longer text or a
#: NUL is no sha and would fail later in the store (a dispatch row holds 64 characters)
Sha = Annotated[str, Field(max_length=64, pattern=r"^[^\x00]*$")]

class Repository(BaseModel):
    model_config = _IGNORE
    full_name: str


class Label(BaseModel):
    model_config = _IGNORE
    name: str


class Ref(BaseModel):
    """``pull_request.head`` / ``pull_request.base``: a commit sha on a branch."""

    model_config = _IGNORE
    sha: Sha
    ref: str = ""


class PullRequest(BaseModel):
    model_config = _IGNORE
    number: int | None = None
    title: str = ""
    head: Ref
    base: Ref
    labels: list[Label] = Field(default_factory=list)
    merged: bool | None = None


class PullRequestEvent(BaseModel):
    """The ``pull_request`` webhook payload (the parts we read); ``number`` is 1 ..
    ``PR_NUMBER_MAX``; ``label`` is the label a ``labeled`` action added."""

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


class HeadCommit(BaseModel):
    """``head_commit`` of a push: the commit ``after`` names (``null`` on a branch deletion)."""

    model_config = _IGNORE
    message: LenientText = ""


class PushEvent(BaseModel):
    """The ``push`` webhook payload (the parts we read); ``commits`` holds at most 2,048 entries;
    ``forced``: ``before`` is not an ancestor of ``after`` (read as truthy, like CRCR)."""

    model_config = _IGNORE
    ref: str
    before: Sha
    after: Sha
    commits: list[PushCommit] = Field(default_factory=list)
    head_commit: HeadCommit | None = None
    repository: Repository
    deleted: bool = False
    forced: Annotated[bool, BeforeValidator(bool)] = False


class CheckRun(BaseModel):
    """A check run (in a ``check_run`` payload, or listed by the check-suite API): its ``name``
    and ``external_id`` (a crcr check run's are ``crcr/<owner>/<repo>/...`` and ``<run_id>:<pr>``)."""

    model_config = _IGNORE
    name: LenientText = ""
    external_id: LenientText = ""


class CheckRunEvent(BaseModel):
    """The ``check_run`` webhook payload (the parts we read)."""

    model_config = _IGNORE
    action: str
    repository: Repository
    check_run: CheckRun = Field(default_factory=CheckRun)


class CheckSuite(BaseModel):
    """A check suite; ``id`` is ``None`` when the payload holds no JSON integer there."""

    model_config = _IGNORE
    id: Annotated[int | None, BeforeValidator(_id_or_none)] = None


class CheckSuiteEvent(BaseModel):
    """The ``check_suite`` webhook payload (the parts we read)."""

    model_config = _IGNORE
    action: str
    repository: Repository
    check_suite: CheckSuite = Field(default_factory=CheckSuite)


class PingEvent(BaseModel):
    """The ``ping`` payload sent when a hook is created."""

    model_config = _IGNORE
    zen: str = ""
    hook_id: int | None = None


#: every typed event (``None`` stands for an event the relay has no view of)
WebhookEvent = PullRequestEvent | PushEvent | CheckRunEvent | CheckSuiteEvent | PingEvent
#: ``X-GitHub-Event`` → the typed view of its payload (keys: ``HANDLED_EVENTS``)
EVENT_MODELS: dict[str, type[BaseModel]] = {
    "pull_request": PullRequestEvent,
    "push": PushEvent,
    "check_run": CheckRunEvent,
    "check_suite": CheckSuiteEvent,
    "ping": PingEvent,
}


class ParsedDelivery(Delivery):
    """A claimed delivery with its payload parsed once into its typed event (``typed``; ``None``
    for an event without a typed view).  ``payload`` stays the verbatim webhook body: it is what
    fan-out sends downstream."""

    typed: WebhookEvent | None = None


def parse_event(event: str, payload: dict[str, Any]) -> WebhookEvent | None:
    """The typed event of ``payload`` for ``event`` (``None`` when ``event`` has no typed view).
    Raises ``PayloadInvalid`` naming the fields that are not the shape GitHub sends, one
    ``field: message`` per field (at most five), e.g. ``pull_request payload: number: Input
    should be less than or equal to 2147483647``."""
    model = EVENT_MODELS.get(event)
    if model is None:
        return None
    try:
        return model.model_validate(payload)  # type: ignore[return-value]
    except ValidationError as exc:
        parts = [f"{'.'.join(str(p) for p in err['loc']) or '(body)'}: {err['msg']}"
                 for err in exc.errors(include_url=False, include_input=False)[:5]]
        raise PayloadInvalid(f"{event} payload: " + "; ".join(parts)) from None


def parse_delivery(delivery: Delivery) -> ParsedDelivery:
    """``delivery`` with its typed event; raises ``PayloadInvalid`` as ``parse_event`` does (the
    same bytes would fail every retry: the delivery ends ``failed`` with it)."""
    typed = parse_event(delivery.event, delivery.payload)
    fields = {name: getattr(delivery, name) for name in Delivery.model_fields}
    return ParsedDelivery.model_construct(**fields, typed=typed)  # both validated already


def commit_title(message: str) -> str:
    """A commit's title: the first non-blank line of its message, stripped ('' for none; git's
    ``%s``)."""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def push_changeset(event: PushEvent) -> ChangeSet:
    """A ``ChangeSet`` for ``before..after`` built from the commits' path lists.

    A path's final status is taken from the last commit touching it, except that a path added
    earlier in the same push stays ``added`` when later modified, and a path added then removed
    is dropped.  No ``patch`` text: push payloads carry none.  The title is the first line of
    ``head_commit.message`` (what the grid shows for the commit while the delivery is in flight
    too: one title per commit), ``push to <ref>`` only when the payload has no message.
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
        title=commit_title(event.head_commit.message if event.head_commit else "") or f"push to {event.ref}",
        files=files,
    )
