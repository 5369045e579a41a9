"""Persistence of regression data: each run's environments and its per-test verdicts.

``run_environments``  one row per (run, role): the torch a run's tests executed against
                      (``role`` is ``head`` or ``base``; name, torch version, git version,
                      wheel sha256, injected faults)
``verdicts``          one row per (run, test id): the regression verdict (``relay.domain.verdicts``)

``find_baseline`` is how a run reuses stored base results: the newest runs whose *head* is the
change's base, executed in an environment of the same name, on the same backend.

``trunk_runs`` / ``trunk_history`` are the only history a FLAKY-by-flips verdict reads
(``relay.domain.flakiness``): runs of the main ref, never a pull request's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, Select, String, Text, UniqueConstraint, or_, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.domain.flakiness import FLIP_OUTCOMES, TrunkResult, env_key, first_line, injects_regression
from relay.domain.verdicts import Verdict
from relay.store.tables import Base, DeliveryRecord, RunRecord, TestResultRecord

__all__ = ["RunEnvironmentRecord", "VerdictRecord", "save_regression", "load_environments",
           "load_verdicts", "find_baseline", "trunk_runs", "trunk_history", "MAIN_TRIGGERS",
           "TRUNK_HISTORY_LIMIT"]

#: triggers of runs on upstream commits (``baseline`` / ``bisect`` runs are helpers, not signal)
MAIN_TRIGGERS = ("webhook", "replay")
#: trunk results read per test (newest first), before grouping by commit and build
TRUNK_HISTORY_LIMIT = 50


class RunEnvironmentRecord(Base):
    """The environment one role of a run executed in."""

    __tablename__ = "run_environments"
    __table_args__ = (UniqueConstraint("run_id", "role", name="uq_run_environments_role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(10))
    name: Mapped[str] = mapped_column(String(1000), index=True)
    torch_version: Mapped[str | None] = mapped_column(String(100))
    torch_git_version: Mapped[str | None] = mapped_column(String(100))
    wheel_sha256: Mapped[str | None] = mapped_column(String(64))
    faults: Mapped[str | None] = mapped_column(Text)


class VerdictRecord(Base):
    """One test's verdict in a run."""

    __tablename__ = "verdicts"
    __table_args__ = (UniqueConstraint("run_id", "test_id", name="uq_verdicts_run_test"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    test_id: Mapped[str] = mapped_column(String(500))
    verdict: Mapped[str] = mapped_column(String(20), index=True)
    head: Mapped[str] = mapped_column(String(20))
    base: Mapped[str | None] = mapped_column(String(20))
    reason: Mapped[str] = mapped_column(Text, default="")
    #: FLAKY only: the rule (``relay.domain.flakiness.FlakyBy``) and its run ids (migration 0010)
    flaky_by: Mapped[str | None] = mapped_column(String(20))
    evidence: Mapped[list[str] | None] = mapped_column(JSON)


def save_regression(session: Session, run_id: str, environments: dict[str, dict[str, Any]],
                    verdicts: Sequence[Verdict], *, commit: bool = True) -> None:
    """Replace the environments and verdicts stored for ``run_id`` (the run row must exist);
    commits unless ``commit=False`` (then flushes; ``save_run`` does so)."""
    for model in (RunEnvironmentRecord, VerdictRecord):
        for row in session.scalars(select(model).where(model.run_id == run_id)):
            session.delete(row)
    session.flush()
    for role, env in environments.items():
        session.add(RunEnvironmentRecord(
            run_id=run_id, role=role, name=str(env.get("name")), faults=env.get("faults"),
            torch_version=env.get("torch_version"), torch_git_version=env.get("torch_git_version"),
            wheel_sha256=env.get("torch_wheel_sha256")))
    session.add_all(VerdictRecord(run_id=run_id, test_id=v.id, verdict=v.verdict, head=v.head,
                                  base=v.base, reason=v.reason, flaky_by=v.flaky_by,
                                  evidence=list(v.evidence) or None) for v in verdicts)
    if commit:
        session.commit()
    else:
        session.flush()


def load_environments(session: Session, run_id: str) -> dict[str, dict[str, Any]]:
    """``{role: environment}`` of a run, in the shape ``relay.envs.environments.describe`` gives."""
    rows = session.scalars(select(RunEnvironmentRecord).where(RunEnvironmentRecord.run_id == run_id))
    return {r.role: {"name": r.name, "faults": r.faults, "torch_version": r.torch_version,
                     "torch_git_version": r.torch_git_version, "torch_wheel_sha256": r.wheel_sha256}
            for r in rows}


def load_verdicts(session: Session, run_id: str) -> list[Verdict]:
    """The verdicts of a run, in insertion order."""
    rows = session.scalars(select(VerdictRecord).where(VerdictRecord.run_id == run_id)
                           .order_by(VerdictRecord.id))
    return [Verdict(id=r.test_id, verdict=r.verdict, head=r.head, base=r.base, reason=r.reason,
                    flaky_by=r.flaky_by, evidence=list(r.evidence or ()))  # type: ignore[arg-type]
            for r in rows]


def find_baseline(session: Session, *, ref: str, env_name: str, backend: str,
                  limit: int = 20) -> list[str]:
    """Ids of runs (newest first) whose head is ``ref``, executed on ``backend`` in the
    environment called ``env_name`` (as the head role)."""
    stmt = (select(RunRecord.id)
            .join(RunEnvironmentRecord, RunEnvironmentRecord.run_id == RunRecord.id)
            .where(RunRecord.head == ref, RunRecord.backend == backend,
                   RunEnvironmentRecord.role == "head", RunEnvironmentRecord.name == env_name)
            .order_by(RunRecord.started_at.desc()).limit(limit))
    return list(session.scalars(stmt))


def trunk_runs(main_ref: str, triggers: Sequence[str] = MAIN_TRIGGERS) -> Select:
    """``SELECT runs.id`` of trunk runs: ``ref`` is ``main_ref``, the trigger runs upstream commits
    (``webhook``, ``replay``), and no ``pull_request`` delivery made it (PR runs record
    ``refs/pull/<n>/head``; older ones recorded their base ref, so the delivery is checked too).
    PyTorch HUD counts only trunk jobs as flakiness evidence."""
    return (select(RunRecord.id)
            .outerjoin(DeliveryRecord, DeliveryRecord.delivery_id == RunRecord.delivery_id)
            .where(RunRecord.ref == main_ref, RunRecord.trigger.in_(list(triggers)),
                   or_(DeliveryRecord.event.is_(None), DeliveryRecord.event != "pull_request")))


def trunk_history(session: Session, test_ids: Sequence[str], *, main_ref: str, backend: str,
                  env_name: str, head: str | None,
                  limit: int = TRUNK_HISTORY_LIMIT) -> dict[str, list[TrunkResult]]:
    """Each test's ``passed``/``failed`` results in trunk runs (``trunk_runs``) on ``backend``
    whose head environment is this run's (``env_key`` of ``env_name`` with ``head``) and injects
    no regression (``injects_regression``); at most ``limit`` per test, oldest first.  Runs
    without a stored environment are left out (their environment is unknown).  One query."""
    ids = list(dict.fromkeys(test_ids))
    if not ids:
        return {}
    key = env_key(env_name, head)
    env = RunEnvironmentRecord
    stmt = (select(TestResultRecord.test_id, TestResultRecord.outcome, TestResultRecord.message,
                   RunRecord.id, RunRecord.head, env.name, env.faults, env.torch_version,
                   env.torch_git_version, env.wheel_sha256)
            .join(RunRecord, RunRecord.id == TestResultRecord.run_id)
            .join(env, (env.run_id == RunRecord.id) & (env.role == "head"))
            .where(TestResultRecord.test_id.in_(ids), TestResultRecord.outcome.in_(FLIP_OUTCOMES),
                   RunRecord.backend == backend, RunRecord.id.in_(trunk_runs(main_ref)))
            .order_by(RunRecord.started_at.desc(), RunRecord.id.desc()))
    if key == env_name:  # no commit in the name: only runs of exactly this environment can match
        stmt = stmt.where(env.name == env_name)
    out: dict[str, list[TrunkResult]] = {}
    for test_id, outcome, message, run_id, run_head, name, faults, version, git, wheel in session.execute(stmt):
        seen = out.setdefault(test_id, [])
        if len(seen) >= limit or injects_regression(faults) or env_key(name, run_head) != key:
            continue
        build = " | ".join(str(x) for x in (name, version, git, wheel))
        seen.append(TrunkResult(run_id=run_id, head=run_head, build=build, outcome=outcome,
                                message=first_line(message) or None))
    return {k: list(reversed(v)) for k, v in out.items() if v}
