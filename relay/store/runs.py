"""Persisting ``relay.models.Run`` with its ``TestResult``s; loading them back unchanged.

``save_run`` is an upsert by run id (results replaced), so saving the same run twice — e.g. by
the pipeline and again by the delivery processor — is harmless.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from relay.errors import RunNotFound
from relay.models import Run
from relay.store.tables import RunRecord, TestResultRecord
from selection.models import StageStats
from test_specs.results import TestResult

__all__ = ["save_run", "load_run", "list_runs"]


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def save_run(session: Session, run: Run, *, commit: bool = True) -> None:
    """Insert or replace ``run`` and its results, then commit (``commit=False``: flush only, so
    the caller can commit it together with its outbox rows)."""
    session.execute(delete(TestResultRecord).where(TestResultRecord.run_id == run.id))
    record = session.get(RunRecord, run.id) or RunRecord(id=run.id)
    record.backend = run.backend
    record.upstream = run.upstream
    record.base = run.base
    record.head = run.head
    record.title = run.title
    record.trigger = run.trigger
    record.ref = run.ref
    record.delivery_id = run.delivery_id
    record.started_at = run.started_at
    record.finished_at = run.finished_at
    record.universe = run.universe
    record.selected = run.selected
    record.conclusion = run.conclusion
    record.stages = [s.model_dump(mode="json", by_alias=True) for s in run.stages]
    record.counts = dict(run.counts)
    session.add(record)
    session.flush()
    session.add_all(
        TestResultRecord(run_id=run.id, test_id=r.id, upstream=r.upstream, op=r.op,
                         module=r.module, dtype=r.dtype, mode=r.mode, outcome=r.outcome,
                         duration_ms=r.duration_ms, attempts=r.attempts, message=r.message)
        for r in run.results
    )
    if commit:
        session.commit()
        session.expire(record)
    else:
        session.flush()


def _to_run(record: RunRecord, *, with_results: bool) -> Run:
    results = [
        TestResult(id=r.test_id, upstream=r.upstream, op=r.op, module=r.module, dtype=r.dtype,
                   mode=r.mode, outcome=r.outcome, duration_ms=r.duration_ms,  # type: ignore[arg-type]
                   attempts=r.attempts, message=r.message)
        for r in record.results
    ] if with_results else []
    return Run(
        id=record.id, backend=record.backend, upstream=record.upstream, base=record.base,
        head=record.head, title=record.title, trigger=record.trigger,  # type: ignore[arg-type]
        ref=record.ref,
        delivery_id=record.delivery_id, started_at=_utc(record.started_at),
        finished_at=_utc(record.finished_at), universe=record.universe,
        selected=record.selected, conclusion=record.conclusion,  # type: ignore[arg-type]
        stages=[StageStats.model_validate(s) for s in record.stages or []],
        results=results, counts=dict(record.counts or {}),
    )


def load_run(session: Session, run_id: str) -> Run:
    """The stored run with its results (in insertion order); raises ``RunNotFound``."""
    record = session.scalar(
        select(RunRecord).where(RunRecord.id == run_id).options(selectinload(RunRecord.results))
    )
    if record is None:
        raise RunNotFound(run_id)
    return _to_run(record, with_results=True)


def list_runs(session: Session, limit: int = 50, *, with_results: bool = False) -> list[Run]:
    """Up to ``limit`` runs, newest ``started_at`` first (ties by id); results omitted unless
    ``with_results`` (``counts`` is always filled)."""
    stmt = select(RunRecord).order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(limit)
    if with_results:
        stmt = stmt.options(selectinload(RunRecord.results))
    return [_to_run(r, with_results=with_results) for r in session.scalars(stmt)]
