"""Persistence of flaky-test quarantine (HUD's disable / re-enable flow), one row per test.

``quarantine``  a test's quarantine state: ``disabled`` (a disable proposal: flaky in too many
                main-branch runs; ``DISABLED <test id>`` issue filed downstream) or
                ``reenable_proposed`` (enough consecutive greens since), with the issue's repo,
                number and URL and when each step happened

The read side the policy (``relay.quarantine.policy``) works on is here too: which tests were flaky in
which main-branch runs of a time window, and each quarantined test's streak of greens.  A
*main-branch run* is a trunk run (``relay.store.regression.trunk_runs``): its ``ref`` is the main
ref, its trigger runs upstream commits (``webhook``, ``replay``), and no ``pull_request`` delivery
made it (PyTorch HUD counts only trunk jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import JSON, DateTime, Integer, String, Text, select, union
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.domain.flakiness import QuarantineNote
from relay.store.regression import MAIN_TRIGGERS, VerdictRecord, trunk_runs
from relay.store.tables import Base, RunRecord, TestResultRecord, as_utc, utcnow

__all__ = ["QuarantineRecord", "QUARANTINE_STATES", "MAIN_TRIGGERS", "FlakyRun", "GreenStreak",
           "flaky_runs", "green_streaks", "claim", "load_quarantine", "quarantined_tests",
           "disabled_title", "as_utc", "quarantine_json"]

QUARANTINE_STATES = ("disabled", "reenable_proposed")
#: FLAKY verdicts that are flakiness evidence of their own; a quarantine FLAKY only repeats the
#: record, and one stored before migration 0010 (no rule recorded) may come from the old flips
#: rule that read pull-request heads, so neither counts
EVIDENCE_RULES = ("rerun", "trunk_flips")
#: outcomes that break a green streak; skipped / xfailed / xpassed say nothing about flakiness
NOT_GREEN = frozenset({"failed", "flaky", "crashed", "timed_out"})


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
    #: the main-branch runs it was flaky in when it was disabled (migration 0010)
    flaky_run_ids: Mapped[list[str] | None] = mapped_column(JSON)


def disabled_title(test_id: str) -> str:
    """The title of a test's disable issue: exactly ``DISABLED <test id>`` (PyTorch's
    convention, ``DISABLED test_name (__main__.TestClass)``, with our test id as the name)."""
    return f"DISABLED {test_id}"


@dataclass(frozen=True)
class FlakyRun:
    """One main-branch run in which ``test_id`` was flaky (``started_at`` UTC)."""

    test_id: str
    run_id: str
    head: str
    started_at: datetime


@dataclass(frozen=True)
class GreenStreak:
    """Consecutive ``passed`` results of a test, newest first back to its newest non-green;
    ``oldest``/``newest`` are the start times of the first and last green run (None if 0)."""

    greens: int
    oldest: datetime | None
    newest: datetime | None

    @property
    def span_s(self) -> float:
        """Seconds between the oldest and the newest green run (0 for fewer than two)."""
        if self.oldest is None or self.newest is None:
            return 0.0
        return (self.newest - self.oldest).total_seconds()


def flaky_runs(session: Session, *, main_ref: str, since: datetime, until: datetime,
               triggers: Sequence[str] = MAIN_TRIGGERS) -> dict[str, list[FlakyRun]]:
    """Per test id, the main-branch runs started in ``[since, until]`` in which it was flaky:
    outcome ``flaky`` (failed, then passed on a rerun) or a stored ``FLAKY`` verdict made by a
    rule in ``EVIDENCE_RULES`` (``relay.domain.flakiness``); oldest run first."""
    runs = trunk_runs(main_ref, triggers).where(RunRecord.started_at >= since,
                                                RunRecord.started_at <= until)
    pairs = union(
        select(TestResultRecord.test_id, TestResultRecord.run_id)
        .where(TestResultRecord.outcome == "flaky", TestResultRecord.run_id.in_(runs)),
        select(VerdictRecord.test_id, VerdictRecord.run_id)
        .where(VerdictRecord.verdict == "FLAKY", VerdictRecord.flaky_by.in_(EVIDENCE_RULES),
               VerdictRecord.run_id.in_(runs)),
    ).subquery()
    stmt = (select(pairs.c.test_id, RunRecord.id, RunRecord.head, RunRecord.started_at)
            .join(RunRecord, RunRecord.id == pairs.c.run_id)
            .order_by(pairs.c.test_id, RunRecord.started_at, RunRecord.id))
    out: dict[str, list[FlakyRun]] = {}
    for test_id, run_id, head, started in session.execute(stmt):
        out.setdefault(test_id, []).append(FlakyRun(test_id, run_id, head, as_utc(started)))
    return out


def green_streaks(session: Session, test_ids: Sequence[str], *, main_ref: str, until: datetime,
                  triggers: Sequence[str] = MAIN_TRIGGERS) -> dict[str, GreenStreak]:
    """Per test id, its consecutive ``passed`` results in main-branch runs started up to
    ``until``, counted from the newest back to its newest non-green result (failed, flaky,
    crashed, timed out); skipped/xfailed/xpassed results neither count nor break the streak.
    One query for all ids (every id is in the answer, with 0 greens when it has none)."""
    out = {t: GreenStreak(0, None, None) for t in test_ids}
    if not out:
        return out
    stmt = (select(TestResultRecord.test_id, TestResultRecord.outcome, RunRecord.started_at)
            .join(RunRecord, RunRecord.id == TestResultRecord.run_id)
            .where(TestResultRecord.test_id.in_(list(out)),
                   TestResultRecord.run_id.in_(trunk_runs(main_ref, triggers)),
                   RunRecord.started_at <= until)
            .order_by(RunRecord.started_at.desc(), RunRecord.id.desc()))
    broken: set[str] = set()
    with session.execute(stmt.execution_options(yield_per=1000)) as rows:
        for test_id, outcome, started in rows:
            if len(broken) == len(out):
                break  # every streak has ended: older results cannot matter
            if test_id in broken or outcome not in NOT_GREEN | {"passed"}:
                continue
            if outcome in NOT_GREEN:
                broken.add(test_id)
                continue
            seen = out[test_id]
            at = as_utc(started)
            out[test_id] = GreenStreak(seen.greens + 1, at, seen.newest or at)
    return out


def claim(session: Session, record: QuarantineRecord) -> bool:
    """Insert ``record`` and commit; ``False`` (rolled back) when the test already has a row
    (``test_id`` is UNIQUE, so of two racing evaluations exactly one files the issue)."""
    session.add(record)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def load_quarantine(session: Session, states: Sequence[str] = QUARANTINE_STATES
                    ) -> list[QuarantineRecord]:
    """Quarantine rows in the given states, oldest disable first (SQLite returns naive times:
    read them through ``as_utc``)."""
    return list(session.scalars(select(QuarantineRecord)
                                .where(QuarantineRecord.state.in_(list(states)))
                                .order_by(QuarantineRecord.disabled_at, QuarantineRecord.id)))


def quarantined_tests(session: Session) -> dict[str, QuarantineNote]:
    """``{test id: QuarantineNote}`` of every quarantined test (both states: a re-enable proposal
    leaves the issue open, so the test stays disabled until it is closed); the note names the
    issue as ``DISABLED <id> (<issue url>)`` (or says that no issue was filed) and the runs it was
    flaky in when disabled."""
    rows = session.execute(select(QuarantineRecord.test_id, QuarantineRecord.issue_url,
                                  QuarantineRecord.flaky_run_ids))
    return {t: QuarantineNote(f"{disabled_title(t)} ({url or 'no issue filed'})", tuple(runs or ()))
            for t, url, runs in rows}


def quarantine_json(session: Session) -> dict[str, dict[str, object]]:
    """``{test id: row as JSON}`` of every quarantine row, oldest disable first (the dashboard's
    ``GET /api/v1/quarantine`` and the ``quarantine`` field of ``GET /api/v1/flaky``)."""
    out: dict[str, dict[str, object]] = {}
    for r in load_quarantine(session):
        proposed = r.reenable_proposed_at
        out[r.test_id] = {
            "test_id": r.test_id, "state": r.state, "reason": r.reason,
            "flaky_runs": r.flaky_runs, "greens": r.greens, "issue_repo": r.issue_repo,
            "issue_number": r.issue_number, "issue_url": r.issue_url,
            "disabled_at": as_utc(r.disabled_at).isoformat(),
            "reenable_proposed_at": as_utc(proposed).isoformat() if proposed else None}
    return out
