"""Persisting ``relay.domain.run.Run`` with everything it holds; loading it back unchanged.

``save_run`` writes the run row, its ``RunResult``s (with their failure ``detail``), its
selection (``relay.store.selections``), its environments and verdicts
(``relay.store.regression``) and its culprit (``relay.store.culprits``) in the caller's
transaction — one run, one transaction.  It is an upsert by run id (children replaced), so a
retried transaction cannot leave two copies.  ``load_run`` and ``list_runs`` read it back:
``environments``, ``verdicts`` and ``selection`` (``load_run``; verdicts also with
``list_runs(with_results=True)``),
``verdict_counts`` (always), ``culprit`` and ``baseline_run``.

``baseline_run`` is stored with the run: the stored run whose base results it was compared
with (the one computed for it, else the first reused).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, selectinload

from relay.domain.baseline import Baseline
from relay.domain.results import RunResult
from relay.domain.run import Run
from relay.domain.verdicts import VERDICTS
from relay.errors import RunNotFound
from relay.store.culprits import load_culprits, save_culprit
from relay.store.regression import RunEnvironmentRecord, VerdictRecord, load_verdicts, save_regression
from relay.store.selections import load_selection, save_selection
from relay.store.tables import RunRecord, TestResultRecord, as_utc
from selection.models import StageStats

__all__ = ["save_run", "load_run", "list_runs", "load_runs", "run_for_delivery"]


def save_run(session: Session, run: Run, *, commit: bool = True) -> None:
    """Insert or replace ``run`` with its results, environments, verdicts and culprit, then
    commit (``commit=False``: flush only, so the caller commits it together with its outbox
    row and the delivery's final state)."""
    session.execute(delete(TestResultRecord).where(TestResultRecord.run_id == run.id))
    record = session.get(RunRecord, run.id) or RunRecord(id=run.id)
    record.backend = run.backend
    record.upstream = run.upstream
    record.base = run.base
    record.head = run.head
    record.title = run.title
    record.trigger = run.trigger
    record.ref = run.ref
    record.baseline_run = run.baseline_run
    record.delivery_id = run.delivery_id
    record.started_at = run.started_at
    record.finished_at = run.finished_at
    record.selected_at = run.selected_at
    record.universe = run.universe
    record.selected = run.selected
    record.conclusion = run.conclusion
    record.stages = [s.model_dump(mode="json", by_alias=True) for s in run.stages]
    record.counts = dict(run.counts)
    record.spec_proposal = run.spec_proposal
    record.reruns_skipped = run.reruns_skipped
    record.baseline = run.baseline.model_dump(mode="json") if run.baseline is not None else None
    session.add(record)
    session.flush()
    session.add_all(
        TestResultRecord(run_id=run.id, test_id=r.id, upstream=r.upstream, op=r.op,
                         module=r.module, dtype=r.dtype, mode=r.mode, outcome=r.outcome,
                         duration_ms=r.duration_ms, attempts=r.attempts, message=r.message,
                         detail=r.detail, not_rerun=r.not_rerun)
        for r in run.results
    )
    save_selection(session, run.id, run.selection)
    save_regression(session, run.id, run.environments, run.verdicts, commit=False)
    if run.culprit is not None:
        save_culprit(session, run.id, run.culprit, commit=False)
    if commit:
        session.commit()
        session.expire(record)
    else:
        session.flush()


def _environments(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if not run_ids:
        return out
    rows = session.scalars(select(RunEnvironmentRecord)
                           .where(RunEnvironmentRecord.run_id.in_(list(run_ids)))
                           .order_by(RunEnvironmentRecord.id))
    for r in rows:
        out.setdefault(r.run_id, {})[r.role] = {
            "name": r.name, "faults": r.faults, "torch_version": r.torch_version,
            "torch_git_version": r.torch_git_version, "torch_wheel_sha256": r.wheel_sha256}
    return out


def _verdict_counts(session: Session, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    if not run_ids:
        return out
    rows = session.execute(select(VerdictRecord.run_id, VerdictRecord.verdict, func.count())
                           .where(VerdictRecord.run_id.in_(list(run_ids)))
                           .group_by(VerdictRecord.run_id, VerdictRecord.verdict))
    for run_id, verdict, n in rows:
        out.setdefault(run_id, {k: 0 for k in VERDICTS})[verdict] = int(n)
    return out


def _to_run(record: RunRecord, *, with_results: bool, extra: dict[str, Any] | None = None) -> Run:
    results = [
        RunResult(id=r.test_id, upstream=r.upstream, op=r.op, module=r.module, dtype=r.dtype,
                  mode=r.mode, outcome=r.outcome, duration_ms=r.duration_ms,  # type: ignore[arg-type]
                  attempts=r.attempts, message=r.message, detail=r.detail, not_rerun=r.not_rerun)
        for r in record.results
    ] if with_results else []
    return Run(
        id=record.id, backend=record.backend, upstream=record.upstream, base=record.base,
        head=record.head, title=record.title, trigger=record.trigger,  # type: ignore[arg-type]
        ref=record.ref, baseline_run=record.baseline_run,
        delivery_id=record.delivery_id, started_at=as_utc(record.started_at),
        finished_at=as_utc(record.finished_at),
        selected_at=as_utc(record.selected_at) if record.selected_at else None, universe=record.universe,
        selected=record.selected, conclusion=record.conclusion,  # type: ignore[arg-type]
        stages=[StageStats.model_validate(s) for s in record.stages or []],
        results=results, counts=dict(record.counts or {}), spec_proposal=record.spec_proposal,
        reruns_skipped=record.reruns_skipped or 0,
        baseline=Baseline.model_validate(record.baseline) if record.baseline else None,
        **(extra or {}),
    )


def _regression(session: Session, records: Sequence[RunRecord], *,
                with_verdicts: bool) -> dict[str, dict[str, Any]]:
    """Per run id, the regression fields of ``Run`` read from their own tables."""
    ids = [r.id for r in records]
    envs = _environments(session, ids)
    counts = _verdict_counts(session, ids)
    culprits = load_culprits(session, ids)
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        extra: dict[str, Any] = {}
        if r.id in envs:
            extra["environments"] = envs[r.id]
        if r.id in counts:
            extra["verdict_counts"] = counts[r.id]
            if with_verdicts:
                extra["verdicts"] = load_verdicts(session, r.id)
        if r.id in culprits:
            extra["culprit"] = culprits[r.id]
        out[r.id] = extra
    return out


def load_run(session: Session, run_id: str) -> Run:
    """The stored run with its results (in insertion order); raises ``RunNotFound``."""
    record = session.scalar(
        select(RunRecord).where(RunRecord.id == run_id).options(selectinload(RunRecord.results))
    )
    if record is None:
        raise RunNotFound(run_id)
    extra = _regression(session, [record], with_verdicts=True)[record.id]
    return _to_run(record, with_results=True, extra={**extra, "selection": load_selection(session, run_id)})


def list_runs(session: Session, limit: int = 50, *, with_results: bool = False) -> list[Run]:
    """Up to ``limit`` runs, newest ``started_at`` first (ties by id); results and verdicts
    omitted unless ``with_results`` (``counts``, ``verdict_counts``, ``environments``,
    ``baseline_run`` and ``culprit`` are always filled)."""
    stmt = select(RunRecord).order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(limit)
    if with_results:
        stmt = stmt.options(selectinload(RunRecord.results))
    records = list(session.scalars(stmt))
    extra = _regression(session, records, with_verdicts=with_results)
    return [_to_run(r, with_results=with_results, extra=extra[r.id]) for r in records]


def load_runs(session: Session, run_ids: Sequence[str], *, with_results: bool = False) -> list[Run]:
    """The stored runs of ``run_ids`` in that order (unknown ids skipped); like ``list_runs``,
    results and verdicts only ``with_results``."""
    if not run_ids:
        return []
    stmt = select(RunRecord).where(RunRecord.id.in_(list(run_ids)))
    if with_results:
        stmt = stmt.options(selectinload(RunRecord.results))
    records = {r.id: r for r in session.scalars(stmt)}
    ordered = [records[i] for i in dict.fromkeys(run_ids) if i in records]
    extra = _regression(session, ordered, with_verdicts=with_results)
    return [_to_run(r, with_results=with_results, extra=extra[r.id]) for r in ordered]


def run_for_delivery(session: Session, delivery_id: str) -> Run | None:
    """The run already stored for a webhook delivery (newest), or ``None``: a delivery
    interrupted after its run was stored is finished with that run, not run twice."""
    runs = RunRecord.__table__  # Core: one cheap indexed lookup per processed delivery
    run_id = session.scalar(select(runs.c.id).where(runs.c.delivery_id == delivery_id,
                                                    runs.c.trigger == "webhook")
                            .order_by(runs.c.started_at.desc()).limit(1))
    return load_run(session, run_id) if run_id is not None else None
