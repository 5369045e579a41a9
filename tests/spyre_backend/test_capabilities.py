"""Capability rules of the simulated Spyre (spyre_backend/capabilities.yaml): what they reject,
what they leave alone, and where each rule comes from."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import spyre_backend
from spyre_backend import capabilities

SOURCES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "torch-spyre-configs" / "SOURCES.md"


def _dev(*shape, dtype=torch.float16):
    return torch.arange(int(torch.tensor(shape).prod()), dtype=dtype).reshape(shape).to("spyre")


def test_in_device_copies_are_rejected_naming_op_dtype_rule_and_source():
    x = _dev(4, 4)
    with pytest.raises(spyre_backend.SpyreCompileError) as info:
        x.clone()
    msg = str(info.value)
    assert "In-device copy not implemented" in msg and "(float16)" in msg and "aten::" in msg
    assert "capability in_device_copy" in msg and "upstream_tests/test_view_ops_config.yaml" in msg
    assert isinstance(info.value, RuntimeError) and info.value.aten_op.startswith("aten::")
    for write in (lambda: x.view(16).__setitem__(3, 0), lambda: x.t().contiguous(), lambda: x.float()):
        with pytest.raises(spyre_backend.SpyreCompileError, match="In-device copy"):
            write()


def test_host_device_copies_and_contiguous_self_still_work():
    x = _dev(2, 3)
    assert x.contiguous() is x
    assert torch.equal(x.cpu(), torch.arange(6, dtype=torch.float16).reshape(2, 3))
    assert torch.equal(x.t().cpu(), x.cpu().t())  # a strided view copies to the host
    y = torch.zeros(2, 3, dtype=torch.float16, device="spyre")
    y.copy_(torch.ones(2, 3, dtype=torch.float16))  # host -> device
    assert y.cpu().sum().item() == 6


def test_elementwise_kernels_need_contiguous_inputs():
    x = _dev(3, 5)
    assert torch.equal((x + 1).cpu(), x.cpu() + 1)
    for call in (lambda: x.t() + 1, lambda: x[:, ::2].abs(), lambda: torch.eq(x.t(), x.t()),
                 lambda: x[:1].expand(3, 5).neg()):
        with pytest.raises(spyre_backend.SpyreCompileError, match="capability stick_layout"):
            call()
    # matmul takes a transposed operand (nn.Linear's weight.t()); a 1-element view is contiguous enough
    assert (x @ x.t()).shape == (3, 3)
    assert x[1:2, 2:3].t().abs().cpu().item() == 7


def test_layout_rules_do_not_apply_inside_backward_or_compiled_graphs():
    w = torch.ones(3, dtype=torch.float16).to("spyre").requires_grad_()
    (w * 2).sum().backward()  # sum's gradient is an expanded (stride 0) tensor
    assert w.grad.cpu().tolist() == [2.0, 2.0, 2.0]
    x = _dev(2, 2)
    with capabilities.compiled_graph():
        assert (x.t() + 0).clone().cpu().tolist() == [[0.0, 2.0], [1.0, 3.0]]


def test_missing_kernels_raise_not_implemented_before_unstructured_argument_checks():
    x = _dev(2, 2)
    with pytest.raises(NotImplementedError, match="aten::flip has no Spyre kernel"):
        x.flip(0)
    with pytest.raises(NotImplementedError):
        x.flip(0, 1, 1)  # flip's dim check lives in the CPU kernel: Spyre's missing kernel wins
    with pytest.raises(NotImplementedError, match="hardsigmoid"):
        torch.nn.functional.hardsigmoid(x)


def test_structured_ops_raise_torchs_error_first():
    t = torch.tensor([float("inf"), 1.0]).to("spyre")
    out = torch.empty(2, dtype=torch.float16, device="spyre")
    with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
        torch.isposinf(t, out=out)


def test_group_selection_keeps_only_rules_derived_from_those_groups():
    every = {r.id for r in capabilities.rules(None)}
    assert {"in_device_copy", "stick_layout", "missing_kernels", "missing_activation_kernels"} <= every
    ut = {r.id for r in capabilities.rules(frozenset({"upstream_tests"}))}
    assert "missing_activation_kernels" not in ut and "missing_kernels" not in ut
    assert {"in_device_copy", "stick_layout", "missing_unfold_kernel"} <= ut
    assert capabilities.rules(frozenset()) == ()
    assert capabilities.active_groups("") is None and capabilities.active_groups("none") == frozenset()
    assert capabilities.active_groups(" upstream_tests ,upstream_tests_beta") == {"upstream_tests",
                                                                                  "upstream_tests_beta"}


def test_every_rule_cites_a_real_torch_spyre_config():
    if not SOURCES.exists():
        pytest.skip(f"shared fixtures absent: {SOURCES}")
    listed = SOURCES.read_text(encoding="utf-8")
    for rule in capabilities.rules(None):
        assert rule.sources, rule.id
        for group, config, says in rule.sources:
            assert config.startswith(group + "/") and says.strip()
            assert f"tests/configs/{config}" in listed, (rule.id, config)


def test_a_group_name_that_is_not_a_config_group_is_refused_not_read_as_no_rule() -> None:
    assert capabilities.active_groups("") is None  # every rule
    assert capabilities.active_groups("NONE") == frozenset()  # no rule
    assert capabilities.active_groups("upstream_tests") == frozenset({"upstream_tests"})
    for bad in ("bogus", "upstream_test", "none,upstream_tests"):
        with pytest.raises(ValueError, match="unknown config group"):
            capabilities.active_groups(bad)
