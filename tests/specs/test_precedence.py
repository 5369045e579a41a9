"""The spec precedence rules (``test_specs.format.precedence``; torch-spyre RFC 1287), each step
on its own: dtypes = global ∩ op ∩ template ∩ op restriction, ∪ include (the op's own dtypes
only), − exclude last; ``force_xfail`` only turns ``mandatory_success`` into ``xfail``; the most
specific tolerance wins field by field."""

from __future__ import annotations

import pytest
import torch

from test_specs.format.precedence import (
    DEFAULT_TOLERANCE,
    EXACT,
    dtype_names,
    effective_dtypes,
    effective_mode,
    effective_tolerance,
)
from test_specs.format.schema import Precision
from test_specs.values.items import Tolerance

OP = {"float16", "float32", "bfloat16", "int64"}


def dtypes(*, global_dtypes=frozenset(), allowed=None, op_restrict=None, include=frozenset(), exclude=frozenset()):
    return effective_dtypes(global_dtypes=set(global_dtypes), op_dtypes=OP, allowed=allowed,
                            op_restrict=op_restrict, include=set(include), exclude=set(exclude))


def test_each_dtype_step() -> None:
    assert dtypes() == ["bfloat16", "float16", "float32", "int64"]  # no global list: the op's own
    assert dtypes(global_dtypes={"float16", "float64"}) == ["float16"]
    assert dtypes(allowed={"float32", "int64"}) == ["float32", "int64"]
    assert dtypes(allowed=set()) == []  # a template that allows nothing
    assert dtypes(op_restrict={"bfloat16"}) == ["bfloat16"]
    assert dtypes(op_restrict=set()) == ["bfloat16", "float16", "float32", "int64"]  # none listed: no restriction
    assert dtypes(global_dtypes={"float16"}, include={"int64", "float64"}) == ["float16", "int64"]
    assert dtypes(include={"float16"}, exclude={"float16"}) == ["bfloat16", "float32", "int64"]  # exclude last


@pytest.mark.parametrize(("base", "force", "mode"), [
    ("mandatory_success", True, "xfail"), ("mandatory_success", False, "mandatory_success"),
    ("skip", True, "skip"), ("xfail_strict", True, "xfail_strict"), ("xfail", False, "xfail")])
def test_force_xfail_turns_only_mandatory_success_into_xfail(base, force, mode) -> None:
    assert effective_mode(base, force) == mode


def test_the_most_specific_tolerance_wins_field_by_field() -> None:
    test, op = Precision(atol=0.5), Precision(atol=0.1, rtol=0.2)
    assert effective_tolerance("float16", test, op) == Tolerance(atol=0.5, rtol=0.2)
    assert effective_tolerance("float16", None, Precision(rtol=0.3)) == Tolerance(atol=1e-2, rtol=0.3)
    assert effective_tolerance("bfloat16") == DEFAULT_TOLERANCE["bfloat16"] == Tolerance(atol=5e-2, rtol=5e-2)
    assert effective_tolerance("int64", Precision()) == EXACT == Tolerance(atol=0.0, rtol=0.0)


def test_dtype_names_are_torchs_without_the_prefix() -> None:
    assert dtype_names([torch.float16, "torch.int64", "bool"]) == {"float16", "int64", "bool"}
