"""Run the selection stages: ``select`` (stages 1–3) before execution, ``refine`` (stage 4) after.

``Selector`` holds what is built once per upstream version and backend (the spec items, the
test → aten-op index, the source map, the catalog, the initial candidates); ``select`` is then
cheap per ChangeSet (stages 1–3 in tens of ms on a 50,000-test universe; see
``bench/selection_eval.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from selection.attribution.native import NativeDefinitions
from selection.attribution.rules import OpCatalog
from selection.attribution.source_map import SourceMap, installed_root
from selection.index.op_index import TestOpIndex, cached_generators
from selection.index.support import SupportAnswers
from selection.models import ChangeSet, SelectedTest, Selection
from selection.policy.profile import BackendProfile, get_profile
from selection.policy.upgrade import resolve_mode
from selection.stage import Candidate, Executor, SelectionState, run_stage
from selection.stages.budget import apply_budget
from selection.stages.classify import Classify
from selection.stages.memory import Memory
from selection.stages.refine import Refine
from selection.stages.scope import Scope
from test_specs.values.items import SpecItem
from test_specs.values.results import TestResult

log = logging.getLogger(__name__)


def load_source_map(source_root: Path | None, cache_dir: Path | None) -> SourceMap | None:
    """The source map of ``source_root`` (a PyTorch tree or site-packages), default: the
    installed torch; ``None`` (name matching only) when neither can be read — fail soft."""
    try:
        if source_root is not None:
            return SourceMap.build(source_root, version="tree", cache_dir=cache_dir)
        found = installed_root()
        if found is None:
            return None
        return SourceMap.build(found[0], version=found[1], cache_dir=cache_dir)
    except (OSError, ValueError) as exc:
        log.warning("no source map (%s); symbols are matched by name only", exc)
        return None


class Selector:
    """Stages 1–3 over a fixed universe of spec items.

    ``items``: every spec item (the universe).  ``index_device``: where the test → aten-op
    index is captured (``"spyre"`` or ``"cpu"``).  ``cache_dir``: where the indexes are cached.
    ``source_root``: a PyTorch source tree (or site-packages) for the source map; default the
    installed torch.  ``index``/``generators``/``source_map``: prebuilt parts (benchmarks, tests);
    ``source_map=False`` disables it.  ``definitions``: which kernels native files define at a
    commit of an upstream checkout (``selection.attribution.native.NativeDefinitions``).  Building captures
    every uncached OpInfo item once (about 5 ms per item) and reads the source map once per version (about 3 s).
    """

    def __init__(self, items: Sequence[SpecItem], *, profile: BackendProfile | str = "spyre-sim",
                 index_device: str = "spyre", cache_dir: Path | None = None,
                 source_root: Path | None = None, index: TestOpIndex | None = None,
                 generators: dict[str, frozenset[str]] | None = None,
                 source_map: SourceMap | None | bool = None,
                 definitions: NativeDefinitions | None = None) -> None:
        self.items = list(items)
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.index = index or TestOpIndex.build(self.items, device=index_device, cache_dir=cache_dir)
        opinfos = {i.subject: i.op for i in self.items if i.op is not None}
        gens = cached_generators(cache_dir) if generators is None else generators
        gens = {name: users & set(opinfos) for name, users in gens.items()}
        if source_map is None:
            source_map = load_source_map(source_root, cache_dir)
        self.catalog = OpCatalog(aten_ops=self.index.aten_ops, opinfos=opinfos,
                                 generators={k: frozenset(v) for k, v in gens.items() if v},
                                 source_map=source_map or None, definitions=definitions,
                                 modules=frozenset(i.module for i in self.items if i.module))
        support = SupportAnswers.load(self.index.aten_ops, {i.dtype for i in self.items}, cache_dir)
        self.stages = [Scope(self.profile), Memory(self.index, self.catalog, self.items), Classify(support=support)]
        self._candidates = tuple(Candidate(item=i, mode=i.mode) for i in self.items)
        scope, memory = self.stages[0], self.stages[1]
        for ops, modules in ((True, False), (True, True)):  # warm: the usual area sets
            memory.positions(scope.kept_for(self._candidates, ops, modules))

    def initial_state(self, changeset: ChangeSet, mode: str = "auto") -> SelectionState:
        """Every item as a candidate; ``mode`` is resolved by ``selection.policy.upgrade.resolve_mode``."""
        return SelectionState(changeset=changeset, candidates=self._candidates,
                              universe=len(self.items), mode=resolve_mode(mode, changeset))

    def select_state(self, changeset: ChangeSet, *, mode: str = "auto",
                     budget_minutes: float | None = None,
                     durations: dict[str, float] | None = None) -> SelectionState:
        """The state after stages 1–3 (candidates classified, stats recorded), cut to
        ``budget_minutes`` of ``durations`` (seconds per id; ``selection.stages.budget``) if given."""
        state = self.initial_state(changeset, mode)
        for stage in self.stages:
            state = run_stage(stage, state)
        return apply_budget(state, budget_minutes, durations or {})

    def select(self, changeset: ChangeSet, *, mode: str = "auto", budget_minutes: float | None = None,
               durations: dict[str, float] | None = None) -> Selection:
        """Stages 1–3 (and the budget cut) for ``changeset`` as a ``Selection`` (design §4)."""
        return to_selection(self.select_state(changeset, mode=mode, budget_minutes=budget_minutes,
                                              durations=durations))


def to_selection(state: SelectionState) -> Selection:
    """The ``Selection`` view of a state: candidates ranked by (-score, id)."""
    # model_construct: every field comes from validated SpecItems and a score classify clamped
    # to [0, 1]; validating 50,000 copies would cost seconds.  Selection still checks its invariants.
    tests = [
        SelectedTest.model_construct(id=c.item.id, upstream=c.item.upstream, op=c.item.op,
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
