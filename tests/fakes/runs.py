"""Builders of ``Run`` values for tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from relay.domain.run import Run
from selection.models import ChangeSet, StageStats
from test_specs.values.results import TestResult

__all__ = ["make_run", "run_from_changeset"]

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def make_run(run_id: str = "run-1", *, minutes: int = 0, outcomes: tuple[str, ...] = ("passed", "failed", "skipped"),
             **overrides: object) -> Run:
    """A run started ``minutes`` after a fixed instant with one result per outcome."""
    results = [TestResult(id=f"{run_id}::t{i}", upstream=f"test/test_ops.py::TestCommon::test_{i}",
                          op="softmax", dtype="float16", outcome=o, duration_ms=1.5 * i,  # type: ignore[arg-type]
                          message="boom" if o == "failed" else None)
               for i, o in enumerate(outcomes)]
    fields: dict[str, object] = dict(
        id=run_id, base="b" * 40, head="a" * 40, title="Fix softmax",
        started_at=T0 + timedelta(minutes=minutes), finished_at=T0 + timedelta(minutes=minutes, seconds=90),
        universe=100, selected=len(results), conclusion=Run.conclude(results),
        stages=[StageStats(name="scope", **{"in": 100}, out=10, ms=3.1)],
        results=results, counts=Run.count_outcomes(results),
    )
    fields.update(overrides)
    return Run(**fields)  # type: ignore[arg-type]


def run_from_changeset(changeset: ChangeSet, *, trigger: str = "webhook",
                       delivery_id: str | None = None) -> Run:
    """A run on ``changeset`` with one passed result per changed file (first 5)."""
    results = [TestResult(id=f"t::{f.filename}", upstream="test/test_ops.py::TestCommon::test_x",
                          outcome="passed") for f in changeset.files[:5]]
    return Run(id=f"run-{changeset.head[:8]}-{delivery_id}", upstream=changeset.upstream,
               base=changeset.base, head=changeset.head, title=changeset.title,
               trigger=trigger, delivery_id=delivery_id,  # type: ignore[arg-type]
               started_at=T0, finished_at=T0 + timedelta(seconds=5), universe=len(changeset.files),
               selected=len(results), conclusion=Run.conclude(results), results=results,
               counts=Run.count_outcomes(results))
