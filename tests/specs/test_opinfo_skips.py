"""An OpInfo's own DecorateInfo skips / expectedFailures turn spec items into skip / xfail."""

from __future__ import annotations

import unittest
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch.testing._internal.common_device_type import onlyCUDA
from torch.testing._internal.common_device_type import skipIf as device_skip_if
from torch.testing._internal.opinfo.core import DecorateInfo

from test_specs.expand import universe as expand_mod
from test_specs.expand.opinfo_skips import split_upstream, upstream_mark
from test_specs.expand.universe import UPSTREAM_ISSUE, expand

NC = "test/test_ops.py::TestCommon::test_noncontiguous_samples"
OUT = "test/test_ops.py::TestCommon::test_out"
CMP = "test/test_ops.py::TestCommon::test_compare_cpu"
VAR = "test/test_ops.py::TestCommon::test_variant_consistency_eager"


def fake_op(*decorators, name: str = "fakeop", variant: str = "") -> SimpleNamespace:
    return SimpleNamespace(name=name, variant_test_name=variant, decorators=tuple(decorators))


FAKE = fake_op(
    DecorateInfo(unittest.skip("uninitialised"), "TestCommon", "test_noncontiguous_samples", dtypes=(torch.float32,)),
    DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out"),
    DecorateInfo(unittest.skip("cuda only trouble"), "TestCommon", "test_compare_cpu", device_type="cuda"),
    DecorateInfo(unittest.skip("never active"), "TestCommon", "test_variant_consistency_eager", active_if=False),
    DecorateInfo(unittest.skip("another class"), "TestJit", "test_out"),
)


def test_skip_matches_class_test_and_dtype() -> None:
    m = upstream_mark(FAKE, NC, "float32")
    assert m is not None and m.mode == "skip"
    assert m.reason == "OpInfo 'fakeop' skips TestCommon.test_noncontiguous_samples upstream: uninitialised"
    assert upstream_mark(FAKE, NC, "float16") is None  # dtypes=(float32,) only


def test_expected_failure_becomes_xfail() -> None:
    m = upstream_mark(FAKE, OUT, "bfloat16")
    assert m is not None and m.mode == "xfail"
    assert m.reason == "OpInfo 'fakeop' expects TestCommon.test_out to fail upstream (unittest.expectedFailure)"


def test_other_device_type_and_inactive_do_not_apply() -> None:
    assert upstream_mark(FAKE, CMP, "float32") is None  # device_type="cuda"
    assert upstream_mark(FAKE, VAR, "float32") is None  # active_if=False


@pytest.mark.parametrize("device_type", ["privateuse1", "spyre"])
def test_our_device_names_match(device_type: str) -> None:
    op = fake_op(DecorateInfo(unittest.skip("ours"), "TestCommon", "test_out", device_type=device_type),
                 name="x", variant="v")
    m = upstream_mark(op, OUT, "float16")
    assert m is not None and m.reason == "OpInfo 'x.v' skips TestCommon.test_out upstream: ours"


def test_callable_active_if_gets_param_kwargs_and_skip_beats_xfail() -> None:
    op = fake_op(
        DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out"),
        DecorateInfo(unittest.skip("half only"), "TestCommon", "test_out",
                     active_if=lambda kw: kw["dtype"] == torch.float16),
    )
    assert upstream_mark(op, OUT, "float16").mode == "skip"
    assert upstream_mark(op, OUT, "float32").mode == "xfail"


def test_device_decorators_and_bare_decorators() -> None:
    op = fake_op(
        onlyCUDA,  # bare: applies to every test of the op
        DecorateInfo(device_skip_if(True, "dep true", device_type="cpu"), "TestCommon", "test_out"),
        DecorateInfo(unittest.skipIf(False, "not taken"), "TestCommon", "test_out"),
    )
    assert upstream_mark(op, CMP, "float32").reason.endswith("Only runs on cuda")
    assert upstream_mark(fake_op(*op.decorators[1:]), OUT, "float32") is None  # cpu-only skipIf; skipIf(False)
    hit = fake_op(DecorateInfo(device_skip_if(True, "no kernel here"), "TestCommon", "test_out"))
    assert upstream_mark(hit, OUT, "float32").reason.endswith("upstream: no kernel here")


def test_split_upstream() -> None:
    assert split_upstream(OUT) == ("TestCommon", "test_out")
    assert split_upstream("test/test_x.py::test_plain") is None


SPEC = """\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: mandatory_success
      tests:
        - names: [TestCommon::test_noncontiguous_samples]
          edits: {ops: {include: [{name: fakeop}]}}
        - names: [TestCommon::test_out]
          mode: xfail_strict
          reason: measured on the device
          issue: "spyre-sim measured: x"
          edits: {ops: {include: [{name: fakeop}]}}
        - names: [TestCommon::test_variant_consistency_eager]
          upstream_skips: false
          edits: {ops: {include: [{name: fakeop}]}}
  global:
    supported_dtypes: [float16, float32]
    supported_ops: [{name: fakeop, force_xfail: true, reason: forced}]
"""


def test_precedence_in_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream skip beats force_xfail; an explicit spec mode wins; ``upstream_skips: false`` opts out;
    unlisted (built-in) items get the upstream mark too."""
    op = fake_op(*FAKE.decorators[:2],
                 DecorateInfo(unittest.skip("cmp skipped"), "TestCommon", "test_compare_cpu"),
                 DecorateInfo(unittest.skip("opted out"), "TestCommon", "test_variant_consistency_eager"))
    op.supported_dtypes = lambda device: {torch.float16, torch.float32}
    op.supports_out, op.method_variant, op.inplace_variant = True, object(), None
    monkeypatch.setattr(expand_mod, "op_db", lambda: (op,))
    expand_mod._index.cache_clear()
    try:
        p = tmp_path / "fake.yaml"
        p.write_text(SPEC)
        items = {i.id: i for i in expand([p])}
    finally:
        expand_mod._index.cache_clear()
    nc32 = items["fake::TestCommon::test_noncontiguous_samples[fakeop-float32]"]
    assert (nc32.mode, nc32.issue) == ("skip", UPSTREAM_ISSUE) and "uninitialised" in nc32.reason
    nc16 = items["fake::TestCommon::test_noncontiguous_samples[fakeop-float16]"]
    assert (nc16.mode, nc16.reason) == ("xfail", "forced")  # no upstream skip at float16: force_xfail
    out = items["fake::TestCommon::test_out[fakeop-float32]"]
    assert (out.mode, out.reason) == ("xfail_strict", "measured on the device")
    var = items["fake::TestCommon::test_variant_consistency_eager[fakeop-float32]"]
    assert (var.mode, var.reason) == ("xfail", "forced")  # upstream skip ignored, force_xfail still applies
    cmp = items["fake::TestCommon::test_compare_cpu[fakeop-float16]"]  # unlisted: unlisted_test_mode
    assert cmp.mode == "skip" and cmp.reason.endswith("upstream: cmp skipped")


def test_real_empty_opinfo_items_are_skipped_with_the_upstream_reason(tmp_path: Path) -> None:
    """The failures seen in a user's run: ``empty`` returns uninitialised memory and upstream skips."""
    empty = next(o for o in expand_mod.op_db() if o.name == "empty" and not o.variant_test_name)
    assert upstream_mark(empty, NC, "float32").reason == \
        "OpInfo 'empty' skips TestCommon.test_noncontiguous_samples upstream: Skipped!"
    p = tmp_path / "emp.yaml"
    p.write_text("""\
test_suite_config:
  files:
    - source: op_db
      unlisted_test_mode: skip
      tests:
        - names: [TestCommon::test_noncontiguous_samples, TestCommon::test_out]
          edits: {ops: {include: [{name: empty, exact: true}]}}
  global:
    supported_dtypes: [bfloat16, float32]
""")
    items = {i.id: i for i in expand([p])}
    for d in ("bfloat16", "float32"):
        nc = items[f"emp::TestCommon::test_noncontiguous_samples[empty-{d}]"]
        out = items[f"emp::TestCommon::test_out[empty-{d}]"]
        assert nc.mode == "skip" and \
            nc.reason == "OpInfo 'empty' skips TestCommon.test_noncontiguous_samples upstream: Skipped!"
        assert out.mode == "skip" and out.reason == \
            "OpInfo 'empty' skips TestCommon.test_out upstream: Expected: empty is not comparable"
        assert nc.issue == UPSTREAM_ISSUE


def test_default_spec_empty_items_from_the_user_report_are_not_mandatory() -> None:
    items = {i.id: i for i in expand([p for p in expand_mod.spec_paths_default() if p.stem == "opinfo_all"])}
    for iid in ("opinfo_all::TestCommon::test_noncontiguous_samples[empty-float32]",
                "opinfo_all::TestCommon::test_out[empty-bfloat16]"):
        assert items[iid].mode == "skip" and "upstream" in items[iid].reason, iid
