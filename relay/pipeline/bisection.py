"""Culprit finding for a run: bisect its push range, running only its NEW tests per commit.

``find_culprit`` is called by ``relay.pipeline.run.run_change`` after a regression run whose range
holds more than one commit (a push's ``commits[]``, a ``relay replay A..B`` git range).  Each
round (``relay.domain.culprit.bisect``) resolves the commit's environment
(``relay.envs.commits``), prepares it (``relay.envs.environments.prepare``, cached per name), runs the
NEW tests there with the pipeline's executor (``relay.pipeline.run.make_executor``: a pytest
subprocess, or Celery shards when a broker is configured) and stores the round as a run of its
own (trigger ``bisect``, head = the commit, its environment as the ``head`` role, so a later
change whose base is that commit can reuse the results as its baseline).

A test counts as failing at a commit when its outcome is ``failed`` (after the runner's own
reruns) — the same outcome that made it NEW on head; crashes and timeouts are INFRA, not code,
and count as passing here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from relay.domain.culprit import Culprit, bisect
from relay.domain.run import Run
from relay.settings import Settings

__all__ = ["BisectionError", "find_culprit", "new_tests", "store_culprit"]

log = logging.getLogger(__name__)


class BisectionError(RuntimeError):
    """A round could not run (the commit's environment could not be resolved or built); the
    message names the commit."""


def new_tests(run: Run) -> list[str]:
    """Ids of the run's NEW verdicts, in verdict order."""
    return [v.id for v in run.verdicts if v.verdict == "NEW"]


def find_culprit(run: Run, commits: Sequence[str], resolve: Callable[[str], str], *,
                 settings: Settings, spec_paths: Sequence[Path], workdir: Path,
                 device: str = "spyre", timeout_s: int = 120, shards: int = 1,
                 upstream: Path | None = None,
                 phase: Callable[[str], None] | None = None) -> Culprit | None:
    """The first commit of ``commits`` (oldest → newest; the run's base precedes
    ``commits[0]``, its head is ``commits[-1]``) at which one of the run's NEW tests fails.

    ``resolve`` maps a sha to an environment name (``CommitEnvResolver.resolve``).  Returns
    ``None`` when the run has no NEW verdict or the range holds fewer than two commits.  At most
    ⌈log2 len(commits)⌉ rounds; each is stored (trigger ``bisect``) and recorded in the
    culprit's steps with its environment and run id.  Raises ``BisectionError`` when a commit's
    environment cannot be resolved or built.
    """
    from relay.envs.commits import CommitEnvError
    from relay.envs.environments import Environment, EnvironmentError_, describe, prepare
    from relay.pipeline.run import Progress, make_executor

    tests = new_tests(run)
    if not tests or len(commits) < 2:
        return None
    envs: dict[str, Environment] = {}
    rounds: dict[str, tuple[str, str]] = {}  # commit → (environment name, round run id)

    def run_at(commit: str, ids: Sequence[str]) -> set[str]:
        n = len(rounds) + 1
        try:
            name = resolve(commit)
            if name not in envs:
                envs[name] = prepare(name, settings.state_dir)
            env = envs[name]
        except (CommitEnvError, EnvironmentError_) as exc:
            raise BisectionError(f"bisecting run {run.id}: commit {commit}: {exc}") from None
        if phase is not None:
            phase(f"bisect round {n}: {len(ids)} tests at {commit[:12]} in {name}")
        started = datetime.now(timezone.utc)
        execute = make_executor(spec_paths, workdir / f"round-{n}-{commit[:12]}", device,
                                Progress(), timeout_s, env, settings, shards=shards,
                                upstream=upstream)
        results = execute(list(ids))
        round_id = uuid.uuid4().hex[:16]
        _store_round(Run(
            id=round_id, backend=run.backend, upstream=run.upstream, base=run.base, head=commit,
            title=f"bisect round {n} for run {run.id}", trigger="bisect", ref=run.ref,
            delivery_id=run.delivery_id, started_at=started,
            finished_at=datetime.now(timezone.utc), universe=run.universe, selected=len(ids),
            conclusion=Run.conclude(results), results=results,
            counts=Run.count_outcomes(results), environments={"head": describe(env)}),
            settings)
        rounds[commit] = (name, round_id)
        failed = {r.id for r in results if r.outcome == "failed"}
        log.info("run %s: bisect round %d at %s (%s): %d of %d failed", run.id, n, commit, name,
                 len(failed), len(ids))
        return failed

    found = bisect(list(commits), tests, run_at)
    steps = [s.model_copy(update={"environment": rounds[s.commit][0], "run": rounds[s.commit][1]})
             for s in found.steps]
    return found.model_copy(update={"steps": steps})


def _store_round(round_run: Run, settings: Settings) -> None:
    from relay.store import create_schema, make_engine, make_session_factory, save_run
    from relay.store.regression import save_regression

    engine = make_engine(settings.database_url)
    try:
        create_schema(engine)
        with make_session_factory(engine)() as session:
            save_run(session, round_run)
            save_regression(session, round_run.id, round_run.environments, [])
    finally:
        engine.dispose()


def store_culprit(run_id: str, culprit: Culprit, settings: Settings) -> None:
    """Persist ``culprit`` for the stored run ``run_id`` (``relay.store.culprits``)."""
    from relay.store import make_engine, make_session_factory
    from relay.store.culprits import save_culprit

    engine = make_engine(settings.database_url)
    try:
        with make_session_factory(engine)() as session:
            save_culprit(session, run_id, culprit)
    finally:
        engine.dispose()
