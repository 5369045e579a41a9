"""The trunk baseline of a run without per-commit environments: stored trunk results to compare with.

``trunk_results`` reads, for the tests a run is about to execute, their results in trunk runs
(``relay.store.regression.trunk_runs``: the main ref, triggers ``webhook``/``replay``, never a
pull request's) on the same backend that ran in the relay's own interpreter (no stored head
environment, or the one named ``current``: a run with another is a regression run with a
baseline of its own) — and ran the same
spec item: same test id *and* mode.  Runs of the change's base commit are read first (trunk at
the base, newest first), then every other trunk run newest first; each test takes the first
result found.  At most ``limit`` runs are read.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.orm import Session

from relay.domain.baseline import TrunkFound
from relay.envs.environments import CURRENT
from relay.store.regression import RunEnvironmentRecord, trunk_runs
from relay.store.tables import RunRecord, TestResultRecord
from test_specs.values.results import TestResult

__all__ = ["TrunkFound", "trunk_results", "TRUNK_RUNS_READ"]

#: trunk runs read at most per lookup (newest first)
TRUNK_RUNS_READ = 50


def _candidates(session: Session, *, main_ref: str, backend: str, base: str | None,
                limit: int) -> list[tuple[str, str]]:
    """``(run id, head)`` of trunk runs without a head environment, base commit first."""
    has_env = select(RunEnvironmentRecord.run_id).where(RunEnvironmentRecord.role == "head",
                                                        RunEnvironmentRecord.name != CURRENT)
    stmt = (select(RunRecord.id, RunRecord.head)
            .where(RunRecord.id.in_(trunk_runs(main_ref)), RunRecord.backend == backend,
                   RunRecord.id.not_in(has_env))
            .order_by(RunRecord.started_at.desc(), RunRecord.id.desc()).limit(limit))
    rows = [(i, h) for i, h in session.execute(stmt)]
    return sorted(rows, key=lambda r: r[1] != base)  # stable: newest first within each group


def trunk_results(session: Session, modes: Mapping[str, str], *, main_ref: str, backend: str,
                  base: str | None, limit: int = TRUNK_RUNS_READ) -> TrunkFound:
    """Trunk results for the tests of ``modes`` (test id → the mode this run executes it in);
    see the module docstring.  One query for the runs, one per run read until every test has
    a result."""
    found = TrunkFound()
    wanted = dict(modes)
    for run_id, head in _candidates(session, main_ref=main_ref, backend=backend, base=base, limit=limit):
        if not wanted:
            break
        rows = session.scalars(select(TestResultRecord).where(
            TestResultRecord.run_id == run_id, TestResultRecord.test_id.in_(list(wanted))))
        hits = [r for r in rows if r.mode == wanted.get(r.test_id)]
        if not hits:
            continue
        for r in hits:
            found.results[r.test_id] = TestResult(
                id=r.test_id, upstream=r.upstream, op=r.op, module=r.module, dtype=r.dtype, mode=r.mode,
                outcome=r.outcome, duration_ms=r.duration_ms, attempts=r.attempts,  # type: ignore[arg-type]
                message=r.message)
            found.source[r.test_id] = run_id
            del wanted[r.test_id]
        found.runs.append((run_id, head))
    return found
