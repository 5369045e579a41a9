"""Stage 2 — repository memory: keep the candidates whose ops or definitions a change touches.

Uses the test → aten-op index (``selection.index.op_index``) and file/symbol attribution
(``selection.attribution.rules``).  A candidate survives when

* its OpInfo entry or sample-input generator changed (changed test definition), or
* it calls an aten op that a changed file implements — for a whole native file attributed by
  name only (no patch, no upstream checkout: which kernel changed is unknown), only its ops' own
  OpInfos (and variants) and the modules running them; an op without an OpInfo of its own
  (``aten::_native_batch_norm_legit``) keeps every test calling it — or
* it has no index entry (never captured: kept, fail soft), or
* a changed source file in its area could not be attributed to ops, not even through the files
  that import it (``selection.attribution.rules``; fail soft: "select more"), or
* it is a canary (one test per op family, ``selection.policy.canary``) for a change to shared machinery
  or to a C++ file nothing attributes, or — in upgrade mode — for a test-machinery change
  (``selection.policy.upgrade``).

Compiled binaries (``libtorch_cpu.so``) are opaque: noted, never widening, because a release
diff changes every binary while its headers and Python symbols carry the attributable signal.

Cost per ChangeSet: attribution of the changed files, then — unless a fail-soft area or canaries
need a per-candidate decision — one set-membership test per candidate against the ids the
impacts reach (``tests_for`` over the reverse index, ``ids_by_subject`` precomputed once per
universe).  Only surviving candidates are copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from selection.attribution.rules import Impact, OpCatalog, attribute_all
from selection.index.op_index import TestOpIndex
from selection.policy.areas import WIDEN, areas_of, item_area
from selection.policy.canary import family_canaries
from selection.policy.upgrade import UPGRADE_MODE, canaries, is_machinery
from selection.stage import Candidate, OpImpact, SelectionState, Signals
from test_specs.values.items import SpecItem

#: A whole shared native file without a patch (``Impact.broad``) whose ops have more OpInfos than
#: this runs a cross-section of each: one test per dtype, the first template of
#: ``TEMPLATE_ORDER`` the OpInfo has (the value-checking templates first).  ``UnaryOps.cpp`` by
#: name alone has ~65 OpInfos (1,081 of the 8,201 bundled items, 13 %): each keeps its dtypes.
BROAD_SUBJECTS = 12
TEMPLATE_ORDER = {t: n for n, t in enumerate((
    "TestCommon::test_compare_cpu", "TestCommon::test_noncontiguous_samples",
    "TestCommon::test_variant_consistency_eager", "TestCommon::test_numpy_ref",
    "TestCommon::test_out", "TestCommon::test_out_warning"))}


@dataclass
class _Hits:
    """What one ChangeSet's impacts reach (see ``Memory._hits``)."""

    by_test: dict[str, list[OpImpact]] = field(default_factory=dict)
    by_subject: dict[str, list[str]] = field(default_factory=dict)
    fail_soft_areas: dict[str, str] = field(default_factory=dict)
    canary_files: list[str] = field(default_factory=list)
    opaque: int = 0
    notes: list[str] = field(default_factory=list)


class Memory:
    """Stage 2: narrow scoped candidates to those a change's impacts reach.

    ``items``: the universe, for the maps built once (OpInfo subject → ids, never-indexed ids);
    default: the candidates of the first state run.
    """

    name = "memory"

    def __init__(self, index: TestOpIndex, catalog: OpCatalog,
                 items: Sequence[SpecItem] | None = None) -> None:
        self.index = index
        self.catalog = catalog
        self._by_subject: dict[str, list[str]] | None = None
        self._unindexed: set[str] | None = None
        self._source: tuple | None = None
        self._pos: dict[str, int] = {}
        if items is not None:
            self._prepare(items)

    def _prepare(self, items) -> None:
        by_subject: dict[str, list[str]] = {}
        for i in items:
            if i.op is not None or i.module is not None:
                by_subject.setdefault(i.subject, []).append(i.id)
        self._by_subject = by_subject
        self._unindexed = {i.id for i in items if i.id not in self.index.entries}
        self._module_ids = {i.id for i in items if i.module is not None}
        self._shape = {i.id: (i.dtype, TEMPLATE_ORDER.get(i.template, len(TEMPLATE_ORDER)), i.template)
                       for i in items if i.op is not None}
        self._size = len(items)

    def positions(self, candidates: tuple) -> dict[str, int]:
        """Test id → position in ``candidates`` (memoised per tuple; scope reuses its tuples)."""
        if candidates is not self._source:
            self._source = candidates
            self._pos = {c.item.id: n for n, c in enumerate(candidates)}
        return self._pos

    def count_in(self, state: SelectionState) -> int:
        return len(state.candidates)

    count_out = count_in

    def impacts(self, state: SelectionState) -> list[Impact]:
        """The attribution of every changed file except deferred machinery (input order)."""
        files = [f for f in state.changeset.files if f.filename not in state.machinery]
        return attribute_all(files, self.catalog, state.changeset.head)

    def run(self, state: SelectionState) -> SelectionState:
        """Called once per ChangeSet, after scope: the candidates the change's impacts reach,
        each with its reasons, and the ``Signals`` heuristics read in stage 3."""
        if self._by_subject is None:
            self._prepare([c.item for c in state.candidates])
        hits = self._hits(self.impacts(state))
        notes: list[str] = list(hits.notes)
        if hits.opaque:
            notes.append(f"{hits.opaque} compiled binaries or their headers changed (opaque; not attributed)")
        present = {"modules" if c.item.module is not None else "ops" for c in state.candidates} \
            if hits.fail_soft_areas else set()
        areas = {a: p for a, p in hits.fail_soft_areas.items() if a in present or a == WIDEN}
        for area, path in sorted(areas.items()):
            what = "every" if area == WIDEN else f"all '{area}'"
            notes.append(f"{path}: not attributable to ops; keeping {what} tests (fail soft)")
        canary = self._canaries(state, hits)
        if canary:
            files = len(state.machinery) + len(hits.canary_files)
            notes.append(f"{len(canary)} canaries for {files} shared-machinery or not attributable files")
        for path in hits.canary_files:
            notes.append(f"{path}: not attributable to ops; canaries instead of all 'ops' tests")
        pool = state.candidates if areas else self._reached(state, hits, canary)
        kept, fail_soft = self._keep(state, pool, hits, canary, areas)
        signals = Signals(
            op_impacts={k: tuple(dict.fromkeys(v)) for k, v in hits.by_test.items()},
            changed_definitions={k: tuple(dict.fromkeys(v)) for k, v in hits.by_subject.items()},
            fail_soft=frozenset(fail_soft),
            test_ops=self.index.entries,
            canaries=canary,
        )
        return replace(state, candidates=tuple(kept), notes=state.notes + tuple(notes),
                       signals=signals)

    def _hits(self, impacts: list[Impact]) -> _Hits:
        """What the impacts reach: reasons by test id (changed ops, OpInfos of changed
        implementations) and by OpInfo subject (changed definitions), the areas of files that
        could not be attributed (first such file per area), and the count of opaque binaries."""
        hits = _Hits()
        for imp in impacts:
            if imp.opaque:
                hits.opaque += 1
                continue
            if imp.canary:
                hits.canary_files.append(imp.filename)
                continue
            if not imp.attributed:
                hit = areas_of(imp.filename)
                for area in (hit[0] if hit else ()):
                    hits.fail_soft_areas.setdefault(area, imp.filename)
                continue
            src = imp.filename
            if imp.via:
                src = f"{imp.filename} (no module or op of its own; through its importers {imp.via})"
                hits.notes.append(f"{imp.filename}: defines no module or op of its own; attributed through "
                                  f"who imports it ({imp.via}); only what they reach is kept")
            thin = imp.broad and len(imp.opinfos) > BROAD_SUBJECTS
            if thin:
                hits.notes.append(
                    f"{imp.filename}: {len(imp.opinfos)} OpInfos of its ops; each runs one test per dtype "
                    f"({next(iter(TEMPLATE_ORDER))} first)")
            if imp.broad:
                hits.notes.append(
                    f"{imp.filename}: whole file without a patch; its ops' own OpInfos and the modules that "
                    "run them are selected (give the patch, or --upstream, to select every caller by kernel)")
            for op in sorted(imp.aten_ops):
                tests = self.index.by_op.get(op, ())
                if imp.broad and self._own_tests_run(op, tests):  # own OpInfos stand for the op
                    tests = [t for t in tests if t in self._module_ids]
                impact = OpImpact(f"{src} → {op} → {len(tests)} tests", len(tests))
                for t in tests:
                    hits.by_test.setdefault(t, []).append(impact)
            for module in sorted(imp.modules):
                tests = self._by_subject.get(module, [])
                impact = OpImpact(f"{src} → module {module} → {len(tests)} tests", len(tests))
                for t in tests:
                    hits.by_test.setdefault(t, []).append(impact)
            for subject in sorted(imp.opinfos):
                if imp.definition:
                    reason = imp.why.get(subject) or f"{src} → OpInfo {subject}"
                    hits.by_subject.setdefault(subject, []).append(reason)
                    continue
                tests = self._by_subject.get(subject, [])
                if thin:
                    tests = self._cross_section(tests, imp.aten_ops)
                impact = OpImpact(f"{src} → OpInfo {subject} → {len(tests)} tests" + (
                    " (one per dtype: a whole shared file without a patch)" if thin else ""), len(tests))
                for t in tests:
                    hits.by_test.setdefault(t, []).append(impact)
        return hits

    def _canaries(self, state: SelectionState, hits: _Hits) -> dict[str, str]:
        """Test id → reason for the canaries of shared machinery (``selection.policy.canary``) and of
        C++ files nothing attributes; in upgrade mode also ``selection.policy.upgrade.canaries`` for
        its test machinery."""
        out: dict[str, str] = {}
        files = list(state.machinery) + hits.canary_files
        if not files:
            return out
        upgrade = [p for p in state.machinery if is_machinery(p)] if state.mode == UPGRADE_MODE else []
        if upgrade:
            why = f"upgrade: canary for test-machinery change ({', '.join(upgrade)})"
            out = {c.item.id: why for c in canaries(state.candidates)}
        more = f" (+{len(files) - 1} more)" if len(files) > 1 else ""
        what = "shared machinery" if state.machinery else "not attributable"
        for family, picked in family_canaries(state.candidates, state.universe).items():
            why = f"canary ({family}) for {what}: {files[0]}{more}"
            for c in picked:
                out.setdefault(c.item.id, why)
        return out

    def _own_tests_run(self, op: str, callers) -> bool:
        """Whether a test of ``op``'s own OpInfos (``OpCatalog.variants``) is among ``callers``
        (its index entry lists ``op``): ``norm``'s OpInfos may reach ``aten::linalg_vector_norm``
        instead, and then the other callers are kept."""
        callers = callers if isinstance(callers, (set, frozenset)) else set(callers)
        return any(t in callers for s in self.catalog.variants([op]) for t in self._by_subject.get(s, ()))

    def _cross_section(self, ids: list[str], ops=frozenset()) -> list[str]:
        """One id per dtype of ``ids`` (one OpInfo subject's tests): a test whose index entry
        lists one of ``ops`` first, then the template first in ``TEMPLATE_ORDER``, then by name;
        ids of other shapes (modules) are kept."""
        best: dict[str, tuple[bool, int, str, str]] = {}
        rest = []
        for t in ids:
            shape = self._shape.get(t)
            if shape is None:
                rest.append(t)
                continue
            runs = not ops.isdisjoint(self.index.entries.get(t, ()))
            dtype, rank = shape[0], (not runs, shape[1], shape[2], t)
            if dtype not in best or rank < best[dtype]:
                best[dtype] = rank
        return rest + [rank[-1] for rank in best.values()]

    def _reached(self, state: SelectionState, hits: _Hits, canary: dict[str, str]) -> list[Candidate]:
        """Fast path (no fail-soft area): only the ids the impacts reach, canaries and never
        indexed ids can survive; in candidate order."""
        wanted = set(hits.by_test) | set(canary) | self._unindexed
        for subject in hits.by_subject:
            wanted.update(self._by_subject.get(subject, ()))
        cands = tuple(state.candidates)
        pos = self.positions(cands)
        return [cands[n] for n in sorted(pos[t] for t in wanted if t in pos)]

    def _keep(self, state: SelectionState, pool: Sequence[Candidate], hits: _Hits, canary: dict[str, str],
              areas: dict[str, str]) -> tuple[list[Candidate], set[str]]:
        """The surviving candidates with their reasons, and the ids kept only by fail soft."""
        kept: list[Candidate] = []
        fail_soft: set[str] = set()
        memo: dict[tuple, tuple[str, ...]] = {}  # reasons shared by every soft-kept test of an area
        for cand in pool:
            tid = cand.item.id
            reasons = [impact.reason for impact in hits.by_test.get(tid, ())]
            reasons += hits.by_subject.get(cand.item.subject, ()) if cand.item.op else []
            if tid in canary:
                reasons.append(canary[tid])
            area = item_area(cand)
            missing = tid not in self.index.entries
            source = areas.get(area) or areas.get(WIDEN)
            if not reasons and not missing and not source:
                continue
            if not reasons:
                fail_soft.add(tid)
            failure = self.index.failures.get(tid) if missing else None
            key = (area, missing, source, failure)
            if reasons or key not in memo:
                soft: list[str] = []
                if failure:
                    soft.append(f"memory: op index capture failed ({failure}); kept (fail soft)")
                elif missing:
                    soft.append("memory: no op index entry for this test; kept (fail soft)")
                if source:
                    soft.append(f"memory: {source} could not be attributed; kept")
                scope = state.scope_reasons.get(area)
                extra = tuple(dict.fromkeys(([scope] if scope else []) + reasons + soft))
                if reasons:
                    kept.append(Candidate(cand.item, cand.mode, cand.score, cand.reasons + extra))
                    continue
                memo[key] = extra
            kept.append(Candidate(cand.item, cand.mode, cand.score, cand.reasons + memo[key]))
        return kept, fail_soft
