"""Fan-out: one ``repository_dispatch`` per allowlisted downstream repo for each delivery.

Called once per processed delivery (by ``relay.worker.processing.process_delivery``, after the
delivery is claimed and before the local backend runs).  For each external allowlist entry:

1. the dispatch row is written (``pending``) and committed *before* the call;
2. the CRCR ``client_payload`` is built (``relay.crcr.payloads``) with a per-dispatch
   callback token; over 65 KB it is trimmed and the original size recorded; if trimming is
   not enough the row is marked ``failed`` with the reason;
3. ``POST /repos/{repo}/dispatches`` with ``event_type`` = the GitHub event name, retried on
   5xx/429/rate-limit 403 (``GitHubClient``: tenacity, honouring ``Retry-After`` and
   ``X-RateLimit-Reset``); the row becomes ``sent`` or ``failed`` (error text kept).

Rows already ``sent`` are skipped, so a delivery re-processed after a crash re-sends only what
was not confirmed (at-least-once delivery to downstreams).  ``check_run`` ``rerequested`` goes
only to the repo named in the check run (``crcr/<owner>/<repo>/<workflow>/<job>``).
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
from relay.settings import Settings
from relay.store.dispatches import ensure_dispatch, mark_dispatch, record_labels

__all__ = ["FanoutContext", "fan_out", "targets", "change_facts", "CALLBACK_PATH"]

log = logging.getLogger(__name__)
CALLBACK_PATH = "/api/crcr/callback"


@dataclass
class FanoutContext:
    """What fan-out needs: the store, settings, the current allowlist, a GitHub client."""

    session_factory: sessionmaker[Session]
    settings: Settings
    allowlist: Callable[[], Allowlist]
    github: Callable[[], GitHubClient]


def change_facts(delivery: Delivery) -> dict[str, Any]:
    """``{upstream, head_sha, pr_number, labels}`` of a delivery (for checks and comments)."""
    p = delivery.payload
    upstream = (p.get("repository") or {}).get("full_name", "")
    if delivery.event == "pull_request":
        pr = p.get("pull_request") or {}
        return {"upstream": upstream, "head_sha": (pr.get("head") or {}).get("sha"),
                "pr_number": p.get("number") or pr.get("number"),
                "labels": [lb.get("name", "") for lb in pr.get("labels") or []]}
    if delivery.event == "check_run":
        cr = p.get("check_run") or {}
        pulls = cr.get("pull_requests") or []
        number = pulls[0].get("number") if pulls else None
        if number is None and ":" in str(cr.get("external_id", "")):
            tail = str(cr["external_id"]).rsplit(":", 1)[1]
            number = int(tail) if tail.isdigit() else None
        return {"upstream": upstream, "head_sha": cr.get("head_sha"), "pr_number": number,
                "labels": []}
    return {"upstream": upstream, "head_sha": p.get("after"), "pr_number": None, "labels": []}


def targets(delivery: Delivery, allowlist: Allowlist) -> list[AllowEntry]:
    """External repos to dispatch ``delivery`` to (sorted by name)."""
    external = allowlist.external()
    if delivery.event == "check_run":
        name = str((delivery.payload.get("check_run") or {}).get("name", ""))
        parts = name.split("/")
        if len(parts) < 3 or parts[0] != "crcr":
            return []
        repo = f"{parts[1]}/{parts[2]}"
        return [e for e in external if e.name == repo]
    return external


def fan_out(delivery: Delivery, ctx: FanoutContext) -> dict[str, str]:
    """Dispatch ``delivery`` to every target; returns ``{repo: final status}``."""
    facts = change_facts(delivery)
    sf = ctx.session_factory
    ciflow = [lb for lb in facts["labels"] if lb.startswith("ciflow/crcr/")]
    if facts["pr_number"] is not None and ciflow:  # only these labels gate anything (L3)
        with sf() as session:
            record_labels(session, facts["upstream"], int(facts["pr_number"]), ciflow)
    todo = targets(delivery, ctx.allowlist())
    if not todo:
        return {}
    key = ctx.settings.callback_key()
    callback_url = ctx.settings.public_url.rstrip("/") + CALLBACK_PATH
    outcome: dict[str, str] = {}
    with ctx.github() as gh:
        for entry in todo:
            with sf() as session:
                row = ensure_dispatch(session, delivery_id=delivery.id, repo=entry.name,
                                      level=entry.level, device=entry.device,
                                      event_type=delivery.event, upstream=facts["upstream"],
                                      head_sha=facts["head_sha"], pr_number=facts["pr_number"],
                                      labels=facts["labels"], status="pending")
                row_id, status = row.id, row.status
            if status == "sent":
                outcome[entry.name] = "sent"
                continue
            outcome[entry.name] = _send(gh, sf, row_id, entry, delivery, key, callback_url)
    return outcome


def _send(gh: GitHubClient, sf: sessionmaker[Session], row_id: int, entry: AllowEntry,
          delivery: Delivery, key: bytes, callback_url: str) -> str:
    token = issue_dispatch_token(key, delivery.id, entry.name)
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
        with sf() as session:
            mark_dispatch(session, row_id, "failed", error=str(exc)[:2000], payload_bytes=size,
                          trimmed_from=trimmed_from)
        log.error("delivery %s → %s dispatch failed: %s", delivery.id, entry.name, exc)
        return "failed"
    with sf() as session:
        mark_dispatch(session, row_id, "sent", payload_bytes=size, trimmed_from=trimmed_from)
    return "sent"
