"""Each heuristic on its own: score, reason, and no opinion without its signal."""

from __future__ import annotations

from selection.heuristics import HEURISTICS, ChangedDefinition, EditedOp, MachineryCanary, UnsupportedOp
from selection.stage import Candidate, Signals


def cand(universe, n):
    return Candidate(universe[n], universe[n].mode)


def test_registered_in_a_plain_list():
    assert [h.name for h in HEURISTICS] == ["changed_definition", "edited_op", "machinery_canary",
                                            "unsupported_op"]
    assert not any(h.trial_mode for h in HEURISTICS)


def test_changed_definition(universe):
    c = cand(universe, 0)  # softmax
    sig = Signals(changed_definitions={"softmax": ("cmi.py: OpInfo entry softmax changed",)})
    assert ChangedDefinition().score(c, sig) == (1.0, "changed test definition: cmi.py: OpInfo entry softmax changed")
    assert ChangedDefinition().score(c, Signals()) is None


def test_edited_op_score_falls_with_fanout(universe):
    c = cand(universe, 0)
    narrow = EditedOp().score(c, Signals(op_impacts={c.item.id: ("f → aten::_softmax → 2 tests",)}))
    wide = EditedOp().score(c, Signals(op_impacts={c.item.id: ("f → aten::view → 400 tests",)}))
    assert 0.6 <= wide[0] < narrow[0] <= 0.9
    assert EditedOp().score(c, Signals()) is None


def test_machinery_canary(universe):
    c = cand(universe, 2)
    assert MachineryCanary().score(c, Signals(canaries={c.item.id: "upgrade: canary"})) == (0.5, "upgrade: canary")
    assert MachineryCanary().score(c, Signals()) is None


def test_unsupported_op(universe):
    c = cand(universe, 5)  # index_put
    got = UnsupportedOp().score(c, Signals(test_ops={c.item.id: ["aten::_index_put_impl_"]}))
    assert got is not None and got[0] == 0.1 and "_index_put_impl_" in got[1]
    assert UnsupportedOp().score(cand(universe, 2), Signals(test_ops={universe[2].id: ["aten::add"]})) is None
