"""What the pipeline needs from the world, as interfaces; the callers plug in implementations.

The pipeline (``relay.pipeline.run``) never opens a database, starts a process pool or posts to a
dashboard by itself: the composition roots (``relay.cli``, ``relay.service.factory``, the
Celery tasks in ``relay.worker.celery``) hand it a ``Ports`` with

* ``executors`` — an ``ExecutorFactory``: runs spec items (``relay.pipeline.local`` in a pytest
  subprocess; ``relay.worker.celery.executor`` as Celery shards);
* ``store`` — a ``RunStore``: history it reads (stored baselines, durations, trunk outcomes,
  quarantine) and the side runs it writes (a computed baseline, bisection rounds);
* ``sink`` — a ``ResultSink``: takes the finished run, exactly once (the replay stores and posts
  it; the webhook path stores it with its HUD outbox row and the delivery's final state in one
  transaction);
* ``progress`` — a ``Progress`` the CLI draws.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from relay.domain.baseline import TrunkFound
from relay.domain.flakiness import QuarantineNote, TrunkResult
from relay.domain.run import Run
from relay.envs.environments import Environment
from test_specs.values.planned import ModeRule
from test_specs.values.results import TestResult

__all__ = ["Executor", "ExecutorFactory", "RunStore", "ResultSink", "Progress", "Ports"]

#: Runs the given item ids and returns one result per id (in the ids' order).  Called once for a
#: run's tests, once for stage 4's reruns, once per bisection round; an empty list is allowed.
Executor = Callable[[Sequence[str]], list[TestResult]]


class ExecutorFactory(Protocol):
    """Makes the executor of one execution: its work directory (JUnit XML, logs), the
    environment it runs in (``None``: this interpreter), a callback per finished test and the
    mode of each test (``relay.pipeline.modes.run_modes``: stage 3's classification; ids without
    a rule run in their spec's mode)."""

    def __call__(self, workdir: Path, *, environment: Environment | None = None,
                 on_result: Callable[[TestResult], None] | None = None,
                 modes: Mapping[str, ModeRule] | None = None) -> Executor: ...


class RunStore(Protocol):
    """The stored history a run reads, and where its side runs go (``relay.store.run_store``).
    ``main_ref``: the upstream ref whose runs are trunk (``RELAY_QUARANTINE_MAIN_REF``)."""

    main_ref: str

    def durations(self) -> dict[str, float]:
        """Median measured seconds per test id (the budget cut); ``{}`` when none."""

    def baseline_runs(self, *, ref: str, env_name: str, backend: str) -> list[Run]:
        """Stored runs (newest first, with results) whose head is ``ref``, executed on
        ``backend`` in the environment called ``env_name``: base results to reuse."""

    def history(self, test_ids: Sequence[str], *, backend: str, env_name: str,
                head: str | None) -> dict[str, list[TrunkResult]]:
        """Each test's trunk results, oldest first: runs of the main ref (never a pull
        request's) on ``backend`` in the head environment ``env_name`` of a run of commit
        ``head``, without an injected regression (``relay.domain.flakiness``: the FLAKY-by-flips
        evidence).  Called once per regression run, with the ids of its failed tests."""

    def trunk(self, modes: Mapping[str, str], *, backend: str, base: str | None) -> TrunkFound:
        """The trunk baseline of a run without environments (``relay.store.trunk_baseline``):
        for the tests of ``modes`` (test id → mode), their results in trunk runs of ``backend``
        that ran the same item, runs of commit ``base`` first, then the newest.  Called once
        per run without environments, at planning time."""

    def quarantined(self) -> dict[str, QuarantineNote]:
        """``{test id: its DISABLED issue and flaky runs}`` for quarantined tests."""

    def save(self, run: Run) -> None:
        """Store a side run (a computed baseline, a bisection round) in one transaction."""


class ResultSink(Protocol):
    """Where the finished run goes: called exactly once per run, after everything else."""

    def accept(self, run: Run) -> str | None:
        """Store (and report) ``run``; returns a reporting problem that did not lose the run
        (e.g. the dashboard is down), ``None`` when all went well.  Raises when the run could
        not be stored."""


class Progress:
    """Callbacks the pipeline makes while it works; the CLI draws a progress bar from them.

    ``phase`` is called when a phase starts; ``count`` while a counted step inside a phase
    advances (``done`` of ``total`` units; the index capture, ``relay.pipeline.indexing``: first
    with 0, last with ``done == total``); ``total`` once with the number of tests to run;
    ``result`` once per finished test (reruns included).  The base class ignores them all.
    """

    def phase(self, name: str) -> None: ...

    def count(self, name: str, done: int, total: int) -> None: ...

    def total(self, n: int) -> None: ...

    def result(self, result: TestResult) -> None: ...


@dataclass
class Ports:
    """Everything the pipeline talks to (see the module docstring)."""

    executors: ExecutorFactory
    store: RunStore
    sink: ResultSink
    progress: Progress = field(default_factory=Progress)
    #: commit sha → environment name (``RELAY_COMMIT_ENV``), for culprit bisection
    commit_env: Callable[[str], str] | None = None
