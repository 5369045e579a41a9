"""The typed values a run passes through: what to run, how, the plan made before execution,
and what comes out.

``RunRequest``  one upstream change and how to judge it (environments, commits to bisect);
                built by the CLI from its arguments and by the worker from a delivery
``RunConfig``   where and how tests run (backend, device, specs, timeouts, state directory)
``RunPlan``     stages 1–3 done, base results found: everything ``finish_run`` needs besides
                the results; JSON-ready, so a Celery chord callback can finish a run that
                another process planned
``RunOutcome``  the stored ``Run`` plus what the CLI prints (selection, notes, proposals)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from relay.domain.baseline import Baseline
from relay.domain.run import Run, Trigger
from relay.pipeline.modes import run_modes
from selection.models import ChangeSet, Selection
from test_specs.run.runner import default_shards
from test_specs.values.planned import ModeRule
from test_specs.values.results import TestResult

__all__ = ["RunRequest", "RunConfig", "RunPlan", "RunOutcome"]


class RunRequest(BaseModel):
    """One change to run.  With ``head_env`` the run is a regression run: the baseline runs in
    ``base_env`` (default ``current``) and every test gets a verdict.  ``commits`` (oldest →
    newest, the last being the head) are bisected for a culprit when a verdict is NEW and a
    commit → environment mapping is configured.  ``ref``: the upstream ref the change targets
    (``Run.ref``)."""

    model_config = ConfigDict(frozen=True)

    changeset: ChangeSet
    trigger: Trigger = "replay"
    delivery_id: str | None = None
    ref: str | None = None
    head_env: str | None = None
    base_env: str | None = None
    commits: list[str] | None = None
    budget_minutes: float | None = Field(None, ge=0)


@dataclass(frozen=True)
class RunConfig:
    """Where and how the tests of a run execute.

    ``spec_paths``: the spec files (the universe); ``upstream``: a PyTorch checkout for the
    specs' ``path:`` entries; ``timeout_s``: per test, seconds; ``shards``: concurrent pytest
    processes per execution (default: every core, ``test_specs.run.runner.default_shards``);
    ``durations``: called once per execution, the stored seconds per test id (the run's tests go
    longest first so the workers end together; ``None``: collection order);
    ``state_dir``: run directories, index cache, environments.
    """

    spec_paths: tuple[Path, ...]
    state_dir: Path
    backend: str = "spyre-sim"
    device: str = "spyre"
    timeout_s: int = 120
    shards: int = field(default_factory=default_shards)
    upstream: Path | None = None
    durations: Callable[[], Mapping[str, float]] | None = field(default=None, compare=False)

    def workdir(self, run_id: str) -> Path:
        """The run's directory: ``<state dir>/runs/<run id>`` (absolute: pytest runs elsewhere)."""
        return (self.state_dir / "runs" / run_id).resolve()


class RunPlan(BaseModel):
    """A run after selection, before execution.

    ``to_run``: the selected ids to execute (selection order); ``base_found``: base results
    reused from stored runs ``reused_from``; ``base_missing``: base results still to compute
    (executed in ``base_env`` next to the head's tests).  ``notes`` and ``stats`` carry stages
    1–3 into the stored run.  A run without environments has its trunk baseline here instead
    (``relay.pipeline.baseline.trunk_baseline``): ``base_found`` from trunk runs, ``base_source``
    test id → the trunk run it came from, ``baseline`` which kind.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    started_at: datetime
    request: RunRequest
    selection: Selection
    #: when selection (specs, indexes, stages 1–3, environments) ended and execution began
    selected_at: datetime | None = None
    notes: list[str] = Field(default_factory=list)
    to_run: list[str] = Field(default_factory=list)
    base_found: dict[str, TestResult] = Field(default_factory=dict)
    reused_from: list[str] = Field(default_factory=list)
    base_missing: list[str] = Field(default_factory=list)
    baseline: Baseline | None = None
    base_source: dict[str, str] = Field(default_factory=dict)

    @property
    def regression(self) -> bool:
        """Whether head and base run in environments and every test gets a verdict."""
        return self.request.head_env is not None

    @property
    def base_env(self) -> str:
        return self.request.base_env or "current"

    @property
    def modes(self) -> dict[str, ModeRule]:
        """Stage 3's mode of every test to run (``relay.pipeline.modes``): what every
        execution of this plan — head, base, reruns, shards — runs each test as."""
        return run_modes(self.selection.selected)


@dataclass
class RunOutcome:
    """What ``run_change`` returns: the stored ``Run`` plus the selection and stage notes."""

    run: Run
    selection: Selection
    notes: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    workdir: Path | None = None
    report_error: str | None = None
