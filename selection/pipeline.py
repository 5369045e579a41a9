"""Run the selection stages: ``select`` (stages 1–3) before execution, ``refine`` (stage 4) after.

``Selector`` holds what is built once per upstream version and backend (the spec items, the
test → aten-op index, the catalog); ``select`` is then cheap per ChangeSet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from selection.attribution import OpCatalog
from selection.classify import Classify
from selection.index import TestOpIndex, opinfo_generators
from selection.memory import Memory
from selection.models import ChangeSet, SelectedTest, Selection
from selection.profile import BackendProfile, get_profile
from selection.refine import Refine
from selection.scope import Scope
from selection.stage import Candidate, Executor, SelectionState, run_stage
from test_specs.items import SpecItem
from test_specs.results import TestResult


class Selector:
    """Stages 1–3 over a fixed universe of spec items.

    ``items``: every spec item (the universe).  ``index_device``: where the test → aten-op
    index is captured (``"spyre"`` or ``"cpu"``).  ``cache_dir``: where the index is cached.
    Building captures every uncached OpInfo item once (about 5 ms per item).
    """

    def __init__(self, items: Sequence[SpecItem], *, profile: BackendProfile | str = "spyre-sim",
                 index_device: str = "spyre", cache_dir: Path | None = None) -> None:
        self.items = list(items)
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.index = TestOpIndex.build(self.items, device=index_device, cache_dir=cache_dir)
        opinfos = {i.subject: i.op for i in self.items if i.op is not None}
        generators = {name: users & set(opinfos) for name, users in opinfo_generators().items()}
        self.catalog = OpCatalog(aten_ops=self.index.aten_ops, opinfos=opinfos,
                                 generators={k: frozenset(v) for k, v in generators.items() if v})
        self.stages = [Scope(self.profile), Memory(self.index, self.catalog), Classify()]

    def initial_state(self, changeset: ChangeSet) -> SelectionState:
        cands = tuple(Candidate(item=i, mode=i.mode) for i in self.items)
        return SelectionState(changeset=changeset, candidates=cands, universe=len(self.items))

    def select_state(self, changeset: ChangeSet) -> SelectionState:
        """The state after stages 1–3 (candidates classified, stats recorded)."""
        state = self.initial_state(changeset)
        for stage in self.stages:
            state = run_stage(stage, state)
        return state

    def select(self, changeset: ChangeSet) -> Selection:
        """Stages 1–3 for ``changeset`` as a ``Selection`` (design §4)."""
        return to_selection(self.select_state(changeset))


def to_selection(state: SelectionState) -> Selection:
    """The ``Selection`` view of a state: candidates ranked by (-score, id)."""
    tests = [
        SelectedTest(id=c.item.id, upstream=c.item.upstream, op=c.item.op,
                     module=c.item.module, dtype=c.item.dtype, mode=c.mode, score=c.score,
                     reasons=list(c.reasons))
        for c in state.candidates
    ]
    tests.sort(key=lambda t: (-t.score, t.id))
    return Selection(universe=state.universe, selected=tests, stages=list(state.stats))


def refine(state: SelectionState, results: Sequence[TestResult], executor: Executor,
           proposal_dir: Path | None = None) -> SelectionState:
    """Stage 4 on the executed ``results`` of ``state``'s selection."""
    return run_stage(Refine(executor, proposal_dir), replace(state, results=tuple(results)))
