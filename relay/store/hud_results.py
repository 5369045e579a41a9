"""Bodies received by the dashboard ingest (``POST /api/crcr/results``), stored idempotently."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from relay.store.tables import HudResultRecord, utcnow

__all__ = ["store_hud_result", "list_hud_results"]


def store_hud_result(
    session: Session,
    *,
    delivery_id: str,
    repo: str,
    run_id: str,
    attempt: int,
    job_name: str,
    status: str,
    conclusion: str | None,
    body: dict[str, Any],
) -> bool:
    """Insert one ingest body and commit; ``True`` if new.

    When the job key (delivery_id, repo, run_id, attempt, job_name) is already stored the row
    keeps one copy: its body/status are replaced by the newer post, except that an
    ``in_progress`` never replaces a ``completed`` (a late or retried post cannot move a job
    backwards), and ``False`` is returned.
    """
    session.add(HudResultRecord(delivery_id=delivery_id, repo=repo, run_id=run_id,
                                attempt=attempt, job_name=job_name, status=status,
                                conclusion=conclusion, body=body, received_at=utcnow()))
    try:
        session.commit()
        return True
    except IntegrityError:
        session.rollback()
    row = session.scalar(select(HudResultRecord).where(
        HudResultRecord.delivery_id == delivery_id, HudResultRecord.repo == repo,
        HudResultRecord.run_id == run_id, HudResultRecord.attempt == attempt,
        HudResultRecord.job_name == job_name))
    if row is not None and not (row.status == "completed" and status != "completed"):
        row.body, row.status, row.conclusion = body, status, conclusion
        session.commit()
    return False


def list_hud_results(session: Session, limit: int = 100) -> list[HudResultRecord]:
    """Stored ingest rows, newest first."""
    return list(session.scalars(
        select(HudResultRecord).order_by(HudResultRecord.id.desc()).limit(limit)))
