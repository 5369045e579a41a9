"""Persistence of flaky-test quarantine (HUD's disable / re-enable flow), one row per test.

``quarantine``  a test's quarantine state: ``disabled`` (a disable proposal: flaky in too many
                main-branch runs; ``DISABLED <test id>`` issue filed downstream) or
                ``reenable_proposed`` (enough consecutive greens since), with the issue's repo,
                number and URL and when each step happened
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from relay.store.tables import Base, utcnow

__all__ = ["QuarantineRecord", "QUARANTINE_STATES"]

QUARANTINE_STATES = ("disabled", "reenable_proposed")


class QuarantineRecord(Base):
    """One quarantined test (unique per test id)."""

    __tablename__ = "quarantine"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    test_id: Mapped[str] = mapped_column(String(500), unique=True)
    state: Mapped[str] = mapped_column(String(30), index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    flaky_runs: Mapped[int] = mapped_column(Integer, default=0)
    issue_repo: Mapped[str | None] = mapped_column(String(200))
    issue_number: Mapped[int | None] = mapped_column(Integer)
    issue_url: Mapped[str | None] = mapped_column(String(1000))
    disabled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    reenable_proposed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    greens: Mapped[int] = mapped_column(Integer, default=0)
