"""Shared-machinery canaries (issue 13): one item per (family, template, dtype) pair, the
family's ops taking turns over the pairs, so the same count of canaries covers more ops."""

from __future__ import annotations

from selection.policy.canary import FAMILIES, family_canaries
from selection.stage import Candidate
from tests.selection.conftest import item

DTYPES = ("bfloat16", "float16", "float32")


def _cands(ops, dtypes=DTYPES):
    return [Candidate(item(op, dtype), "mandatory_success") for op in ops for dtype in dtypes]


def test_the_family_ops_take_turns_over_the_pairs() -> None:
    picked = family_canaries(_cands(["abs", "neg", "exp", "add", "mul"]), universe=1000)
    unary = [(c.item.op, c.item.dtype) for c in picked["pointwise unary"]]
    assert unary == [("abs", "bfloat16"), ("neg", "float16"), ("exp", "float32")]
    assert [c.item.op for c in picked["pointwise binary"]] == ["add", "mul", "add"]
    assert len(picked["pointwise unary"]) == len(DTYPES)  # one per pair: the count did not grow


def test_an_op_absent_for_a_pair_passes_its_turn_on() -> None:
    cands = _cands(["abs"], ("bfloat16", "float16")) + _cands(["exp"], ("float32",)) + _cands(["sqrt"])
    got = [(c.item.op, c.item.dtype) for c in family_canaries(cands, universe=1000)["pointwise unary"]]
    assert got == [("abs", "bfloat16"), ("sqrt", "float16"), ("exp", "float32")]
    assert FAMILIES["pointwise unary"][:4] == ("abs", "neg", "exp", "sqrt")


def test_deterministic_in_any_order() -> None:
    cands = _cands(["abs", "neg", "exp", "sum", "mean", "cat", "view"])
    a = family_canaries(cands, universe=1000)
    b = family_canaries(list(reversed(cands)), universe=1000)
    assert {k: [c.item.id for c in v] for k, v in a.items()} == {k: [c.item.id for c in v] for k, v in b.items()}
