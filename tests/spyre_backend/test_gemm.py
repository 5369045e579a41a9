"""Matrix products: float16 operands, float32 accumulation, float16 result — the values of the
CPU's own float16 kernel, computed as float32 BLAS (spyre_backend.gemm)."""

from __future__ import annotations

import pytest
import torch

import spyre_backend  # noqa: F401  (registers the device)
from spyre_backend import gemm


def _pair(*shape, dtype):
    t = torch.randn(*shape, dtype=torch.float32).to(dtype)
    return t, t.to("spyre")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_products_equal_the_cpu_float16_kernel(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = gemm.run
    monkeypatch.setattr(gemm, "run", lambda op, *a: calls.append(str(op)) or real(op, *a))
    torch.manual_seed(0)
    (a, da), (w, dw), (b, db) = _pair(25, 50, dtype=dtype), _pair(30, 50, dtype=dtype), _pair(30, dtype=dtype)
    (x, dx), (y, dy) = _pair(3, 5, 7, dtype=dtype), _pair(3, 7, 4, dtype=dtype)
    half = torch.float16
    cases = [
        (torch.nn.functional.linear(a.to(half), w.to(half), b.to(half)), torch.nn.functional.linear(da, dw, db)),
        (torch.mm(a.to(half), w.to(half).t()), torch.mm(da, dw.t())),
        (torch.bmm(x.to(half), y.to(half)), torch.bmm(dx, dy)),
        (torch.addmm(b.to(half), a.to(half), w.to(half).t()), torch.addmm(db, da, dw.t())),
    ]
    out = torch.empty(0, dtype=dtype, device="spyre")
    torch.mm(da, dw.t(), out=out)
    cases.append((torch.mm(a.to(half), w.to(half).t()), out))
    for expected, got in cases:
        assert got.device.type == "spyre" and got.dtype == dtype
        torch.testing.assert_close(got.cpu(), expected.to(dtype), atol=0, rtol=0)
    assert calls, "the float32-accumulation path was not taken"


def test_only_functional_and_out_float16_products_take_the_path() -> None:
    h, bf = torch.ones(2, 2, dtype=torch.float16), torch.ones(2, 2, dtype=torch.bfloat16)
    assert gemm.applies("aten::mm", False, (h, h), {})
    assert not gemm.applies("aten::mm", True, (h, h), {})  # in place: the float16 kernel
    assert not gemm.applies("aten::mm", False, (bf, bf), {})  # bfloat16 keeps its own kernel
    assert not gemm.applies("aten::add", False, (h, h), {})
