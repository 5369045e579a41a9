"""Each heuristic on its own: score, reason, and no opinion without its signal."""

from __future__ import annotations

import pytest

from selection.heuristics import (
    HEURISTICS,
    ChangedDefinition,
    EditedOp,
    HeuristicResult,
    MachineryCanary,
    UnsupportedOp,
)
from selection.stage import Candidate, OpImpact, Signals


def cand(universe, n):
    return Candidate(universe[n], universe[n].mode)


def test_registered_in_a_plain_list():
    assert [h.name for h in HEURISTICS] == ["changed_definition", "edited_op", "machinery_canary",
                                            "unsupported_op"]
    assert not any(h.trial_mode for h in HEURISTICS)


def test_changed_definition(universe):
    c = cand(universe, 0)  # softmax
    sig = Signals(changed_definitions={"softmax": ("cmi.py: OpInfo entry softmax changed",)})
    want = HeuristicResult(1.0, "changed test definition: cmi.py: OpInfo entry softmax changed")
    assert ChangedDefinition().score(c, sig) == want
    assert ChangedDefinition().score(c, Signals()) is None


def test_edited_op_score_falls_with_fanout(universe):
    c = cand(universe, 0)
    narrow = EditedOp().score(c, Signals(op_impacts={c.item.id: (OpImpact("f → aten::_softmax → 2 tests", 2),)}))
    wide = EditedOp().score(c, Signals(op_impacts={c.item.id: (OpImpact("f → aten::view → 400 tests", 400),)}))
    assert 0.6 <= wide.score < narrow.score <= 0.9
    assert narrow.reason == "impacted op: f → aten::_softmax → 2 tests" and not narrow.predicts_failure
    assert EditedOp().score(c, Signals()) is None


def test_machinery_canary(universe):
    c = cand(universe, 2)
    got = MachineryCanary().score(c, Signals(canaries={c.item.id: "upgrade: canary"}))
    assert got == HeuristicResult(0.5, "upgrade: canary")
    assert MachineryCanary().score(c, Signals()) is None


def test_unsupported_op(universe):
    c = cand(universe, 5)  # index_put
    got = UnsupportedOp().score(c, Signals(test_ops={c.item.id: ["aten::_index_put_impl_"]}))
    assert got is not None and got.score == 0.1 and "_index_put_impl_" in got.reason and got.predicts_failure
    assert UnsupportedOp().score(cand(universe, 2), Signals(test_ops={universe[2].id: ["aten::add"]})) is None


def test_classify_reads_the_prediction_not_the_heuristic_name(universe):
    """Any heuristic whose result predicts failure makes a mandatory_success test xfail; the
    classifier names no heuristic."""
    from selection.heuristics import Heuristic
    from selection.stage import SelectionState
    from selection.stages.classify import Classify

    class Refuses(Heuristic):
        name = "refuses_everything"

        def score(self, candidate, signals):
            return HeuristicResult(0.3, "refused: no kernel", predicts_failure=True)

    c = cand(universe, 2)
    assert c.mode == "mandatory_success"
    state = SelectionState(changeset=None, candidates=(c,), universe=1)  # type: ignore[arg-type]
    got = Classify([Refuses()]).classify(c, state, None)
    assert got.mode == "xfail" and "refused: no kernel" in got.reasons
    assert got.score == 0.0  # a prediction of failure does not rank the test


def test_a_score_outside_the_unit_interval_is_refused():
    with pytest.raises(ValueError):
        HeuristicResult(1.5, "too sure")
