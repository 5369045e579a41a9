"""The baseline half of a regression run: base results reused from the store or computed first,
then verdicts for the head results (``relay.domain.verdicts``).

Called by ``relay.pipeline.run.run_change`` when a head environment is given (``--head-env``).  The
baseline of a change is the same backend + specs + selection executed on the change's base in
the base environment; stored results of runs whose head is that base (same environment name,
same backend) are reused per test, and only the missing tests are executed — stored as a run
of their own (trigger ``baseline``) so the next change on the same base reuses them too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from relay.envs.environments import Environment, describe
from relay.domain.run import Run
from relay.settings import Settings
from relay.domain.verdicts import Verdict, classify_all
from selection.models import ChangeSet
from test_specs.results import TestResult

Execute = Callable[[Sequence[str]], list[TestResult]]


@dataclass
class Baseline:
    """Base results by test id, and which stored runs they came from."""

    results: dict[str, TestResult]
    reused_from: list[str]
    computed_run: str | None
    computed: int


def _session(settings: Settings):
    from relay.store import create_schema, make_engine, make_session_factory

    engine = make_engine(settings.database_url)
    create_schema(engine)
    return engine, make_session_factory(engine)


def baseline(changeset: ChangeSet, ids: Sequence[str], *, settings: Settings, base_env: Environment,
             execute_base: Execute, stages: list | None = None) -> Baseline:
    """Base results for ``ids``: stored ones first, the rest executed with ``execute_base``."""
    from relay.store import load_run, save_run
    from relay.store.regression import find_baseline, save_regression

    engine, factory = _session(settings)
    try:
        found: dict[str, TestResult] = {}
        used: list[str] = []
        with factory() as session:
            for run_id in find_baseline(session, ref=changeset.base, env_name=base_env.name,
                                        backend=settings.backend):
                wanted = set(ids) - set(found)
                if not wanted:
                    break
                hits = {r.id: r for r in load_run(session, run_id).results if r.id in wanted}
                if hits:
                    found.update(hits)
                    used.append(run_id)
        missing = [i for i in ids if i not in found]
        computed_id = None
        if missing:
            started = datetime.now(timezone.utc)
            results = execute_base(missing)
            found.update({r.id: r for r in results})
            computed_id = uuid.uuid4().hex[:16]
            run = Run(id=computed_id, backend=settings.backend, upstream=changeset.upstream,
                      base=changeset.base, head=changeset.base, title=f"baseline for {changeset.head}",
                      trigger="baseline", started_at=started, finished_at=datetime.now(timezone.utc),
                      selected=len(missing), conclusion=Run.conclude(results), stages=stages or [],
                      results=results, counts=Run.count_outcomes(results))
            with factory() as session:
                save_run(session, run)
                save_regression(session, computed_id, {"head": describe(base_env)}, [])
        return Baseline(results=found, reused_from=used, computed_run=computed_id, computed=len(missing))
    finally:
        engine.dispose()


def verdicts_for(head: Sequence[TestResult], base: Baseline, *, settings: Settings) -> list[Verdict]:
    """Verdicts of the head results against the baseline and recent history."""
    from relay.store.quarantine import quarantined_tests
    from relay.store.regression import recent_outcomes

    engine, factory = _session(settings)
    try:
        with factory() as session:
            history = recent_outcomes(session, [r.id for r in head])
            quarantined = quarantined_tests(session)  # failures of these are FLAKY, never NEW
    finally:
        engine.dispose()
    return classify_all(head, [base.results[r.id] for r in head if r.id in base.results], history,
                        quarantined)


def store_verdicts(run: Run, *, settings: Settings) -> None:
    """Persist the run's environments and verdicts (the run row must be stored already)."""
    from relay.store.regression import save_regression

    engine, factory = _session(settings)
    try:
        with factory() as session:
            save_regression(session, run.id, run.environments, run.verdicts)
    finally:
        engine.dispose()
