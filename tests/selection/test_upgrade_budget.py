"""Upgrade mode (canaries instead of widening), the budget cut, and the Selector end to end."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from relay.store.durations import durations_from_db
from selection.models import ChangedFile, ChangeSet
from selection.pipeline import Selector, to_selection
from selection.policy.profile import SPYRE_SIM
from selection.policy.upgrade import canaries, resolve_mode
from selection.stage import Candidate, SelectionState, run_stage
from selection.stages.budget import DEFAULT_SECONDS, apply_budget
from selection.stages.classify import Classify
from selection.stages.memory import Memory
from selection.stages.scope import Scope

COMPARISON = ChangedFile(filename="torch/testing/_comparison.py", symbols=["TensorLikePair"])
SOFTMAX_ENTRY = ChangedFile(filename="torch/testing/_internal/common_methods_invocations.py",
                            symbols=["op_db[softmax]"])


def state(universe, *files, mode="pr", base="a", head="b"):
    cs = ChangeSet(base=base, head=head, files=list(files))
    return SelectionState(changeset=cs, candidates=tuple(Candidate(i, i.mode) for i in universe),
                          universe=len(universe), mode=mode)


def run(universe, index, catalog, st):
    for stage in (Scope(SPYRE_SIM), Memory(index, catalog), Classify()):
        st = run_stage(stage, st)
    return st


def test_resolve_mode():
    assert resolve_mode("auto", ChangeSet(base="torch==2.13.0", head="torch==2.14.1")) == "upgrade"
    assert resolve_mode("auto", ChangeSet(base="abc", head="def")) == "pr"
    assert resolve_mode("pr", ChangeSet(base="torch==1", head="torch==2")) == "pr"
    with pytest.raises(ValueError):
        resolve_mode("everything", ChangeSet(base="a", head="b"))


def test_pr_mode_machinery_selects_family_canaries_plus_changed(universe, index, catalog):
    st = run(universe, index, catalog, state(universe, COMPARISON, SOFTMAX_ENTRY))
    by_id = {c.item.id: c for c in st.candidates}
    assert len(by_id) < len(universe) and "core::compare_cpu[mul-float16]" not in by_id
    assert by_id["core::compare_cpu[softmax-float16]"].score == 1.0  # its entry changed
    assert any(r.startswith("canary (pointwise binary)") for r in by_id["core::compare_cpu[add-float16]"].reasons)


def test_upgrade_mode_machinery_selects_canaries_plus_changed(universe, index, catalog):
    st = run(universe, index, catalog, state(universe, COMPARISON, SOFTMAX_ENTRY, mode="upgrade"))
    by_id = {c.item.id: c for c in st.candidates}
    soft16 = by_id["core::compare_cpu[softmax-float16]"]
    assert soft16.score == 1.0 and any("changed test definition" in r for r in soft16.reasons)
    canary = by_id["core::compare_cpu[add-float16]"]  # add is the first canary op
    assert canary.score == 0.5 and any("canary" in r for r in canary.reasons)
    assert any("instead of widening" in n for n in st.notes)
    assert any(r.startswith("canary (") for r in by_id["core::compare_cpu[matmul-float16]"].reasons)
    assert st.machinery == ("torch/testing/_comparison.py",)


def test_canaries_are_deterministic_per_template_and_dtype(universe):
    cands = [Candidate(i, i.mode) for i in universe if i.op]
    picked = canaries(cands, k=1)
    assert [c.item.id for c in picked] == [c.item.id for c in canaries(list(reversed(cands)), k=1)]
    assert {(c.item.template, c.item.dtype) for c in picked} == {(c.item.template, c.item.dtype) for c in cands}


def _ranked(universe):
    cands = []
    for n, i in enumerate(universe):
        cands.append(Candidate(i, "skip" if i.dtype == "float64" else i.mode, score=round(1 - n / 10, 2)))
    return cands


def test_budget_cuts_a_prefix_of_the_ranked_list(universe):
    st = replace(state(universe), candidates=tuple(_ranked(universe)))
    durations = {universe[0].id: 60.0, universe[1].id: 30.0, universe[2].id: 40.0}
    out = apply_budget(st, 1.5, durations)  # 90 s: tests 0 and 1 fit, 2 does not; the rest are cut
    kept = {c.item.id for c in out.candidates}
    assert universe[0].id in kept and universe[1].id in kept and universe[2].id not in kept
    assert universe[3].id not in kept  # 2 s would fit, but the cut is a prefix
    assert "core::compare_cpu[add-float64]" in kept  # skip costs nothing and stays listed
    assert out.stats[-1].name == "budget" and out.stats[-1].out == 2
    assert any("budget: within 1.5 min" in r for r in out.candidates[0].reasons)
    assert apply_budget(st, 1.5, durations).candidates == out.candidates  # deterministic


def test_budget_defaults_none_and_errors(universe):
    st = replace(state(universe), candidates=tuple(_ranked(universe)))
    assert apply_budget(st, None, {}) is st
    with pytest.raises(ValueError, match="^budget must be ≥ 0 minutes, got -1$"):
        apply_budget(st, -1, {})
    out = apply_budget(st, 3 * DEFAULT_SECONDS / 60.0, {})
    assert sum(1 for c in out.candidates if c.mode != "skip") == 3


def test_durations_from_db(tmp_path: Path):
    db = tmp_path / "r.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE test_results (test_id TEXT, duration_ms REAL)")
    con.executemany("INSERT INTO test_results VALUES (?, ?)", [("a", 1000), ("a", 3000), ("a", 2000), ("b", 0)])
    con.commit()
    con.close()
    assert durations_from_db(f"sqlite:///{db}") == {"a": 2.0}
    assert durations_from_db(f"sqlite:///{tmp_path / 'missing' / 'x.db'}") == {}  # fail soft


def test_selector_end_to_end_with_budget(universe, index):
    sel = Selector(universe, index=index, generators={}, source_map=False)
    cs = ChangeSet(base="a", head="b", files=[ChangedFile(filename="aten/src/ATen/native/SoftMax.cpp")])
    full = sel.select(cs)
    assert {t.op for t in full.selected} == {"softmax"} and [s.name for s in full.stages] == [
        "scope", "memory", "classify"]
    cut = sel.select(cs, budget_minutes=DEFAULT_SECONDS / 60.0)
    assert len(cut.to_run) == 1 and cut.to_run[0].id == full.to_run[0].id
    assert cut.stages[-1].name == "budget"
    assert to_selection(sel.select_state(cs)).selected == full.selected  # same input, same output


def test_budget_reasons_print_fast_tests_in_ms(universe):
    """A test under 50 ms reads in ms, not "0.0 s" (issue 18); slower ones stay in seconds."""
    cands = tuple(Candidate(i, i.mode) for i in universe if i.op and i.mode != "skip")
    st = SelectionState(changeset=ChangeSet(base="a", head="b"), candidates=cands, universe=len(cands))
    durations = {cands[0].item.id: 0.012, cands[1].item.id: 0.0004, cands[2].item.id: 1.25}
    out = {c.item.id: c.reasons[-1] for c in apply_budget(st, 10, durations).candidates}
    assert out[cands[0].item.id].endswith("this test 12 ms)")
    assert out[cands[1].item.id].endswith("this test 0.4 ms)")
    assert out[cands[2].item.id].endswith("this test 1.2 s)") and "0.0 s" not in " ".join(out.values())
