"""Op and module templates, in process: each passes on the CPU and on spyre for a healthy subject."""

from __future__ import annotations

import pytest
import torch

from test_specs.expand.universe import module_db, op_db
from test_specs.format.precedence import DEFAULT_TOLERANCE
from test_specs.templates.kit import TemplateFailure, capped, fast_sample_inputs, sample_cap
from test_specs.templates.registry import TEMPLATES

OP_TEMPLATES = ["TestCommon::test_compare_cpu", "TestCommon::test_noncontiguous_samples", "TestCommon::test_out",
                "TestCommon::test_variant_consistency_eager", "TestCommon::test_numpy_ref"]
MODULE_TEMPLATES = ["TestModule::test_forward", "TestModule::test_cpu_gpu_parity",
                    "TestModule::test_non_contiguous_tensors", "TestModule::test_multiple_device_transfer"]


_SPYRE_REJECTS = {"TestCommon::test_noncontiguous_samples": "capability stick_layout",
                  "TestCommon::test_variant_consistency_eager": "capability in_device_copy"}


def _op(name: str):
    return next(o for o in op_db() if o.name == name and not o.variant_test_name)


def _module(name: str):
    return next(m for m in module_db() if m.name == name)


@pytest.mark.parametrize("device", ["cpu", "spyre"])
@pytest.mark.parametrize("template", OP_TEMPLATES)
def test_op_templates_pass_for_a_healthy_op(template: str, device: str) -> None:
    if device == "spyre":
        pytest.importorskip("spyre_backend")
    op = _op("exp" if template.endswith("numpy_ref") else "mul")  # mul has no NumPy ref
    assert TEMPLATES[template].applies is None or TEMPLATES[template].applies(op)
    with sample_cap(2), fast_sample_inputs():
        if device == "spyre" and template in _SPYRE_REJECTS:
            # what real Spyre rejects (spyre_backend/capabilities.yaml): non-contiguous kernel inputs,
            # the device-side clone the in-place variant runs on
            with pytest.raises(Exception, match=_SPYRE_REJECTS[template]):
                TEMPLATES[template].fn(op, torch.float16, device, DEFAULT_TOLERANCE["float16"])
            return
        TEMPLATES[template].fn(op, torch.float16, device, DEFAULT_TOLERANCE["float16"])


@pytest.mark.parametrize("device", ["cpu", "spyre"])
@pytest.mark.parametrize("template", MODULE_TEMPLATES)
def test_module_templates_pass_for_linear(template: str, device: str) -> None:
    if device == "spyre":
        pytest.importorskip("spyre_backend")
    with sample_cap(2):
        TEMPLATES[template].fn(_module("nn.Linear"), torch.float16, device, DEFAULT_TOLERANCE["float16"])


def test_module_backward_detects_a_wrong_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device whose Linear backward is off by a factor is caught (checked on 'cpu' by patching)."""
    from test_specs.templates import modules as module_templates

    real = module_templates._run
    calls = {"n": 0}

    def skewed(m, fwd, backward):
        out, grads = real(m, fwd, backward)
        calls["n"] += 1
        return (out, [g * 2 if g is not None else None for g in grads]) if calls["n"] % 2 == 0 else (out, grads)

    monkeypatch.setattr(module_templates, "_run", skewed)
    with sample_cap(1), pytest.raises(TemplateFailure, match="gradients differ from CPU"):
        TEMPLATES["TestModule::test_cpu_gpu_parity"].fn(_module("nn.Linear"), torch.float32, "cpu",
                                                        DEFAULT_TOLERANCE["float32"])


def test_sample_cap_limits_and_restores() -> None:
    with sample_cap(2):
        assert list(capped(iter(range(10)))) == [0, 1]
    assert list(capped(range(4))) == [0, 1, 2, 3]
    out = TEMPLATES["TestCommon::test_out"]
    assert out.applies(_op("add")) and not out.applies(_op("transpose"))
