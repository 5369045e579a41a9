"""Stage 1 — scope: keep the upstream test areas a ChangeSet can matter to.

Each changed path is mapped to areas by the first matching rule in ``RULES`` (globs over
repository paths, which are also wheel paths for everything under ``torch/``).  Paths that
change no runtime behaviour (docs, CI config, other devices' code) map to no area.  Changes to
shared machinery (``selection.canary.SHARED_MACHINERY``: type promotion, TensorIterator, dispatch
stubs, ``c10/core``, the OpInfo core, ``make_tensor``, ``assert_close``) are recorded as
``state.machinery`` and memory selects a canary cross-section for them (one test per op family;
``selection.canary``), in PR and upgrade mode alike.  The rest of
``torch/testing/_internal`` (``common_utils``, ``common_device_type``, …) is the ``testing``
area, which only upstream test files use.

Cost: one pass over the changed paths (precompiled globs).  The kept candidates for a set of
touched areas are computed once per candidate tuple and area set and then reused (the same tuple
object), so a select on a 50,000-test universe does not rescan it; no candidate is copied (the
reason per area goes to ``state.scope_reasons``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fnmatch import translate

from selection.canary import is_shared_machinery
from selection.profile import BackendProfile
from selection.stage import Candidate, SelectionState
from selection.upgrade import UPGRADE_MODE, is_machinery

WIDEN = "*"  # pseudo-area: every area the profile wants


@dataclass(frozen=True)
class PathRule:
    """``pattern`` (fnmatch glob over the repo path) → ``areas`` ("" areas = inert file)."""

    pattern: str
    areas: tuple[str, ...]
    why: str


RULES: tuple[PathRule, ...] = (
    PathRule("docs/*", (), "documentation"),
    PathRule("*.md", (), "documentation"),
    PathRule("*.rst", (), "documentation"),
    PathRule(".github/*", (), "CI configuration"),
    PathRule(".ci/*", (), "CI configuration"),
    PathRule(".circleci/*", (), "CI configuration"),
    PathRule("*.dist-info/*", (), "packaging metadata"),
    PathRule("torch/testing/_internal/opinfo/core.py", ("ops",), "OpInfo machinery every op test uses"),
    PathRule("torch/testing/_internal/opinfo/utils.py", ("ops",), "OpInfo machinery every op test uses"),
    PathRule("torch/testing/_internal/common_methods_invocations.py", ("ops",), "OpInfo definitions"),
    PathRule("torch/testing/_internal/opinfo/*", ("ops",), "OpInfo definitions"),
    PathRule("torch/testing/_internal/common_modules.py", ("modules",), "ModuleInfo definitions"),
    PathRule("torch/testing/_internal/distributed/*", ("distributed",), "distributed test machinery"),
    PathRule("torch/testing/_creation.py", (WIDEN,), "make_tensor, used by every sample input"),
    PathRule("torch/testing/_comparison.py", (WIDEN,), "assert_close, used by every comparison"),
    PathRule("torch/testing/_internal/*", ("testing",), "upstream test-file machinery"),
    PathRule("torch/testing/*", ("testing",), "torch.testing"),
    PathRule("torch/distributed/*", ("distributed",), "distributed"),
    PathRule("torch/_dynamo/*", ("dynamo",), "dynamo"),
    PathRule("torch/_inductor/*", ("inductor",), "inductor"),
    PathRule("torch/cuda/*", ("cuda",), "CUDA runtime"),
    PathRule("*/cuda/*", ("cuda",), "CUDA code"),
    PathRule("*.cu", ("cuda",), "CUDA kernel"),
    PathRule("*.cuh", ("cuda",), "CUDA kernel"),
    PathRule("torch/lib/*cuda*", ("cuda",), "CUDA library"),
    PathRule("torch/lib/*nccl*", ("distributed",), "NCCL library"),
    PathRule("torch/mps/*", ("mps",), "MPS runtime"),
    PathRule("*/mps/*", ("mps",), "MPS code"),
    PathRule("torch/xpu/*", ("xpu",), "XPU runtime"),
    PathRule("torch/utils/backend_registration.py", ("device",), "PrivateUse1 registration"),
    PathRule("*PrivateUse1*", ("device",), "PrivateUse1 hooks"),
    PathRule("torch/nn/modules/*", ("modules", "ops"), "nn modules (and their functional ops)"),
    PathRule("torch/nn/functional.py", ("ops", "modules"), "nn.functional"),
    PathRule("torch/nn/*", ("modules",), "nn"),
    PathRule("torch/_refs/*", ("ops",), "Python references"),
    PathRule("torch/_prims/*", ("ops",), "prims"),
    PathRule("torch/_decomp/*", ("ops",), "decompositions"),
    PathRule("torch/_meta_registrations.py", ("ops",), "meta kernels"),
    PathRule("torch/_tensor.py", ("ops",), "Tensor methods"),
    PathRule("torch/functional.py", ("ops",), "torch functions"),
    PathRule("torch/_torch_docs.py", (), "documentation"),
    PathRule("torch/_tensor_docs.py", (), "documentation"),
    PathRule("aten/src/ATen/native/native_functions.yaml", ("ops", "modules"), "op schemas"),
    PathRule("aten/src/ATen/native/*", ("ops", "modules"), "native kernels"),
    PathRule("torch/include/ATen/ops/*", ("ops", "modules"), "per-op ATen headers"),
    PathRule("torch/include/*", ("ops",), "C++ headers of the compiled library"),
    PathRule("aten/*", ("ops", "modules"), "ATen"),
    PathRule("c10/*", ("ops",), "c10 core"),
    PathRule("torch/lib/libtorch_cpu*", ("ops",), "CPU kernels (binary)"),
    PathRule("torch/csrc/*", ("ops",), "C++ frontend"),
    PathRule("test/*", (), "upstream test file (not reused by these specs)"),
)


#: One alternation of every rule's glob; alternatives are tried in order at position 0, so the
#: first group that matches is the first rule that matches (one regex call per path).
_ALL = re.compile("|".join(f"(?P<r{n}>{translate(r.pattern)})" for n, r in enumerate(RULES)))


def areas_of(path: str) -> tuple[tuple[str, ...], str] | None:
    """The areas a changed ``path`` touches and the rule's reason; ``None`` when no rule matches."""
    m = _ALL.match(path)
    if m is None:
        return None
    rule = RULES[int(m.lastgroup[1:])]
    return rule.areas, rule.why


def item_area(candidate: Candidate) -> str:
    """The area of a spec item: ``ops`` for OpInfo items, ``modules`` for ModuleInfo items."""
    return "modules" if candidate.item.module is not None else "ops"


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
