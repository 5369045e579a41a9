"""Fan-out: one ``repository_dispatch`` per allowlisted downstream repo for each dispatched delivery.

Called once per processed delivery (the ``fanout`` of its entry in ``relay.worker.handlers``,
after the delivery is claimed and parsed and before the local backend runs) for the events
CRCR dispatches: ``pull_request`` opened / reopened / synchronize / closed and every ``push`` of
the upstream (CRCR ``webhook/event_handler.py``).  Targets: every external allowlist entry subscribed to
``pull_request`` events (all of them unless its ``events`` metadata says ``nightly`` only),
sorted by name.  For each:

1. the dispatch row is written (``pending``) and committed *before* the call;
2. the CRCR ``client_payload`` is built (``relay.crcr.payloads``) with a per-dispatch
   callback token; over 65 KB it is trimmed and the original size recorded; if trimming is
   not enough the row is marked ``failed`` with the reason;
3. ``POST /repos/{repo}/dispatches`` with ``event_type`` = the GitHub event name, retried on
   5xx/429/rate-limit 403 (``GitHubClient``: tenacity, honouring ``Retry-After`` and
   ``X-RateLimit-Reset``); the row becomes ``sent`` or ``failed`` (error text kept) — except
   when GitHub is still down or rate-limiting after those retries (``GitHubAPIError.transient``):
   the row stays ``pending`` with the error, the other targets are still tried, and
   ``DispatchPending`` is raised at the end so the delivery is retried later
   (``relay.worker.processing``); its last attempt marks the rows left ``failed``.
   Any other error while sending one target (a bug, a payload our code cannot encode) marks
   that row ``failed`` with the error: no row stays ``pending`` after its delivery ends.

Rows already ``sent`` are skipped, so a delivery re-processed after a crash re-sends only what
was not confirmed: at-least-once delivery to downstreams.  A relay or worker killed between
GitHub's 204 and the ``sent`` commit sends that repository_dispatch again; downstreams dedup on
``client_payload.delivery_id`` (the ``X-GitHub-Delivery`` GUID, identical on every re-send).

``change_facts`` gives the PR context check runs need (CRCR ``utils/misc.py``
``extract_pr_context``), read from the typed event: a pull request's number and head; for a
push, the PR of a ``refs/tags/ciflow/trunk/<pr>`` tag and ``after`` — any other push has no PR,
so no check run; a deleted ref (``after`` = forty zeros) has no head.  What is sent downstream
is the delivery's verbatim payload, never the typed event re-serialised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.crcr.allowlist import AllowEntry, Allowlist
from relay.crcr.payloads import TrimError, build_client_payload, json_size
from relay.crcr.tokens import issue_dispatch_token
from relay.domain.delivery import Delivery
from relay.errors import GitHubAPIError
from relay.github.client import GitHubClient
from relay.github.constants import CIFLOW_TRUNK_PREFIX, CRCR_LABEL_PREFIX, PR_NUMBER_MAX, ZERO_SHA
from relay.github.events import PullRequestEvent, PushEvent
from relay.settings import Settings
from relay.store.dispatches import ensure_dispatch, mark_dispatch, record_labels

__all__ = ["FanoutContext", "ChangeFacts", "fan_out", "targets", "change_facts", "CALLBACK_PATH",
           "DispatchPending"]

log = logging.getLogger(__name__)
CALLBACK_PATH = "/api/crcr/callback"


class DispatchPending(GitHubAPIError):
    """Some dispatches of a delivery are still ``pending``: GitHub was unreachable, 5xx or
    rate-limiting after the client's own retries (``transient`` is true)."""


@dataclass
class FanoutContext:
    """What fan-out needs: the store, settings, the current allowlist, a GitHub client."""

    session_factory: sessionmaker[Session]
    settings: Settings
    allowlist: Callable[[], Allowlist]
    github: Callable[[], GitHubClient]


@dataclass(frozen=True)
class ChangeFacts:
    """The PR context of a delivery (for dispatch rows, check runs and comments): the upstream
    repository, the head commit (``None``: a deleted ref), the PR number (``None``: a push
    that is no PR's trunk CI) and the PR's label names."""

    upstream: str
    head_sha: str | None
    pr_number: int | None
    labels: tuple[str, ...] = ()


def _trunk_pr(ref: str) -> int | None:
    """The PR of a ``refs/tags/ciflow/trunk/<pr>`` push when it fits the store, else ``None``."""
    number = ref.removeprefix(CIFLOW_TRUNK_PREFIX) if ref.startswith(CIFLOW_TRUNK_PREFIX) else ""
    return int(number) if number.isascii() and number.isdigit() and 0 < int(number) <= PR_NUMBER_MAX else None


def change_facts(event: PullRequestEvent | PushEvent) -> ChangeFacts:
    """The ``ChangeFacts`` of a typed ``pull_request`` or ``push`` event (module docstring)."""
    upstream = event.repository.full_name
    if isinstance(event, PullRequestEvent):
        return ChangeFacts(upstream, event.pull_request.head.sha, event.number,
                           tuple(label.name for label in event.pull_request.labels))
    head = event.after if event.after != ZERO_SHA else None
    return ChangeFacts(upstream, head, _trunk_pr(event.ref))


def targets(allowlist: Allowlist) -> list[AllowEntry]:
    """External repos a pull_request / push delivery goes to (sorted by name): every entry
    subscribed to ``pull_request`` events (CRCR: ``events: [nightly]`` entries get none)."""
    return allowlist.external("pull_request")


def fan_out(delivery: Delivery, facts: ChangeFacts, ctx: FanoutContext) -> dict[str, str]:
    """Dispatch ``delivery`` (its verbatim payload) to every target, with ``facts`` (its typed
    event's ``change_facts``) on the dispatch rows; returns ``{repo: final status}``.  Raises
    ``DispatchPending`` (module docstring)."""
    sf = ctx.session_factory
    ciflow = [lb for lb in facts.labels if lb.startswith(CRCR_LABEL_PREFIX)]
    if facts.pr_number is not None and ciflow:  # only these labels gate anything (L3)
        with sf() as session:
            record_labels(session, facts.upstream, facts.pr_number, ciflow)
    todo = targets(ctx.allowlist())
    if not todo:
        return {}
    key = ctx.settings.callback_key()
    callback_url = ctx.settings.public_url.rstrip("/") + CALLBACK_PATH
    outcome: dict[str, Any] = {}
    with ctx.github() as gh:
        for entry in todo:
            with sf() as session:
                row = ensure_dispatch(session, delivery_id=delivery.id, repo=entry.name,
                                      level=entry.level, device=entry.device,
                                      event_type=delivery.event, upstream=facts.upstream,
                                      head_sha=facts.head_sha, pr_number=facts.pr_number,
                                      labels=list(facts.labels), status="pending")
                row_id, status = row.id, row.status
            if status == "sent":
                outcome[entry.name] = "sent"
                continue
            outcome[entry.name] = _send_safely(gh, sf, row_id, entry, delivery, key, callback_url,
                                               ctx.settings.job_timeout_s + 3600)
    waiting = [(repo, err) for repo, err in outcome.items() if isinstance(err, GitHubAPIError)]
    if waiting:
        repo, err = waiting[0]
        raise DispatchPending(err.status_code, err.url,
                              f"{len(waiting)} dispatch(es) pending ({repo}: {err})")
    return outcome


def _send_safely(gh: GitHubClient, sf: sessionmaker[Session], row_id: int, entry: AllowEntry,
                 delivery: Delivery, key: bytes, callback_url: str, ttl_s: float) -> Any:
    """``_send``; a transient GitHub failure is returned (the row stays ``pending``), any other
    error marks the row ``failed`` with it."""
    try:
        return _send(gh, sf, row_id, entry, delivery, key, callback_url, ttl_s)
    except GitHubAPIError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - the row must reach a final state
        log.error("delivery %s → %s not dispatched: %s: %s", delivery.id, entry.name,
                  type(exc).__name__, exc)
        with sf() as session:
            mark_dispatch(session, row_id, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        return "failed"


def _send(gh: GitHubClient, sf: sessionmaker[Session], row_id: int, entry: AllowEntry,
          delivery: Delivery, key: bytes, callback_url: str, ttl_s: float) -> str:
    token = issue_dispatch_token(key, delivery.id, entry.name, ttl_s=ttl_s)
    try:
        body, trimmed_from = build_client_payload(
            delivery.event, delivery.id, delivery.payload,
            callback={"url": callback_url, "token": token})
    except TrimError as exc:
        with sf() as session:
            mark_dispatch(session, row_id, "failed", error=f"payload too large: {exc}")
        log.error("delivery %s → %s not dispatched: %s", delivery.id, entry.name, exc)
        return "failed"
    size = json_size(body)
    if trimmed_from is not None:
        log.warning("delivery %s → %s: client_payload trimmed from %d to %d bytes",
                    delivery.id, entry.name, trimmed_from, size)
    try:
        gh.dispatch(entry.name, delivery.event[:100], body)
    except GitHubAPIError as exc:
        status = "pending" if exc.transient else "failed"
        with sf() as session:
            mark_dispatch(session, row_id, status, error=str(exc)[:2000], payload_bytes=size,
                          trimmed_from=trimmed_from)
        log.error("delivery %s → %s dispatch %s: %s", delivery.id, entry.name,
                  "pending (retried later)" if exc.transient else "failed", exc)
        if exc.transient:
            raise
        return "failed"
    with sf() as session:
        mark_dispatch(session, row_id, "sent", payload_bytes=size, trimmed_from=trimmed_from)
    return "sent"
