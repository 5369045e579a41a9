"""Stage 1 — scope: keep the upstream test areas a ChangeSet can matter to.

Each changed path is mapped to areas by the first matching rule in ``selection.policy.areas.RULES`` (globs over
repository paths, which are also wheel paths for everything under ``torch/``).  Paths that
change no runtime behaviour (docs, CI config, other devices' code) map to no area.  Changes to
shared machinery (``selection.policy.canary.SHARED_MACHINERY``: type promotion, TensorIterator, dispatch
stubs, ``c10/core``, the OpInfo core, ``make_tensor``, ``assert_close``) are recorded as
``state.machinery`` and memory selects a canary cross-section for them (one test per op family;
``selection.policy.canary``), in PR and upgrade mode alike.  The rest of
``torch/testing/_internal`` (``common_utils``, ``common_device_type``, …) is the ``testing``
area, which only upstream test files use.

Cost: one pass over the changed paths (precompiled globs).  The kept candidates for a set of
touched areas are computed once per candidate tuple and area set and then reused (the same tuple
object), so a select on a 50,000-test universe does not rescan it; no candidate is copied (the
reason per area goes to ``state.scope_reasons``).
"""

from __future__ import annotations

from dataclasses import replace

from selection.policy.areas import WIDEN, areas_of
from selection.policy.canary import is_shared_machinery
from selection.policy.profile import BackendProfile
from selection.policy.upgrade import UPGRADE_MODE, is_machinery
from selection.stage import Candidate, SelectionState


class Scope:
    """Stage 1: drop candidates whose area no changed file touches (or the profile declines)."""

    name = "scope"

    def __init__(self, profile: BackendProfile) -> None:
        self.profile = profile
        self._source: tuple | None = None
        self._kept: dict[tuple[bool, bool], tuple[Candidate, ...]] = {}

    def kept_for(self, candidates: tuple, ops: bool, modules: bool) -> tuple[Candidate, ...]:
        """The candidates of the touched item areas, in input order (memoised per tuple)."""
        if candidates is not self._source:
            self._source, self._kept = candidates, {}
        key = (ops, modules)
        if key not in self._kept:
            self._kept[key] = tuple(c for c in candidates
                                    if (modules if c.item.module is not None else ops))
        return self._kept[key]

    def count_in(self, state: SelectionState) -> int:
        return len(state.candidates)

    count_out = count_in

    def run(self, state: SelectionState) -> SelectionState:
        """Called once per ChangeSet, first: keeps the candidates in the areas the changed paths
        touch (path rules, backend profile); an unknown path widens (fail soft)."""
        touched: dict[str, list[str]] = {}
        notes: list[str] = []
        machinery: list[str] = []
        unmatched = 0
        for path in state.changeset.filenames:
            if is_shared_machinery(path) or (state.mode == UPGRADE_MODE and is_machinery(path)):
                machinery.append(path)
                notes.append(f"{path}: shared machinery under every op; selecting canaries "
                             "(one test per op family) instead of widening")
                continue
            hit = areas_of(path)
            if hit is None:
                unmatched += 1
                continue
            areas, why = hit
            if WIDEN in areas:
                areas = tuple(sorted(self.profile.areas - self.profile.excluded))
                notes.append(f"{path}: {why} widens scope to {', '.join(areas)}")
            for area in areas:
                if self.profile.wants(area):
                    touched.setdefault(area, []).append(path)
        if machinery:  # canaries are op and module items; memory picks them
            for area in ("ops", "modules"):
                if self.profile.wants(area):
                    touched.setdefault(area, [])
        if unmatched:
            notes.append(f"{unmatched} changed files match no scope rule (select nothing)")
        reasons = {}
        source = f" [{'; '.join(state.changeset.notes)}]" if state.changeset.notes else ""
        for area, paths in touched.items():
            if paths:
                more = f" (+{len(paths) - 1} more)" if len(paths) > 1 else ""
                reasons[area] = f"scope: {area} touched by {paths[0]}{more}{source}"
            else:
                reasons[area] = f"scope: {area} reached by test machinery ({machinery[0]}){source}"
        notes = list(state.changeset.notes) + notes
        kept = self.kept_for(tuple(state.candidates), "ops" in touched, "modules" in touched)
        return replace(state, candidates=kept, notes=state.notes + tuple(notes),
                       scope_reasons=reasons, machinery=tuple(machinery))
