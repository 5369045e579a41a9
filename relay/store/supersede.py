"""Superseded pull-request heads: a newer head of the same PR makes an older one's local run
pointless, as Zuul's and GitHub Actions' concurrency groups cancel it.

Intake stores each run-asking ``pull_request`` delivery's PR (``deliveries.subject``,
``"<repo>#<number>"``) and head sha (``relay.github.webhooks.pr_subject``).  ``newer_head``
answers, when a delivery's turn comes, whether a *later* delivery of the same PR asks for
another head; the worker then skips the older head's local run (its fan-out still happens: CRCR
dispatches every ``synchronize``) and ends it ``processed`` with a note naming the newer head.
Trunk pushes have no subject: each keeps its run (the grid has a cell per commit).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.github.webhooks import RUN_ACTIONS
from relay.store.tables import DeliveryRecord

__all__ = ["newer_head"]

_T = DeliveryRecord.__table__


def newer_head(session: Session, delivery_id: str) -> tuple[str, str] | None:
    """``(newer head sha, its delivery id)`` when a delivery stored after ``delivery_id`` asks
    for another head of the same PR, else ``None`` (no subject, or it is the newest)."""
    this = session.execute(select(_T.c.id, _T.c.subject, _T.c.head_sha)
                           .where(_T.c.delivery_id == delivery_id)).first()
    if this is None or this.subject is None:
        return None
    newer = session.execute(
        select(_T.c.head_sha, _T.c.delivery_id)
        .where(_T.c.subject == this.subject, _T.c.id > this.id, _T.c.event == "pull_request",
               _T.c.action.in_(RUN_ACTIONS), _T.c.head_sha != this.head_sha)
        .order_by(_T.c.id.desc()).limit(1)).first()
    return (newer.head_sha, newer.delivery_id) if newer is not None else None
