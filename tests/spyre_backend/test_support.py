"""The op support table and how the device enforces it."""

from __future__ import annotations

import pytest
import torch

from spyre_backend import support
from spyre_backend.errors import SpyreDtypeError, SpyreUnsupportedOpError


def test_public_api_shape():
    # int64 and bool: torch-spyre's configs list them in global.supported_dtypes
    assert support.SUPPORTED_DTYPES == ("float16", "bfloat16", "float32", "int64", "bool")
    assert support.unsupported_reason("aten::add", "int64") is None
    assert "does not support int64" in support.unsupported_reason("aten::exp", "int64")
    row = support.lookup("aten::add")
    assert row is not None and row.supported and row.name == "aten::add"
    assert "float16" in row.dtypes and row.reason is None
    assert support.lookup("aten::add.Tensor") is row
    assert support.lookup("add") is row
    assert support.lookup("aten::no_such_op") is None
    assert support.lookup("aten::pow").adapter == "pow_integral"
    names = [r.name for r in support.all_ops()]
    assert names == sorted(names) and len(names) == len(set(names))


def test_unsupported_reason():
    assert support.unsupported_reason("aten::add", "float16") is None
    assert support.unsupported_reason("aten::add") is None
    assert support.unsupported_reason("aten::_index_put_impl_") == "aten::_index_put_impl_ has no Spyre kernel"
    assert "float64" in support.unsupported_reason("aten::add", "float64")
    assert "not in the Spyre op support table" in support.unsupported_reason("aten::fft_fft")
    # overload-specific denial, packet allowed
    assert support.unsupported_reason("aten::index.Tensor_out") is not None
    row = support.lookup("aten::random_")
    assert row is not None and not row.supported and row.reason


def test_infrastructure_ops_are_supported():
    for op in ("empty", "empty_strided", "_to_copy", "copy_", "view", "as_strided", "_reshape_alias", "fill_"):
        assert support.unsupported_reason(f"aten::{op}", "float16") is None, op
        assert support.unsupported_reason(f"aten::{op}", "int64") is None, op


def test_every_table_entry_names_a_real_aten_op():
    for row in support.all_ops():
        packet, _, overload = row.name.removeprefix("aten::").partition(".")
        op_packet = getattr(torch.ops.aten, packet)
        if overload:
            assert overload in op_packet.overloads(), row.name


def test_op_outside_table_raises_not_implemented_with_aten_name():
    s = torch.randn(4, 4, device="spyre", dtype=torch.float16)
    with pytest.raises(NotImplementedError, match=r"aten::linalg_qr"):
        torch.linalg.qr(s)


def test_denied_op_raises_with_reason():
    s = torch.zeros(5, device="spyre", dtype=torch.float16)
    idx = torch.tensor([0, 2], device="spyre")
    with pytest.raises(SpyreUnsupportedOpError, match=r"aten::_index_put_impl_ .*no Spyre kernel"):
        s.index_put_((idx,), torch.ones(2, device="spyre", dtype=torch.float16))
    with pytest.raises(NotImplementedError, match=r"aten::random_"):
        s.random_()


def test_float64_and_complex_rejected_with_type_error():
    with pytest.raises(TypeError, match=r"float64"):
        torch.randn(3, dtype=torch.float64).to("spyre")
    with pytest.raises(SpyreDtypeError, match=r"complex64.*|.*complex64"):
        torch.zeros(3, dtype=torch.complex64, device="spyre")
    s = torch.ones(3, device="spyre", dtype=torch.float16)
    with pytest.raises(TypeError, match=r"float64"):
        s.to(torch.float64)
    assert s.to("cpu", torch.float64).dtype == torch.float64  # on the CPU it is fine


def test_integer_tensors_allowed_for_indexing_but_not_float_math():
    w = torch.randn(10, 4, dtype=torch.float16)
    idx = torch.tensor([1, 3, 3])
    out = torch.nn.functional.embedding(idx.to("spyre"), w.to("spyre"))
    assert torch.equal(out.cpu(), w[idx])
    mask = torch.tensor([True, False, True]).to("spyre")
    x = torch.arange(3, dtype=torch.float16).to("spyre")
    assert torch.equal(torch.where(mask, x, -x).cpu(), torch.tensor([0.0, -1.0, 2.0], dtype=torch.float16))
    with pytest.raises(TypeError, match=r"int64.*aten::exp|aten::exp.*int64"):
        torch.exp(torch.arange(3, device="spyre"))


def test_an_op_that_decomposes_above_the_device_is_not_refused_by_name() -> None:
    """``aten::squeeze_`` has a CompositeExplicitAutograd kernel and no PrivateUse1 kernel, so the
    dispatcher runs its composite kernel and the Spyre fallback never sees it (a 1-D ``matmul``
    sample calls it; the op index lists it): the table's silence is no refusal.  An op that does
    reach the fallback and is absent from the table still is one."""
    import torch

    assert support.decomposes_above_device("aten::squeeze_") and support.decomposes_above_device("aten::squeeze_.dim")
    assert support.unsupported_reason("aten::squeeze_", "float16") is None
    x = torch.ones(3, 1, dtype=torch.float16).to("spyre")
    x.squeeze_()  # runs on the device without a refusal
    assert x.shape == (3,)
    assert not support.decomposes_above_device("aten::mm") and not support.decomposes_above_device("aten::no_such_op")
    assert "not in the Spyre op support table" in support.unsupported_reason("aten::fft_fft")
