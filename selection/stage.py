"""The one interface the four selection stages share, and the values passed between them.

A stage receives a ``SelectionState`` and returns a new one; it never mutates its input.
Stages 1–3 (scope, memory, classify) run once per ChangeSet before execution; stage 4
(refine) runs once per run, after execution, with ``state.results`` filled in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from selection.models import ChangeSet, StageStats
from test_specs.values.items import SpecItem
from test_specs.values.modes import Mode
from test_specs.values.results import TestResult

#: Runs the given item ids on the backend and returns one result per id (same order).
Executor = Callable[[Sequence[str]], list[TestResult]]


@dataclass(frozen=True)
class Candidate:
    """A spec item still under consideration, with its mode, score in [0, 1] and reasons."""

    item: SpecItem
    mode: Mode
    score: float = 0.0
    reasons: tuple[str, ...] = ()

    def with_reason(self, reason: str, *, score: float | None = None) -> Candidate:
        """A copy with ``reason`` appended and the score raised to ``score`` if higher."""
        new_score = self.score if score is None else max(self.score, score)
        return replace(self, reasons=self.reasons + (reason,), score=new_score)


@dataclass(frozen=True)
class OpImpact:
    """Why memory kept a test for a changed implementation: ``reason`` (``"<file> → aten::op →
    N tests"``, ``"<file> → module nn.X → N tests"``, ``"<file> → OpInfo softmax → N tests"``)
    and ``fanout``, the N — how many tests that one impact reaches."""

    reason: str
    fanout: int


@dataclass(frozen=True)
class Signals:
    """Facts the memory stage found, for the classifier's heuristics.

    ``op_impacts``: test id → the impacts (``OpImpact``) that reached it.  ``changed_definitions``:
    OpInfo subjects whose entry or sample inputs changed → reasons.  ``fail_soft``: test ids kept
    only because a signal was missing.  ``test_ops``: test id → aten ops it calls (the index).
    ``canaries``: test id → reason, for tests kept as a cross-section after a test-machinery
    change in upgrade mode (``selection.policy.upgrade``).
    """

    op_impacts: dict[str, tuple[OpImpact, ...]] = field(default_factory=dict)
    changed_definitions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fail_soft: frozenset[str] = frozenset()
    test_ops: dict[str, list[str]] = field(default_factory=dict)
    canaries: dict[str, str] = field(default_factory=dict)
    #: Spyre op support answers (``selection.index.support.SupportAnswers``), set by classify; ``None``:
    #: heuristics ask ``spyre_backend.support`` themselves
    support: object | None = None


@dataclass(frozen=True)
class SelectionState:
    """What flows from stage to stage.

    ``candidates`` are the surviving tests; ``notes`` collects stage-level remarks (e.g. files
    that could not be attributed); ``results`` is empty until execution, then holds one result
    per executed candidate; ``proposals`` lists files with proposed spec edits (stage 4).
    ``mode`` is ``"pr"`` or ``"upgrade"`` (``selection.policy.upgrade``).  ``scope_reasons``: area →
    why scope kept it (added to a candidate's reasons only when it survives memory, so scope
    copies no candidate).  ``machinery``: changed test-machinery paths whose widening upgrade
    mode turned into canaries.
    """

    changeset: ChangeSet
    candidates: tuple[Candidate, ...]
    universe: int
    results: tuple[TestResult, ...] = ()
    notes: tuple[str, ...] = ()
    proposals: tuple[str, ...] = ()
    signals: Signals = field(default_factory=Signals)
    stats: tuple[StageStats, ...] = field(default=())
    mode: str = "pr"
    scope_reasons: dict[str, str] = field(default_factory=dict)
    machinery: tuple[str, ...] = ()


class Stage(Protocol):
    """A selection stage.

    ``run`` is called once per ChangeSet (stages 1–3) or once per executed run (stage 4); it must
    be deterministic for the same inputs and must not raise for a bad signal: a stage that
    cannot decide keeps more tests, never fewer ("fail soft", as PyTorch's target determination).
    """

    name: str

    def run(self, state: SelectionState) -> SelectionState: ...

    def count_in(self, state: SelectionState) -> int:
        """The count this stage reports as "in" for the state it receives."""
        ...

    def count_out(self, state: SelectionState) -> int:
        """The count this stage reports as "out" for the state it returns."""
        ...


def run_stage(stage: Stage, state: SelectionState) -> SelectionState:
    """Run ``stage`` on ``state``, appending its ``StageStats`` (in, out, wall ms)."""
    before = stage.count_in(state)
    t0 = time.perf_counter()
    out = stage.run(state)
    ms = (time.perf_counter() - t0) * 1000.0
    stats = StageStats(name=stage.name, **{"in": before}, out=stage.count_out(out), ms=round(ms, 3))
    return replace(out, stats=out.stats + (stats,))
