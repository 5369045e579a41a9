"""The baseline half of a regression run: base results reused from the store or computed, then
verdicts for the head results (``relay.domain.verdicts``).

The baseline of a change is the same backend + specs + selection executed on the change's base
in the base environment.  Stored results of runs whose head is that base (same environment name,
same backend) are reused per test (``reuse``, at planning time); only the missing tests are
executed, and those results are stored as a run of their own (trigger ``baseline``,
``baseline_run``) so the next change on the same base reuses them too.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from relay.domain.run import Run
from relay.domain.verdicts import Verdict, classify_all
from relay.envs.environments import Environment, describe
from relay.pipeline.ports import RunStore
from selection.models import ChangeSet, StageStats
from test_specs.values.results import TestResult

__all__ = ["reuse", "baseline_run", "verdicts_for"]


def reuse(store: RunStore, ids: Sequence[str], *, ref: str, env_name: str,
          backend: str) -> tuple[dict[str, TestResult], list[str]]:
    """Stored base results for ``ids`` (newest run first wins) and the ids of the runs used."""
    found: dict[str, TestResult] = {}
    used: list[str] = []
    for run in store.baseline_runs(ref=ref, env_name=env_name, backend=backend):
        wanted = set(ids) - set(found)
        if not wanted:
            break
        hits = {r.id: r for r in run.results if r.id in wanted}
        if hits:
            found.update(hits)
            used.append(run.id)
    return found, used


def baseline_run(changeset: ChangeSet, results: Sequence[TestResult], *, backend: str,
                 environment: Environment, started_at: datetime,
                 stages: Sequence[StageStats] = ()) -> Run:
    """The run holding base results computed for ``changeset`` (trigger ``baseline``; head =
    the change's base, so later changes on that base find it)."""
    return Run(id=uuid.uuid4().hex[:16], backend=backend, upstream=changeset.upstream,
               base=changeset.base, head=changeset.base, title=f"baseline for {changeset.head}",
               trigger="baseline", started_at=started_at, finished_at=datetime.now(UTC),
               selected=len(results), conclusion=Run.conclude(list(results)), stages=list(stages),
               results=list(results), counts=Run.count_outcomes(list(results)),
               environments={"head": describe(environment)})


def verdicts_for(head: Sequence[TestResult], base: dict[str, TestResult], store: RunStore, *,
                 run_id: str | None = None, backend: str, env_name: str,
                 head_sha: str | None) -> list[Verdict]:
    """Verdicts of the head results against the base results, the quarantine (a quarantined
    test's failure is FLAKY, never NEW) and the trunk history of the tests that failed on every
    attempt (``RunStore.history`` for ``backend`` and the head environment ``env_name`` of commit
    ``head_sha``; ``relay.domain.flakiness``).  ``run_id`` is named as a rerun pass's evidence."""
    failed = [r.id for r in head if r.outcome == "failed"]
    trunk = store.history(failed, backend=backend, env_name=env_name, head=head_sha) if failed else {}
    quarantined = store.quarantined()
    return classify_all(head, [base[r.id] for r in head if r.id in base], trunk, quarantined,
                        run_id=run_id)
