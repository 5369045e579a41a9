"""Persistence of culprit findings: the first bad commit of a push range, one row per run.

``culprits``  the commit a bisection (``relay.domain.culprit.bisect``) blamed for a run's NEW
              failures, the tests it breaks, the rounds it took and each round's commit and
              failures (JSON)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.domain.culprit import BisectStep, Culprit
from relay.store.tables import Base, RunRecord, utcnow

__all__ = ["CulpritRecord", "save_culprit", "load_culprit", "load_culprits", "runs_blaming"]


class CulpritRecord(Base):
    """The culprit commit found for one run (unique per run)."""

    __tablename__ = "culprits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    commit: Mapped[str] = mapped_column(String(200), index=True)
    tests: Mapped[list[str]] = mapped_column(JSON, default=list)
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    steps: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    found_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def save_culprit(session: Session, run_id: str, culprit: Culprit, *, commit: bool = True) -> None:
    """Replace the culprit stored for ``run_id`` (the run row must exist); commits unless
    ``commit=False`` (then flushes)."""
    session.execute(delete(CulpritRecord).where(CulpritRecord.run_id == run_id))
    session.add(CulpritRecord(
        run_id=run_id, commit=culprit.commit, tests=list(culprit.tests), rounds=culprit.rounds,
        steps=[s.model_dump(mode="json") for s in culprit.steps]))
    if commit:
        session.commit()
    else:
        session.flush()


def _to_culprit(row: CulpritRecord) -> Culprit:
    return Culprit(commit=row.commit, tests=list(row.tests or []), rounds=row.rounds,
                   steps=[BisectStep.model_validate(s) for s in row.steps or []])


def load_culprit(session: Session, run_id: str) -> Culprit | None:
    """The culprit found for ``run_id``, or ``None``."""
    row = session.scalar(select(CulpritRecord).where(CulpritRecord.run_id == run_id))
    return _to_culprit(row) if row is not None else None


def load_culprits(session: Session, run_ids: Sequence[str]) -> dict[str, Culprit]:
    """``{run id: culprit}`` for those of ``run_ids`` that have one (one query)."""
    if not run_ids:
        return {}
    rows = session.scalars(select(CulpritRecord).where(CulpritRecord.run_id.in_(list(run_ids))))
    return {r.run_id: _to_culprit(r) for r in rows}


def runs_blaming(session: Session, sha: str) -> list[str]:
    """Ids of runs (newest first) whose culprit commit is ``sha`` (a full sha or a prefix)."""
    stmt = (select(CulpritRecord.run_id).join(RunRecord, RunRecord.id == CulpritRecord.run_id)
            .where(CulpritRecord.commit.startswith(sha)).order_by(RunRecord.started_at.desc()))
    return list(session.scalars(stmt))
