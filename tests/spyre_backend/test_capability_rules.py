"""The capability check itself (``spyre_backend.capabilities.check``) on hand-made calls: which
copies are in-device, which kernel inputs break the stick layout, which rules apply to an
overload, and the words and fields of each error."""

from __future__ import annotations

import pytest
import torch

import spyre_backend
from spyre_backend import capabilities

aten = torch.ops.aten


def dev(*shape):
    return torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float16).reshape(shape).to("spyre")


def host(*shape):
    return torch.zeros(shape, dtype=torch.float16)


def check(op, full, args, kwargs=None):
    capabilities.check(op, full, capabilities.rules_for(full, None), args, kwargs or {})


COPY_RULE = "[capability in_device_copy; from torch-spyre tests/configs/upstream_tests/test_view_ops_config.yaml]"


@pytest.mark.parametrize(("op", "full", "args", "kwargs", "in_device"), [
    (aten.clone.default, "aten::clone.default", lambda: (dev(2),), {}, True),
    (aten.clone.default, "aten::clone.default", lambda: (host(2),), {}, False),
    (aten.copy_.default, "aten::copy_.default", lambda: (dev(2), dev(2)), {}, True),
    (aten.copy_.default, "aten::copy_.default", lambda: (dev(2), host(2)), {}, False),
    (aten.copy_.default, "aten::copy_.default", lambda: (host(2), dev(2)), {}, False),
    (aten._copy_from.default, "aten::_copy_from.default", lambda: (dev(2), dev(2)), {}, True),
    (aten._to_copy.default, "aten::_to_copy.default", lambda: (dev(2),), {}, True),
    (aten._to_copy.default, "aten::_to_copy.default", lambda: (dev(2),), {"device": "spyre"}, True),
    (aten._to_copy.default, "aten::_to_copy.default", lambda: (dev(2),), {"device": torch.device("cpu")}, False),
    (aten._to_copy.default, "aten::_to_copy.default", lambda: (host(2),), {"device": "spyre"}, False),
])
def test_a_copy_is_refused_only_from_the_device_to_the_device(op, full, args, kwargs, in_device) -> None:
    if not in_device:
        check(op, full, args(), kwargs)
        return
    with pytest.raises(spyre_backend.SpyreCompileError) as err:
        check(op, full, args(), kwargs)
    assert str(err.value) == f"spyre: {full} (float16): Error: In-device copy not implemented {COPY_RULE}"
    assert err.value.aten_op == full and err.value.reason == f"Error: In-device copy not implemented {COPY_RULE}"


def test_a_copy_out_of_a_negative_view_resolves_the_bit_and_is_allowed() -> None:
    x = dev(3)
    check(aten._to_copy.default, "aten::_to_copy.default", (torch._neg_view(x),), {})


def test_kernel_inputs_must_be_contiguous_from_two_elements_on() -> None:
    two = dev(2, 2)[:, 0]  # 2 elements, stride 2
    assert not two.is_contiguous()
    with pytest.raises(spyre_backend.SpyreCompileError) as err:
        check(aten.add.Tensor, "aten::add.Tensor", (two, two))
    msg = str(err.value)
    assert msg.startswith("spyre: aten::add.Tensor (float16): ") and "capability stick_layout" in msg
    check(aten.add.Tensor, "aten::add.Tensor", (dev(2, 2), dev(2, 2)))
    check(aten.add.Tensor, "aten::add.Tensor", (host(2, 2)[:, 0], host(2, 2)[:, 0]))  # host tensors: no rule


def test_rules_apply_by_overload_by_packet_and_by_category() -> None:
    ids = lambda full, cat=None: {r.id for r in capabilities.rules_for(full, cat)}  # noqa: E731
    assert "stick_layout" in ids("aten::add.Tensor") and "stick_layout" in ids("aten::add")
    assert "in_device_copy" in ids("aten::copy_.default") and "in_device_copy" not in ids("aten::add.Tensor")
    assert ids("aten::flip.default") >= {"missing_kernels"} and ids("aten::not_an_op.x") == set()


def test_a_missing_kernel_names_the_overload_and_the_dtype_of_the_first_device_tensor() -> None:
    with pytest.raises(spyre_backend.SpyreUnsupportedOpError) as err:
        check(aten.flip.default, "aten::flip.default", (dev(3), [0]))
    msg = str(err.value)
    assert msg.startswith("spyre: aten::flip.default (float16) is not supported on Spyre: aten::flip.default ")
    assert err.value.aten_op == "aten::flip.default" and "capability missing_kernels" in err.value.reason
    with pytest.raises(spyre_backend.SpyreUnsupportedOpError) as err:
        check(aten.flip.default, "aten::flip.default", (host(3), [0]))  # no device tensor: no dtype
    assert str(err.value).startswith("spyre: aten::flip.default is not supported on Spyre: ")


def test_the_first_rule_the_call_breaks_is_raised_even_after_one_it_keeps() -> None:
    kept, broken = capabilities.rules_for("aten::copy_.default", None)[0], capabilities.rules_for("aten::flip", None)
    assert kept.id == "in_device_copy"
    with pytest.raises(spyre_backend.SpyreUnsupportedOpError):
        capabilities.check(aten.flip.default, "aten::flip.default", (kept, *broken), (dev(3), [0]), {})


def test_the_environment_names_the_groups(monkeypatch) -> None:
    monkeypatch.setenv("SPYRE_SIM_CAPABILITY_GROUPS", "none")
    assert capabilities.active_groups() == frozenset()
    with pytest.raises(ValueError) as err:
        capabilities.active_groups("bogus, other")
    assert str(err.value).startswith(
        "SPYRE_SIM_CAPABILITY_GROUPS='bogus, other': unknown config group(s) bogus, other; known: ")
    assert ", or 'none' alone for no rule" in str(err.value) and "upstream_tests, " in str(err.value)
