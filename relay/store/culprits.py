"""Persistence of culprit findings: the first bad commit of a push range, one row per run.

``culprits``  the commit a bisection (``relay.culprit.bisect``) blamed for a run's NEW
              failures, the tests it breaks, the rounds it took and each round's commit and
              failures (JSON)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from relay.store.tables import Base, utcnow

__all__ = ["CulpritRecord"]


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
