"""Culprit finding for a run: bisect its push range, running only its NEW tests per commit.

``find_culprit`` is called by ``relay.pipeline.run.finish_run`` after a regression run whose
range holds more than one commit (a push's ``commits[]``, a ``relay replay A..B`` git range).
Each round (``relay.domain.culprit.bisect``) resolves the commit's environment
(``relay.envs.commits``), prepares it (``relay.envs.environments.prepare``, cached per name),
runs the NEW tests there with an executor of the run's ``ExecutorFactory`` and stores the round
through the run's ``RunStore`` as a run of its
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
from datetime import UTC, datetime
from pathlib import Path

from relay.domain.culprit import Culprit, bisect
from relay.domain.run import Run
from relay.envs.environments import Environment, describe, prepare
from relay.errors import BisectionError, CommitEnvError, EnvironmentError_
from relay.logs import delivery_log
from relay.pipeline.modes import run_modes
from relay.pipeline.ports import ExecutorFactory, RunStore

__all__ = ["find_culprit", "new_tests"]

log = logging.getLogger(__name__)


def new_tests(run: Run) -> list[str]:
    """Ids of the run's NEW verdicts, in verdict order."""
    return [v.id for v in run.verdicts if v.verdict == "NEW"]


def find_culprit(run: Run, commits: Sequence[str], resolve: Callable[[str], str], *,
                 executors: ExecutorFactory, store: RunStore, state_dir: Path, workdir: Path,
                 phase: Callable[[str], None] | None = None) -> Culprit | None:
    """The first commit of ``commits`` (oldest → newest; the run's base precedes
    ``commits[0]``, its head is ``commits[-1]``) at which one of the run's NEW tests fails.

    ``resolve`` maps a sha to an environment name (``CommitEnvResolver.resolve``); environments
    are built under ``state_dir``.  Returns ``None`` when the run has no NEW verdict or the range
    holds fewer than two commits.  At most ⌈log2 len(commits)⌉ rounds; each is stored through
    ``store`` (trigger ``bisect``) and recorded in the culprit's steps with its environment and
    run id.  Raises ``BisectionError`` when a commit's environment cannot be resolved or built.
    """
    tests = new_tests(run)
    if not tests or len(commits) < 2:
        return None
    modes = run_modes(run.selection)  # each round runs a test as the run did
    envs: dict[str, Environment] = {}
    rounds: dict[str, tuple[str, str]] = {}  # commit → (environment name, round run id)

    def environment(commit: str) -> Environment:
        try:
            name = resolve(commit)
            if name not in envs:
                envs[name] = prepare(name, state_dir)
            return envs[name]
        except (CommitEnvError, EnvironmentError_) as exc:
            raise BisectionError(f"bisecting run {run.id}: commit {commit}: {exc}") from None

    def run_at(commit: str, ids: Sequence[str]) -> set[str]:
        n = len(rounds) + 1
        env = environment(commit)
        if phase is not None:
            phase(f"bisect round {n}: {len(ids)} tests at {commit[:12]} in {env.name}")
        started = datetime.now(UTC)
        results = executors(workdir / f"round-{n}-{commit[:12]}", environment=env,
                            modes=modes)(list(ids))
        round_run = Run(
            id=uuid.uuid4().hex[:16], backend=run.backend, upstream=run.upstream, base=run.base,
            head=commit, title=f"bisect round {n} for run {run.id}", trigger="bisect",
            ref=run.ref, delivery_id=run.delivery_id, started_at=started,
            finished_at=datetime.now(UTC), universe=run.universe, selected=len(ids),
            conclusion=Run.conclude(results), results=results,
            counts=Run.count_outcomes(results), environments={"head": describe(env)})
        store.save(round_run)
        rounds[commit] = (env.name, round_run.id)
        failed = {r.id for r in results if r.outcome == "failed"}
        delivery_log(log, run.delivery_id).info(
            "run %s: bisect round %d at %s (%s): %d of %d failed", run.id, n, commit, env.name,
            len(failed), len(ids))
        return failed

    found = bisect(list(commits), tests, run_at)
    steps = [s.model_copy(update={"environment": rounds[s.commit][0], "run": rounds[s.commit][1]})
             for s in found.steps]
    return found.model_copy(update={"steps": steps})
