"""Persistence of regression data: each run's environments and its per-test verdicts.

``run_environments``  one row per (run, role): the torch a run's tests executed against
                      (``role`` is ``head`` or ``base``; name, torch version, git version,
                      wheel sha256, injected faults)
``verdicts``          one row per (run, test id): the regression verdict (``relay.domain.verdicts``)

``find_baseline`` is how a run reuses stored base results: the newest runs whose *head* is the
change's base, executed in an environment of the same name, on the same backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from relay.domain.verdicts import Verdict
from relay.store.tables import Base, RunRecord

__all__ = ["RunEnvironmentRecord", "VerdictRecord", "save_regression", "load_environments",
           "load_verdicts", "find_baseline", "recent_outcomes"]


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
                                  base=v.base, reason=v.reason) for v in verdicts)
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
    return [Verdict(id=r.test_id, verdict=r.verdict, head=r.head, base=r.base, reason=r.reason)
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


def recent_outcomes(session: Session, test_ids: Sequence[str], *, limit: int = 10,
                    triggers: Sequence[str] = ("webhook", "replay")) -> dict[str, list[str]]:
    """The last ``limit`` outcomes of each test in runs of the given triggers, oldest first
    (the history a FLAKY-by-flips verdict reads)."""
    from relay.store.tables import TestResultRecord

    if not test_ids:
        return {}
    stmt = (select(TestResultRecord.test_id, TestResultRecord.outcome)
            .join(RunRecord, RunRecord.id == TestResultRecord.run_id)
            .where(TestResultRecord.test_id.in_(list(test_ids)), RunRecord.trigger.in_(list(triggers)))
            .order_by(RunRecord.started_at.desc()))
    out: dict[str, list[str]] = {}
    for test_id, outcome in session.execute(stmt):
        seen = out.setdefault(test_id, [])
        if len(seen) < limit:
            seen.append(outcome)
    return {k: list(reversed(v)) for k, v in out.items()}
