"""``LocalExecutors``: run spec items in pytest subprocesses on this machine.

The default ``ExecutorFactory`` (``relay.pipeline.ports``): each executor it makes runs its ids
with ``test_specs.run.runner.run_items`` in a fresh attempt directory under its work directory
(``attempt-1``, ``attempt-2`` … for the run and stage 4's reruns), with the interpreter and
variables of its environment and the run's mode per test (``relay.pipeline.modes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from relay.envs.environments import Environment
from relay.pipeline.ports import Executor
from relay.pipeline.request import RunConfig
from test_specs.run.runner import default_shards, run_items
from test_specs.values.planned import ModeRule
from test_specs.values.results import TestResult

__all__ = ["LocalExecutors"]


@dataclass(frozen=True)
class LocalExecutors:
    """Makes executors over ``spec_paths`` on ``device``; ``timeout_s`` per test (seconds),
    ``shards`` concurrent pytest processes (default: every core), ``upstream`` a PyTorch
    checkout for ``path:`` entries; ``durations``, called once per execution, the stored seconds
    per test id (the tests then run longest first, so the workers end together)."""

    spec_paths: tuple[Path, ...]
    device: str = "spyre"
    timeout_s: float = 120
    shards: int = field(default_factory=default_shards)
    upstream: Path | None = None
    durations: Callable[[], Mapping[str, float]] | None = field(default=None, compare=False)
    #: rerun deterministic device refusals too (before issue 29; a bench's baseline)
    rerun_refusals: bool = False

    @classmethod
    def for_config(cls, config: RunConfig) -> LocalExecutors:
        """The executors of a run configured by ``config``."""
        return cls(config.spec_paths, device=config.device, timeout_s=config.timeout_s,
                   shards=config.shards, upstream=config.upstream, durations=config.durations)

    def __call__(self, workdir: Path, *, environment: Environment | None = None,
                 on_result: Callable[[TestResult], None] | None = None,
                 modes: Mapping[str, ModeRule] | None = None) -> Executor:
        attempt = 0
        extra = {} if environment is None else {"python": str(environment.python),
                                                "env": environment.env}

        def execute(ids: Sequence[str]) -> list[TestResult]:
            nonlocal attempt
            attempt += 1
            if not ids:
                return []
            sub = workdir / f"attempt-{attempt}"
            sub.mkdir(parents=True, exist_ok=True)
            return run_items(list(ids), list(self.spec_paths), workdir=sub, device=self.device,
                             timeout_s=self.timeout_s, on_result=on_result, shards=self.shards,
                             upstream=self.upstream, modes=modes,
                             durations=self.durations() if self.durations else None,
                             rerun_refusals=self.rerun_refusals, **extra)

        return execute
