"""Read-side queries for the dashboard: runs per commit, one test's history, flaky tests, the
notable verdicts (NEW, FLAKY) of recent runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from relay.domain.verdicts import Verdict
from relay.store.regression import VerdictRecord
from relay.store.tables import DispatchRecord, JobRecord, RunRecord, TestResultRecord

__all__ = ["runs_for_commit", "jobs_for_commit", "test_history", "flaky_tests", "local_runs_since",
           "notable_verdicts", "NOTABLE"]

#: the verdict classes the dashboard page lists test by test
NOTABLE = ("NEW", "FLAKY")


def runs_for_commit(session: Session, sha: str) -> list[str]:
    """Ids of runs whose head (or base) is ``sha`` (a full sha or a ≥ 7-char prefix)."""
    stmt = select(RunRecord.id).where(or_(RunRecord.head.startswith(sha),
                                          RunRecord.base.startswith(sha)))
    return list(session.scalars(stmt.order_by(RunRecord.started_at.desc())))


def jobs_for_commit(session: Session, sha: str) -> list[tuple[JobRecord, DispatchRecord]]:
    rows = session.execute(select(JobRecord, DispatchRecord)
                           .join(DispatchRecord, JobRecord.dispatch_id == DispatchRecord.id)
                           .where(DispatchRecord.head_sha.startswith(sha)).order_by(JobRecord.id))
    return [(j, d) for j, d in rows]


def test_history(session: Session, test: str, limit: int = 100) -> list[dict[str, Any]]:
    """Results of ``test`` (an item id or a generic upstream name), newest run first (a baseline
    computed for a run starts with it and counts as the older of the two), each with
    the run's ``title``, the failure output (``message``, ``detail``) and the ``verdict`` the
    test got in that run (``None`` without a baseline)."""
    rows = session.execute(
        select(TestResultRecord, RunRecord, VerdictRecord.verdict)
        .join(RunRecord, TestResultRecord.run_id == RunRecord.id)
        .outerjoin(VerdictRecord, (VerdictRecord.run_id == TestResultRecord.run_id)
                   & (VerdictRecord.test_id == TestResultRecord.test_id))
        .where(or_(TestResultRecord.test_id == test, TestResultRecord.upstream == test))
        .order_by(RunRecord.started_at.desc(), case((RunRecord.trigger == "baseline", 1), else_=0),
                  TestResultRecord.id).limit(limit))
    return [{"run_id": r.id, "head": r.head, "started_at": r.started_at.isoformat(),
             "backend": r.backend, "test_id": t.test_id, "outcome": t.outcome,
             "duration_ms": t.duration_ms, "attempts": t.attempts, "message": t.message,
             "detail": t.detail, "verdict": v, "title": r.title}
            for t, r, v in rows]


test_history.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def flaky_tests(session: Session, limit: int = 200) -> list[dict[str, Any]]:
    """Tests with a ``flaky`` outcome (failed then passed on rerun), most frequent first."""
    rows = session.execute(
        select(TestResultRecord.test_id, TestResultRecord.upstream, func.count(),
               func.max(RunRecord.started_at))
        .join(RunRecord, TestResultRecord.run_id == RunRecord.id)
        .where(TestResultRecord.outcome == "flaky")
        .group_by(TestResultRecord.test_id, TestResultRecord.upstream)
        .order_by(func.count().desc(), TestResultRecord.test_id).limit(limit))
    return [{"test_id": t, "upstream": u, "flaky_runs": int(n),
             "last_seen": last.isoformat() if last else None} for t, u, n, last in rows]


def local_runs_since(session: Session, backend: str, since: datetime) -> list[RunRecord]:
    return list(session.scalars(select(RunRecord).where(RunRecord.backend == backend,
                                                        RunRecord.started_at >= since)))


def notable_verdicts(session: Session, run_ids: Sequence[str], kinds: Sequence[str] = NOTABLE,
                     per_run: int = 50) -> dict[str, list[Verdict]]:
    """``{run id: [Verdict]}``: the verdicts of ``kinds`` of each run (at most ``per_run`` each,
    ``kinds`` order, then insertion order), for the page's per-run lists."""
    if not run_ids:
        return {}
    rows = session.scalars(select(VerdictRecord)
                           .where(VerdictRecord.run_id.in_(list(run_ids)),
                                  VerdictRecord.verdict.in_(list(kinds)))
                           .order_by(VerdictRecord.id))
    rank = {k: i for i, k in enumerate(kinds)}
    out: dict[str, list[Verdict]] = {}
    for r in sorted(rows, key=lambda r: rank[r.verdict]):
        got = out.setdefault(r.run_id, [])
        if len(got) < per_run:
            got.append(Verdict(id=r.test_id, verdict=r.verdict, head=r.head,  # type: ignore[arg-type]
                               base=r.base, reason=r.reason))
    return out
