"""Stage 2 — repository memory: keep the candidates whose ops or definitions a change touches.

Uses the test → aten-op index (``selection.index``) and file/symbol attribution
(``selection.attribution``).  A candidate survives when

* its OpInfo entry or sample-input generator changed (changed test definition), or
* it calls an aten op that a changed file implements, or
* it has no index entry (never captured: kept, fail soft), or
* a changed source file in its area could not be attributed to ops (fail soft: "select more").

Compiled binaries (``libtorch_cpu.so``) are opaque: noted, never widening, because a release
diff changes every binary while its headers and Python symbols carry the attributable signal.
"""

from __future__ import annotations

from dataclasses import replace

from selection.attribution import Impact, OpCatalog, attribute_all
from selection.index import TestOpIndex
from selection.scope import WIDEN, areas_of, item_area
from selection.stage import Candidate, SelectionState, Signals


class Memory:
    """Stage 2: narrow scoped candidates to those a change's impacts reach."""

    name = "memory"

    def __init__(self, index: TestOpIndex, catalog: OpCatalog) -> None:
        self.index = index
        self.catalog = catalog

    def count_in(self, state: SelectionState) -> int:
        return len(state.candidates)

    count_out = count_in

    def impacts(self, state: SelectionState) -> list[Impact]:
        """The attribution of every changed file (input order)."""
        return attribute_all(state.changeset.files, self.catalog)

    def run(self, state: SelectionState) -> SelectionState:
        impacts = self.impacts(state)
        by_test: dict[str, list[str]] = {}
        by_subject: dict[str, list[str]] = {}
        fail_soft_areas: dict[str, str] = {}
        notes: list[str] = []
        opaque = 0
        for imp in impacts:
            if imp.opaque:
                opaque += 1
                continue
            if not imp.attributed:
                hit = areas_of(imp.filename)
                for area in (hit[0] if hit else ()):
                    fail_soft_areas.setdefault(area, imp.filename)
                continue
            for op in sorted(imp.aten_ops):
                tests = self.index.tests_for([op])
                reason = f"{imp.filename} → {op} → {len(tests)} tests"
                for t in tests:
                    by_test.setdefault(t, []).append(reason)
            for subject in sorted(imp.opinfos):
                reason = next((r for r in imp.reasons if subject.split(".")[0] in r),
                              f"{imp.filename} → OpInfo {subject}")
                by_subject.setdefault(subject, []).append(reason)
        if opaque:
            notes.append(f"{opaque} compiled binaries or their headers changed (opaque; not attributed)")
        present = {item_area(c) for c in state.candidates}
        fail_soft_areas = {a: p for a, p in fail_soft_areas.items() if a in present or a == WIDEN}
        for area, path in sorted(fail_soft_areas.items()):
            what = "every" if area == WIDEN else f"all '{area}'"
            notes.append(f"{path}: not attributable to ops; keeping {what} tests (fail soft)")
        kept: list[Candidate] = []
        fail_soft: set[str] = set()
        for cand in state.candidates:
            reasons = list(by_test.get(cand.item.id, ()))
            reasons += by_subject.get(cand.item.subject, ()) if cand.item.op else []
            soft: list[str] = []
            if cand.item.id not in self.index.entries:
                soft.append("memory: no op index entry for this test; kept (fail soft)")
            area = item_area(cand)
            source = fail_soft_areas.get(area) or fail_soft_areas.get(WIDEN)
            if source:
                soft.append(f"memory: {source} could not be attributed; kept")
            if soft and not reasons:
                fail_soft.add(cand.item.id)
            if reasons or soft:
                all_reasons = tuple(dict.fromkeys(reasons + soft))
                kept.append(replace(cand, reasons=cand.reasons + all_reasons))
        signals = Signals(
            op_impacts={k: tuple(dict.fromkeys(v)) for k, v in by_test.items()},
            changed_definitions={k: tuple(dict.fromkeys(v)) for k, v in by_subject.items()},
            fail_soft=frozenset(fail_soft),
            test_ops=self.index.entries,
        )
        return replace(state, candidates=tuple(kept), notes=state.notes + tuple(notes),
                       signals=signals)
