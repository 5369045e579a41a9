"""Expansion: precedence rules (torch-spyre RFC 1287), ids, tolerances, determinism."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from test_specs.expand.universe import UPSTREAM_ISSUE, expand, spec_paths_default
from test_specs.format.precedence import DEFAULT_TOLERANCE, effective_dtypes, effective_mode, effective_tolerance
from test_specs.format.schema import Precision
from test_specs.values.items import Tolerance, make_item_id

OPS = {"float16", "bfloat16", "float32", "float64"}


def test_dtypes_intersection_then_include_then_exclude_last() -> None:
    kw = dict(op_restrict=None, include=set(), exclude=set())
    both = {"float16", "float32"}
    assert effective_dtypes(global_dtypes=both, op_dtypes=OPS, allowed=None, **kw) == ["float16", "float32"]
    assert effective_dtypes(global_dtypes=both, op_dtypes={"float32"}, allowed=None, **kw) == ["float32"]
    assert effective_dtypes(global_dtypes=both, op_dtypes=OPS, allowed={"float16"}, **kw) == ["float16"]
    assert effective_dtypes(global_dtypes=set(), op_dtypes=OPS, allowed=None, **kw) == sorted(OPS)  # no filter
    # include re-adds a dtype the global list lacks, exclude wins over include
    assert effective_dtypes(global_dtypes={"float16"}, op_dtypes=OPS, allowed=None, op_restrict=None,
                            include={"bfloat16"}, exclude=set()) == ["bfloat16", "float16"]
    assert effective_dtypes(global_dtypes={"float16"}, op_dtypes=OPS, allowed=None, op_restrict=None,
                            include={"bfloat16"}, exclude={"bfloat16", "float16"}) == []
    # include cannot add a dtype the op does not support (no samples exist)
    assert effective_dtypes(global_dtypes={"float16"}, op_dtypes={"float16"}, allowed=None, op_restrict=None,
                            include={"bfloat16"}, exclude=set()) == ["float16"]
    # supported_ops[].dtypes restricts
    assert effective_dtypes(global_dtypes={"float16", "float32"}, op_dtypes=OPS, allowed=None,
                            op_restrict={"float16"}, include=set(), exclude=set()) == ["float16"]


@pytest.mark.parametrize(("base", "forced", "want"), [
    ("mandatory_success", True, "xfail"),
    ("mandatory_success", False, "mandatory_success"),
    ("skip", True, "skip"),
    ("xfail_strict", True, "xfail_strict"),
    ("xfail", True, "xfail"),
])
def test_force_xfail_only_turns_mandatory_success(base: str, forced: bool, want: str) -> None:
    assert effective_mode(base, forced) == want


def test_tolerance_most_specific_first_field_by_field() -> None:
    assert effective_tolerance("float16") == DEFAULT_TOLERANCE["float16"]
    got = effective_tolerance("float16", Precision(atol=1e-4), None, Precision(atol=5e-1, rtol=3e-3))
    assert got == Tolerance(atol=1e-4, rtol=3e-3)
    assert effective_tolerance("int64") == Tolerance(atol=0.0, rtol=0.0)


SPEC = """\
test_suite_config:
  files:
    - source: op_db
      tests:
        - names: [TestCommon::test_compare_cpu]
          tags: [smoke]
          edits:
            ops:
              include: [{name: add, tags: [binary]}, {name: div}, {name: softmax}]
              exclude: [{name: div.trunc_rounding}]
            dtypes:
              include: [{name: bfloat16, precision: {atol: 0.5}}]
              exclude: [{name: float32}]
        - names: [TestCommon::test_compare_cpu]
          mode: skip
          reason: no kernel
          issue: "spyre-sim unsupported: aten::foo"
          edits:
            ops:
              include: [{name: div.trunc_rounding}]
  global:
    supported_dtypes: [float16, float32]
    supported_ops:
      - name: add
        force_xfail: true
        reason: add is broken today
        issue: "spyre-sim#1"
        dtypes: [{name: float16, precision: {atol: 1.0e-3, rtol: 2.0e-3}}, {name: bfloat16}]
      - {name: softmax.with_dtype, force_xfail: true}
      - {name: div.trunc_rounding, force_xfail: true}
"""


@pytest.fixture
def tiny_items(tmp_path: Path):
    p = tmp_path / "mini.yaml"
    p.write_text(SPEC)
    return {i.id: i for i in expand([p])}


def test_expansion_ids_modes_and_tolerances(tiny_items) -> None:
    T = "TestCommon::test_compare_cpu"
    want = {make_item_id("mini", T, s, d) for s in ("add", "div.no_rounding_mode", "div.floor_rounding",
                                                   "softmax", "softmax.with_dtype")
            for d in ("float16", "bfloat16")}
    # the second entry has no dtype edits: global float16 and float32
    want |= {make_item_id("mini", T, "div.trunc_rounding", d) for d in ("float16", "float32")}
    assert set(tiny_items) == want
    add16 = tiny_items["mini::TestCommon::test_compare_cpu[add-float16]"]
    assert add16.mode == "xfail" and add16.reason == "add is broken today" and add16.issue == "spyre-sim#1"
    assert add16.tolerance == Tolerance(atol=1e-3, rtol=2e-3)
    assert add16.tags == ["smoke", "binary"]
    assert add16.upstream == "test/test_ops.py::TestCommon::test_compare_cpu"
    # dtypes.include precision beats supported_ops precision; default rtol for bfloat16 stays
    assert tiny_items["mini::TestCommon::test_compare_cpu[add-bfloat16]"].tolerance == Tolerance(atol=0.5, rtol=5e-2)
    # force_xfail on a variant only; skip stays skip under force_xfail
    assert tiny_items["mini::TestCommon::test_compare_cpu[softmax.with_dtype-float16]"].mode == "xfail"
    assert tiny_items["mini::TestCommon::test_compare_cpu[softmax-float16]"].mode == "mandatory_success"
    trunc = tiny_items["mini::TestCommon::test_compare_cpu[div.trunc_rounding-float16]"]
    assert (trunc.mode, trunc.reason, trunc.issue) == ("skip", "no kernel", "spyre-sim unsupported: aten::foo")
    assert trunc.op == "div" and trunc.variant == "trunc_rounding" and trunc.subject == "div.trunc_rounding"


CORE = [p for p in spec_paths_default() if p.stem == "opinfo_core"]


def test_default_spec_expands_fast_and_deterministically() -> None:
    t0 = time.perf_counter()
    items = expand(CORE)
    assert time.perf_counter() - t0 < 10.0  # op_db already imported by earlier tests or here
    assert [i.id for i in items] == sorted(i.id for i in items)
    assert [i.model_dump() for i in expand(CORE)] == [i.model_dump() for i in items]
    assert len(items) == 100
    assert all(i.suite == "opinfo_core" and i.dtype in ("float16", "float32") for i in items)
    for i in items:
        if i.mode != "mandatory_success":  # the spec's own reasons, or the OpInfo's upstream skip
            assert i.reason and i.issue and ("aten::" in i.issue or i.issue == UPSTREAM_ISSUE), i.id
    upstream = {i.id for i in items if i.issue == UPSTREAM_ISSUE}
    assert upstream == {f"opinfo_core::TestCommon::test_compare_cpu[{s}-{d}]"
                        for s in ("bmm.triton_optimized", "nn.functional.embedding") for d in ("float16", "float32")}
    ids = {i.id for i in items}
    assert "opinfo_core::TestCommon::test_compare_cpu[nn.functional.relu-float16]" in ids
    assert "opinfo_core::TestCommon::test_compare_cpu[nn.functional.silu.complex-float16]" not in ids


def test_default_spec_unsupported_reasons_agree_with_the_device_table() -> None:
    """Every ``spyre-sim unsupported: aten::X`` in the spec is unsupported in spyre_backend's table."""
    import re

    support = pytest.importorskip("spyre_backend.support")
    checked = 0
    for it in expand(CORE):
        if it.issue and it.issue.startswith("spyre-sim unsupported:"):
            aten = re.search(r"aten::[\w.]+", it.issue).group(0)
            dtype = "float64" if "float64" in it.issue else it.dtype
            assert support.unsupported_reason(aten, dtype) is not None, (it.id, aten, dtype)
            checked += 1
    assert checked >= 6


MODULE_SPEC = """\
test_suite_config:
  files:
    - source: module_db
      tests:
        - names: [TestModule::test_forward, TestModule::test_cpu_gpu_parity]
          edits:
            modules:
              include: [{name: nn.Linear}, {name: nn.ReLU}]
            dtypes:
              include: [{name: float16}]
    - source: op_db
      unlisted_test_mode: skip
      tests:
        - names: [TestCommon::test_out, TestCommon::test_noncontiguous_samples]
          edits:
            ops:
              include: [{name: softmax, exact: true}, {name: transpose}]
  global:
    supported_dtypes: [float16, float32]
    input_config: {max_samples: 3}
"""


def test_module_db_source_exact_names_applies_and_sample_cap(tmp_path: Path) -> None:
    p = tmp_path / "mods.yaml"
    p.write_text(MODULE_SPEC)
    items = {i.id: i for i in expand([p])}
    lin = items["mods::TestModule::test_forward[nn.Linear-float16]"]  # float16 added by include
    assert lin.module == "nn.Linear" and lin.op is None and lin.subject == "nn.Linear"
    assert lin.upstream == "test/test_modules.py::TestModule::test_forward" and lin.max_samples == 3
    assert "mods::TestModule::test_cpu_gpu_parity[nn.ReLU-float32]" in items
    assert not any("float64" in i for i in items)  # ModuleInfo lists float64; global does not
    # exact: softmax without its with_dtype variant; test_out only where supports_out
    assert "mods::TestCommon::test_out[softmax-float16]" in items
    assert not any("softmax.with_dtype" in i for i in items)
    assert not any("test_out[transpose" in i for i in items)
    assert "mods::TestCommon::test_noncontiguous_samples[transpose-float32]" in items
    # compare_cpu is the one built-in op template: unlisted here, so skip for both ops
    assert items["mods::TestCommon::test_compare_cpu[transpose-float16]"].mode == "skip"
    assert len(items) == 2 * 2 * 2 + 2 + 2 + 2 + 4  # modules x templates x dtypes + softmax + transpose + compare_cpu


def test_semantic_errors_for_modules(tmp_path: Path) -> None:
    from test_specs.authoring.check import check_specs

    p = tmp_path / "bad.yaml"
    p.write_text(MODULE_SPEC.replace("nn.ReLU", "nn.NoSuchModule")
                 .replace("TestCommon::test_out,", "TestModule::test_forward,"))
    msgs = [e.message for e in check_specs([p])]
    assert any("unknown module 'nn.NoSuchModule'" in m for m in msgs)
    assert any("unknown op template 'TestModule::test_forward'" in m for m in msgs)


@pytest.mark.slow
def test_default_specs_cover_op_db_and_module_db_with_8000_items() -> None:
    import collections

    items = expand()
    assert len(items) >= 8000
    by_suite = collections.Counter(i.suite for i in items)
    assert by_suite["opinfo_core"] == 100 and by_suite["modules"] > 1000 and by_suite["opinfo_all"] > 6000
    for i in items:
        if i.mode != "mandatory_success":
            assert i.reason and i.issue, i.id
