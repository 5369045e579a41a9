"""Registration, round trips, factories, views, in-place ops and autograd on the spyre device."""

from __future__ import annotations

import pytest
import torch

import spyre_backend


def test_device_is_registered():
    assert torch._C._get_privateuse1_backend_name() == "spyre"
    assert torch.device("spyre").type == "spyre"
    assert torch.spyre.is_available()
    assert torch.spyre.device_count() == 1


def test_round_trip_keeps_values_and_is_a_real_device_tensor():
    x = torch.randn(3, 5)
    s = x.to("spyre")
    assert s.device == torch.device("spyre", 0)
    assert s.is_spyre and type(s) is torch.Tensor
    assert s.untyped_storage().device.type == "spyre"
    assert torch.equal(s.cpu(), x)
    assert torch.equal(x.spyre().cpu(), x)


def test_module_spyre_moves_parameters():
    m = torch.nn.Linear(4, 2).spyre()
    assert m.weight.device.type == "spyre"
    out = m(torch.randn(3, 4, device="spyre"))
    assert out.shape == (3, 2) and out.device.type == "spyre"


def test_factories():
    assert torch.equal(torch.zeros(2, 3, device="spyre").cpu(), torch.zeros(2, 3))
    assert torch.equal(torch.ones(4, device="spyre", dtype=torch.float16).cpu(), torch.ones(4, dtype=torch.float16))
    assert torch.equal(torch.full((2,), 7.0, device="spyre").cpu(), torch.full((2,), 7.0))
    assert torch.equal(torch.arange(6, device="spyre").cpu(), torch.arange(6))
    assert torch.equal(torch.tensor([1.0, 2.0], device="spyre").cpu(), torch.tensor([1.0, 2.0]))
    e = torch.empty(5, 7, device="spyre")
    assert e.shape == (5, 7) and e.device.type == "spyre"
    r = torch.rand(1000, device="spyre").cpu()
    assert 0.0 <= r.min() and r.max() < 1.0
    n = torch.randn(1000, device="spyre").cpu()
    assert abs(n.mean()) < 0.2


def test_random_is_seeded_by_torch_manual_seed():
    torch.manual_seed(123)
    a = torch.randn(8, device="spyre").cpu()
    torch.manual_seed(123)
    b = torch.randn(8, device="spyre").cpu()
    assert torch.equal(a, b)


def test_views_alias_device_memory():
    s = torch.zeros(4, 6, device="spyre")
    v = s.t()[2]
    v.fill_(5.0)
    assert v._base is s
    assert v.data_ptr() == s.data_ptr() + 2 * s.element_size()
    expected = torch.zeros(4, 6)
    expected[:, 2] = 5.0
    assert torch.equal(s.cpu(), expected)
    assert s.view(24).shape == (24,)
    assert s.reshape(2, 12).untyped_storage().data_ptr() == s.untyped_storage().data_ptr()


def test_in_place_ops_and_out():
    s = torch.ones(3, device="spyre", dtype=torch.float16)
    s.mul_(3).add_(1)
    assert torch.equal(s.cpu(), torch.full((3,), 4.0, dtype=torch.float16))
    out = torch.empty(0, device="spyre", dtype=torch.float16)
    torch.add(s, s, out=out)
    assert out.shape == (3,) and torch.equal(out.cpu(), torch.full((3,), 8.0, dtype=torch.float16))


def test_item_and_python_scalars():
    s = torch.tensor([1.5, 2.5], device="spyre", dtype=torch.float16)
    assert (s * 2).sum().item() == 8.0
    assert (s + 1).dtype == torch.float16


def test_autograd_backward_through_spyre():
    x = torch.randn(5, 4, dtype=torch.float16)
    w = torch.randn(4, 3, dtype=torch.float16)
    xs = x.to("spyre").requires_grad_()
    ws = w.to("spyre").requires_grad_()
    torch.nn.functional.gelu(xs @ ws).softmax(-1).sum().backward()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    torch.nn.functional.gelu(xc @ wc).softmax(-1).sum().backward()
    assert ws.grad.device.type == "spyre"
    torch.testing.assert_close(ws.grad.cpu(), wc.grad, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(xs.grad.cpu(), xc.grad, atol=1e-2, rtol=1e-2)


def test_printing_shows_device():
    assert "device='spyre:0'" in repr(torch.ones(2, device="spyre"))


def test_untyped_storage_on_device_is_allocated_not_segfault():
    st = torch.UntypedStorage(256, device="spyre")
    assert st.device.type == "spyre" and st.nbytes() == 256


def test_neg_view_copies_to_cpu():
    s = torch.arange(3, device="spyre", dtype=torch.float16)
    n = torch._neg_view(s)
    assert n.is_neg()
    assert torch.equal(n.cpu().resolve_neg(), -torch.arange(3, dtype=torch.float16))


def test_reregistration_is_a_no_op():
    spyre_backend.registration.register()
    assert torch.ones(1, device="spyre").cpu().item() == 1.0


def test_view_of_neg_view_keeps_the_neg_bit():
    s = torch.arange(4, device="spyre", dtype=torch.float16)
    n = torch._neg_view(s)[1:]
    assert torch.equal(n.cpu().resolve_neg(), -torch.arange(1, 4, dtype=torch.float16))


def test_deepcopy_and_save_load_round_trip():
    import copy
    import io

    s = torch.randn(3, dtype=torch.float16).to("spyre")
    # deepcopy copies device bytes on the device: real Spyre lacks in-device copies (capabilities)
    with pytest.raises(spyre_backend.SpyreCompileError, match="In-device copy not implemented"):
        copy.deepcopy(s)
    buf = io.BytesIO()
    torch.save({"t": s, "v": s[1:]}, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["t"].device.type == "spyre"
    assert torch.equal(loaded["v"].cpu(), s.cpu()[1:])


def test_cross_device_mixing_raises_the_usual_same_device_error():
    a = torch.ones(4, dtype=torch.float16).to("spyre")
    b = torch.ones(4, dtype=torch.float16)
    for mix in (lambda: a + b, lambda: torch.mm(a.view(2, 2), b.view(2, 2)), lambda: torch.cat([a, b])):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            mix()
    assert (a * torch.tensor(2.0, dtype=torch.float16)).cpu().tolist() == [2.0] * 4  # 0-dim CPU scalar is fine
    assert torch.equal(b.to("spyre").cpu(), b)
