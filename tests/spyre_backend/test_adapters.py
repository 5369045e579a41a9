"""Adapters (pow → repeated multiplication, gelu tanh form, convolution) and ops Spyre lacks."""

from __future__ import annotations

import pytest
import torch

from spyre_backend import adapters


def test_pow_small_integral_exponent_is_repeated_multiplication(monkeypatch):
    x = torch.randn(32, dtype=torch.float16)
    s = x.to("spyre")
    calls = []
    original = adapters.ADAPTERS["pow_integral"]
    monkeypatch.setitem(adapters.ADAPTERS, "pow_integral", lambda *a: calls.append(a[0]) or original(*a))
    out = torch.pow(s, 3.0).cpu()
    assert calls and calls[0]._schema.name == "aten::pow"
    assert torch.equal(out, x * x * x)
    assert torch.equal(torch.pow(s, 2).cpu(), x * x)
    torch.testing.assert_close(torch.pow(s, -2.0).cpu(), 1 / (x * x), atol=1e-2, rtol=1e-2)


def test_pow_other_exponents_use_the_kernel():
    x = torch.rand(16, dtype=torch.float16) + 0.5
    torch.testing.assert_close(torch.pow(x.to("spyre"), 2.5).cpu(), torch.pow(x, 2.5))
    torch.testing.assert_close(torch.pow(x.to("spyre"), 0.0).cpu(), torch.ones(16, dtype=torch.float16))


def test_gelu_tanh_form():
    x = torch.randn(64, dtype=torch.float16)
    out = torch.nn.functional.gelu(x.to("spyre"), approximate="tanh").cpu()
    torch.testing.assert_close(out, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-2, rtol=1e-2)


def test_conv2d_forward_and_backward():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).half()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float16, requires_grad=True)
    conv(x).sum().backward()
    dev = torch.nn.Conv2d(3, 4, 3, padding=1).half()
    dev.load_state_dict(conv.state_dict())
    dev = dev.spyre()
    xs = x.detach().spyre().requires_grad_()
    y = dev(xs)
    y.sum().backward()
    torch.testing.assert_close(y.cpu(), conv(x).detach(), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(xs.grad.cpu(), x.grad, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(dev.weight.grad.cpu(), conv.weight.grad, atol=5e-2, rtol=1e-2)


def test_tensor_indexing_lacks_index_tensor_out():
    s = torch.arange(5, dtype=torch.float16).to("spyre")
    with pytest.raises(NotImplementedError, match=r"aten::index\.Tensor_out"):
        s[torch.tensor([0, 2]).to("spyre")]
    assert torch.equal(s[1:3].cpu(), torch.tensor([1.0, 2.0], dtype=torch.float16))


def test_resize_is_unsupported_but_out_tensors_still_grow():
    s = torch.zeros(2, device="spyre", dtype=torch.float16)
    with pytest.raises(NotImplementedError, match=r"aten::resize_"):
        s.resize_(10)
    out = torch.empty(0, device="spyre", dtype=torch.float16)
    torch.cat([s, s], out=out)
    assert out.shape == (4,)
