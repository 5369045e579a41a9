"""Which webhook deliveries the relay acts on, decided at intake before the payload is trusted
(the typed events the acted-on ones are parsed into: ``relay.github.events``).

Rules (CRCR ``webhook/lambda_function.py``, ``webhook/event_handler.py``; the vocabulary in
``relay.github.constants``): only events of the upstream repository count; ``pull_request``
opened / reopened / synchronize / closed, every ``push``, ``check_run`` and ``check_suite``
``rerequested``, and ``labeled`` with a ``ciflow/crcr/<device>`` label are processed; ``ping``
is answered; anything else is stored ``ignored`` with the reason.  These read the raw payload
leniently on purpose: a payload of the wrong shape is still stored (and later ends ``failed``
with its fields named), never refused or ignored for its shape.
"""

from __future__ import annotations

from typing import Any

from relay.github.constants import CRCR_LABEL_PREFIX, EVENT_ACTIONS

__all__ = ["is_handled", "ignored_reason", "intake_status", "pr_subject", "RUN_ACTIONS"]


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


#: ``pull_request`` actions that ask for a run of the PR's head (a newer one supersedes an older)
RUN_ACTIONS = ("opened", "reopened", "synchronize")
_SHA_CHARS = frozenset("0123456789abcdefABCDEF")


def pr_subject(event: str, payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """``("<repo>#<number>", head sha)`` of a ``pull_request`` delivery whose action asks for a
    run (``RUN_ACTIONS``), else ``(None, None)``; malformed fields give ``(None, None)`` (the
    delivery fails later with the real error).  Stored at intake: a newer head of the same PR
    supersedes an older one's local run (``relay.store.supersede``)."""
    if event != "pull_request" or payload.get("action") not in RUN_ACTIONS:
        return None, None
    pr = payload.get("pull_request")
    repo = (payload.get("repository") or {}).get("full_name") if isinstance(
        payload.get("repository"), dict) else None
    if not isinstance(pr, dict) or not isinstance(repo, str) or not 0 < len(repo) <= 100:
        return None, None
    number, head = pr.get("number", payload.get("number")), (pr.get("head") or {})
    sha = head.get("sha") if isinstance(head, dict) else None
    if type(number) is not int or not 0 < number < 2**31 or not isinstance(sha, str) \
            or not 7 <= len(sha) <= 64 or not set(sha) <= _SHA_CHARS:
        return None, None
    return f"{repo.lower()}#{number}", sha.lower()
