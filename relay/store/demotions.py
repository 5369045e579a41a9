"""L3 demotions in progress (CRCR ``utils/demotion.py``): one row per demoted repo.

``set_demotion`` keeps the first ``since`` of a demotion that continues; ``clear_demotion`` ends
it; ``demoted_since`` is read per check-run decision.  Each writer commits.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.tables import DemotionRecord, as_utc, utcnow

__all__ = ["set_demotion", "clear_demotion", "demoted_since", "list_demotions"]


def set_demotion(session: Session, repo: str, pr_number: int | None = None,
                 now: datetime | None = None) -> datetime:
    """Record ``repo`` demoted (kept from its first time); returns since when (UTC)."""
    row = session.scalar(select(DemotionRecord).where(DemotionRecord.repo == repo))
    if row is not None:
        if pr_number is not None and row.pr_number != pr_number:
            row.pr_number = pr_number
            session.commit()
        return as_utc(row.since)
    session.add(DemotionRecord(repo=repo, since=now or utcnow(), pr_number=pr_number))
    try:
        session.commit()
    except IntegrityError:  # recorded meanwhile by another process
        session.rollback()
    return demoted_since(session, repo) or (now or utcnow())


def clear_demotion(session: Session, repo: str) -> bool:
    """End ``repo``'s demotion; whether there was one."""
    result = session.execute(delete(DemotionRecord).where(DemotionRecord.repo == repo))
    session.commit()
    return bool(result.rowcount)  # type: ignore[attr-defined]


def demoted_since(session: Session, repo: str) -> datetime | None:
    """When ``repo``'s demotion began (UTC), or ``None``."""
    since = session.scalar(select(DemotionRecord.since).where(DemotionRecord.repo == repo))
    return as_utc(since) if since is not None else None


def list_demotions(session: Session) -> dict[str, datetime]:
    """Every demoted repo → since (UTC)."""
    return {r.repo: as_utc(r.since) for r in session.scalars(select(DemotionRecord))}
