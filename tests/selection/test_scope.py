"""Stage 1's decisions (``selection.stages.scope``): which item areas a change keeps, what it
says about each path (notes, per-area reasons naming the change's source), and shared machinery
recorded for the canaries rather than widened."""

from __future__ import annotations

import pytest

import selection.stages.scope as scope_module
from selection.models import ChangedFile, ChangeSet
from selection.policy.areas import WIDEN
from selection.policy.profile import SPYRE_SIM, BackendProfile
from selection.stage import Candidate, SelectionState
from selection.stages.scope import Scope
from tests.selection.conftest import item

OPS = [item("add"), item("mul")]
MODULES = [item("Linear", module="nn.Linear")]


def run(*paths: str, notes: tuple[str, ...] = (), mode: str = "pr", profile: BackendProfile = SPYRE_SIM):
    cs = ChangeSet(base="a", head="b", files=[ChangedFile(filename=p) for p in paths], notes=list(notes))
    cands = tuple(Candidate(i, i.mode) for i in OPS + MODULES)
    state = SelectionState(changeset=cs, candidates=cands, universe=len(cands), mode=mode, notes=("earlier",))
    return Scope(profile).run(state)


def kept(state) -> list[str]:
    return [c.item.subject for c in state.candidates]


def test_each_area_is_kept_with_the_path_that_touched_it() -> None:
    st = run("torch/_refs/__init__.py", "torch/_decomp/decompositions.py", "torch/_prims/__init__.py")
    assert kept(st) == ["add", "mul"]
    assert st.scope_reasons == {"ops": "scope: ops touched by torch/_refs/__init__.py (+2 more)"}
    assert st.notes == ("earlier",) and st.machinery == ()
    st = run("torch/nn/modules/linear.py", notes=("patches from GitHub's compare API",))
    assert kept(st) == ["add", "mul", "nn.Linear"]
    assert st.scope_reasons == {
        "modules": "scope: modules touched by torch/nn/modules/linear.py [patches from GitHub's compare API]",
        "ops": "scope: ops touched by torch/nn/modules/linear.py [patches from GitHub's compare API]"}
    assert st.notes == ("earlier", "patches from GitHub's compare API")


def test_inert_and_declined_paths_select_nothing_and_unknown_ones_are_counted() -> None:
    st = run("docs/source/index.rst", "torch/_dynamo/eval_frame.py")
    assert kept(st) == [] and st.scope_reasons == {} and st.notes == ("earlier",)
    st = run("somewhere/new.txt", "other/new.txt")
    assert kept(st) == [] and st.notes == ("earlier", "2 changed files match no scope rule (select nothing)")


def test_shared_machinery_is_recorded_for_canaries_and_reaches_ops_and_modules() -> None:
    st = run("c10/core/ScalarType.h", "torch/_refs/__init__.py")
    assert st.machinery == ("c10/core/ScalarType.h",)
    assert kept(st) == ["add", "mul", "nn.Linear"]
    assert st.scope_reasons == {"ops": "scope: ops touched by torch/_refs/__init__.py",
                                "modules": "scope: modules reached by test machinery (c10/core/ScalarType.h)"}
    assert st.notes == ("earlier", "c10/core/ScalarType.h: shared machinery under every op; selecting canaries "
                        "(one test per op family) instead of widening")
    modules_only = BackendProfile("m", frozenset({"modules"}))
    assert kept(run("c10/core/ScalarType.h", profile=modules_only)) == ["nn.Linear"]


def test_a_widening_rule_selects_every_wanted_area(monkeypatch) -> None:
    monkeypatch.setattr(scope_module, "areas_of", lambda path: ((WIDEN,), "used by everything"))
    profile = BackendProfile("p", frozenset({"ops", "modules", "dynamo"}), frozenset({"dynamo"}))
    st = run("torch/everything.py", profile=profile)
    assert kept(st) == ["add", "mul", "nn.Linear"]
    assert st.notes == ("earlier", "torch/everything.py: used by everything widens scope to modules, ops")


@pytest.mark.parametrize(("ops", "modules", "expected"), [
    (True, False, ["add", "mul"]), (False, True, ["nn.Linear"]), (True, True, ["add", "mul", "nn.Linear"]),
    (False, False, [])])
def test_kept_candidates_are_the_touched_item_areas_in_input_order(ops, modules, expected) -> None:
    cands = tuple(Candidate(i, i.mode) for i in OPS + MODULES)
    stage = Scope(SPYRE_SIM)
    first = stage.kept_for(cands, ops, modules)
    assert [c.item.subject for c in first] == expected
    assert stage.kept_for(cands, ops, modules) is first  # memoised for the same tuple
    other = tuple(reversed(cands))
    assert [c.item.subject for c in stage.kept_for(other, ops, modules)] == list(reversed(expected))


def test_scope_counts_its_candidates() -> None:
    st = run("torch/_refs/__init__.py")
    stage = Scope(SPYRE_SIM)
    assert (stage.name, stage.count_in(st), stage.count_out(st)) == ("scope", 2, 2)
