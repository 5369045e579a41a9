"""Read-side queries behind the dashboard grid and search (``relay.service.queries``): results
and verdicts counted per (run, spec group), the recent runs of the grid's rows, the deliveries
still in flight, and a search over recent results.

A *spec group* is the part of a test id before its first ``::`` — the spec file an item came
from (``opinfo_core::TestCommon::test_compare_cpu[add-float16]`` → ``opinfo_core``); it is the
grid's column under a backend, as a workflow's job is a column on HUD.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import case, func, or_, select
from sqlalchemy.orm import Session

from relay.store.regression import VerdictRecord
from relay.store.tables import DeliveryPayloadRecord, DeliveryRecord, RunRecord, TestResultRecord, as_utc

__all__ = ["spec_group", "group_counts", "group_verdicts", "first_failures", "recent_run_rows", "inflight_deliveries",
           "search_results", "SEARCH_RUNS"]

#: how many of the newest runs a search looks through
SEARCH_RUNS = 200


def spec_group(test_id: str) -> str:
    """The spec group of ``test_id`` (see the module docstring); the whole id when it has no ``::``."""
    return test_id.split("::", 1)[0]


def _group_expr(session: Session, column: Any) -> Any:
    """``spec_group`` in SQL for the session's dialect (PostgreSQL or SQLite)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.split_part(column, "::", 1)
    at = func.instr(column, "::")
    return case((at > 0, func.substr(column, 1, at - 1)), else_=column)


def group_counts(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    """``{run id: {spec group: {outcome: results}}}`` of ``run_ids``."""
    if not run_ids:
        return {}
    group = _group_expr(session, TestResultRecord.test_id)
    rows = session.execute(select(TestResultRecord.run_id, group, TestResultRecord.outcome, func.count())
                           .where(TestResultRecord.run_id.in_(list(run_ids)))
                           .group_by(TestResultRecord.run_id, group, TestResultRecord.outcome))
    out: dict[str, dict[str, dict[str, int]]] = {}
    for run_id, name, outcome, n in rows:
        out.setdefault(run_id, {}).setdefault(name, {})[outcome] = int(n)
    return out


def first_failures(session: Session, run_ids: Sequence[str],
                   outcomes: Sequence[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """``{run id: {spec group: (test id, first line of its message)}}``: per run and group, the
    first (by test id) result whose outcome is in ``outcomes`` — what a grid cell's tooltip
    names.  One query over ``run_ids``; a message's first line is cut at 300 characters."""
    if not run_ids:
        return {}
    rows = session.execute(select(TestResultRecord.run_id, TestResultRecord.test_id, TestResultRecord.message)
                           .where(TestResultRecord.run_id.in_(list(run_ids)),
                                  TestResultRecord.outcome.in_(list(outcomes)))
                           .order_by(TestResultRecord.run_id, TestResultRecord.test_id))
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for run_id, test_id, message in rows:
        first = next((line.strip() for line in (message or "").splitlines() if line.strip()), "")
        out.setdefault(run_id, {}).setdefault(spec_group(test_id), (test_id, first[:300]))
    return out


def group_verdicts(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    """``{run id: {spec group: {verdict: tests}}}`` of the runs among ``run_ids`` with verdicts."""
    if not run_ids:
        return {}
    group = _group_expr(session, VerdictRecord.test_id)
    rows = session.execute(select(VerdictRecord.run_id, group, VerdictRecord.verdict, func.count())
                           .where(VerdictRecord.run_id.in_(list(run_ids)))
                           .group_by(VerdictRecord.run_id, group, VerdictRecord.verdict))
    out: dict[str, dict[str, dict[str, int]]] = {}
    for run_id, name, verdict, n in rows:
        out.setdefault(run_id, {}).setdefault(name, {})[verdict] = int(n)
    return out


def recent_run_rows(session: Session, limit: int) -> list[RunRecord]:
    """The ``limit`` newest runs (rows only, no results), newest first."""
    return list(session.scalars(select(RunRecord)
                                .order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(limit)))


def inflight_deliveries(session: Session, limit: int = 100) -> list[Any]:
    """Deliveries ``received`` (queued or waiting for a retry) or ``processing``, newest first:
    rows of ``delivery_id, event, status, received_at, next_attempt_at, payload`` (the payload
    text; the grid reads the head commit from it)."""
    D, P = DeliveryRecord.__table__, DeliveryPayloadRecord.__table__
    return list(session.execute(
        select(D.c.delivery_id, D.c.event, D.c.status, D.c.received_at, D.c.next_attempt_at,
               P.c.payload)
        .join_from(D, P, P.c.delivery_id == D.c.delivery_id, isouter=True)
        .where(D.c.status.in_(("received", "processing")))
        .order_by(D.c.id.desc()).limit(limit)))


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search_results(session: Session, *, test: str | None = None, op: str | None = None,
                   verdict: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The latest result of each test among the ``SEARCH_RUNS`` newest runs whose id (or generic
    upstream name) contains ``test``, whose OpInfo is ``op`` and (with ``verdict``) whose verdict
    in that run is ``verdict``: ``[{test_id, upstream, op, dtype, outcome, verdict, run_id, head,
    started_at, runs}]`` (``runs``: how many of those runs have the test), ids in order."""
    recent = select(RunRecord.id).order_by(RunRecord.started_at.desc()).limit(SEARCH_RUNS).subquery()
    stmt = (select(TestResultRecord, RunRecord, VerdictRecord.verdict)
            .join(RunRecord, TestResultRecord.run_id == RunRecord.id)
            .join(recent, recent.c.id == RunRecord.id)
            .outerjoin(VerdictRecord, (VerdictRecord.run_id == TestResultRecord.run_id)
                       & (VerdictRecord.test_id == TestResultRecord.test_id)))
    if test:
        pattern = _like(test)
        stmt = stmt.where(or_(TestResultRecord.test_id.like(pattern, escape="\\"),
                              TestResultRecord.upstream.like(pattern, escape="\\")))
    if op:
        stmt = stmt.where(TestResultRecord.op == op)
    if verdict:
        stmt = stmt.where(VerdictRecord.verdict == verdict)
    stmt = stmt.order_by(TestResultRecord.test_id, RunRecord.started_at.desc())
    latest: dict[str, dict[str, Any]] = {}
    for t, r, v in session.execute(stmt):
        if t.test_id in latest:
            latest[t.test_id]["runs"] += 1
            continue
        if len(latest) >= limit:
            continue
        latest[t.test_id] = {"test_id": t.test_id, "upstream": t.upstream, "op": t.op, "dtype": t.dtype,
                             "outcome": t.outcome, "verdict": v, "run_id": r.id, "head": r.head,
                             "started_at": as_utc(r.started_at).isoformat(), "runs": 1}
    return list(latest.values())
