"""The ``run_selection`` table: what stages 1–3 kept for a run, one row per selected test with
its stage-3 mode, score and reasons (design §4's ``selected`` entries), so the run page can say
why each test ran — or why a ``skip`` test did not.

Written by ``relay.store.runs.save_run`` in the run's transaction (replaced with the run), read
by ``load_run``; ``selection_counts`` gives the tests per mode of many runs in one query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, delete, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.store.tables import Base
from selection.models import SelectedTest

__all__ = ["RunSelectionRecord", "save_selection", "load_selection", "selection_counts"]


class RunSelectionRecord(Base):
    """One test stages 1–3 selected for a run (mode ``skip``: listed, not run)."""

    __tablename__ = "run_selection"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    test_id: Mapped[str] = mapped_column(String(500))
    upstream: Mapped[str] = mapped_column(String(500))
    op: Mapped[str | None] = mapped_column(String(200))
    module: Mapped[str | None] = mapped_column(String(200))
    dtype: Mapped[str | None] = mapped_column(String(50))
    mode: Mapped[str] = mapped_column(String(30))
    score: Mapped[float] = mapped_column(Float, default=0.0)
    reasons: Mapped[list[str]] = mapped_column(JSON, default=list)


def save_selection(session: Session, run_id: str, selected: Sequence[SelectedTest]) -> None:
    """Replace the selection rows of ``run_id`` with ``selected`` (in its order); no commit."""
    session.execute(delete(RunSelectionRecord).where(RunSelectionRecord.run_id == run_id))
    session.add_all(RunSelectionRecord(run_id=run_id, test_id=t.id, upstream=t.upstream, op=t.op,
                                       module=t.module, dtype=t.dtype, mode=t.mode, score=t.score,
                                       reasons=list(t.reasons))
                    for t in selected)


def load_selection(session: Session, run_id: str) -> list[SelectedTest]:
    """The selection of ``run_id`` in stored order (ranked: -score, id); ``[]`` when none."""
    rows = session.scalars(select(RunSelectionRecord).where(RunSelectionRecord.run_id == run_id)
                           .order_by(RunSelectionRecord.id))
    return [SelectedTest.model_construct(id=r.test_id, upstream=r.upstream, op=r.op, module=r.module,
                                         dtype=r.dtype, mode=r.mode, score=r.score,
                                         reasons=list(r.reasons or []))
            for r in rows]


def selection_counts(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{run id: {mode: tests}}`` for the runs that have a stored selection."""
    out: dict[str, dict[str, Any]] = {}
    if not run_ids:
        return out
    rows = session.execute(select(RunSelectionRecord.run_id, RunSelectionRecord.mode, func.count())
                           .where(RunSelectionRecord.run_id.in_(list(run_ids)))
                           .group_by(RunSelectionRecord.run_id, RunSelectionRecord.mode))
    for run_id, mode, n in rows:
        out.setdefault(run_id, {})[mode] = int(n)
    return out
