"""fp16 compute policy: float32 computed in fp16 and returned as float32."""

from __future__ import annotations

import torch

from spyre_backend import numerics
from spyre_backend.numerics import SpyrePrecisionWarning


def test_fp32_result_is_fp32_with_fp16_error():
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    out = (a.to("spyre") @ b.to("spyre")).cpu()
    assert out.dtype == torch.float32
    exact = a @ b
    fp16 = (a.half() @ b.half()).float()
    err = (out - exact).abs().max().item()
    assert err > 1e-5  # not float32-exact ...
    torch.testing.assert_close(out, fp16, atol=1e-2, rtol=1e-2)  # ... but fp16-level
    assert (out - exact).abs().max().item() < 0.1


def test_fp32_in_place_keeps_fp32_storage():
    s = torch.full((4,), 1.0).to("spyre")
    s.add_(1e-4)  # below fp16 resolution at 1.0
    assert s.dtype == torch.float32
    assert torch.equal(s.cpu(), torch.ones(4))


def test_copies_are_exact_even_for_fp32():
    x = torch.tensor([1.0001, 3.14159265])
    assert torch.equal(x.to("spyre").cpu(), x)


def test_float16_native_and_bfloat16_supported():
    x = torch.randn(8, dtype=torch.bfloat16)
    out = torch.exp(x.to("spyre")).cpu()
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, torch.exp(x))
    h = torch.randn(8, dtype=torch.float16)
    assert torch.equal(torch.tanh(h.to("spyre")).cpu(), torch.tanh(h))


def test_warning_once_per_process(run_python):
    proc = run_python(
        """
        import warnings, torch, spyre_backend
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x = torch.ones(3).to("spyre")
            (x + x).cpu(); (x * x).cpu(); torch.exp(x).cpu()
        cats = [type(m.message).__name__ for m in w]
        print(cats.count("SpyrePrecisionWarning"))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def test_exact_mode_computes_in_fp32(run_python):
    proc = run_python(
        """
        import torch, spyre_backend
        s = torch.full((4,), 1.0).to("spyre")
        s.add_(1e-4)
        print(torch.equal(s.cpu(), torch.full((4,), 1.0001)))
        """,
        env={"SPYRE_SIM_PRECISION": "exact"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_warning_category_is_a_user_warning():
    assert issubclass(SpyrePrecisionWarning, UserWarning)
    assert numerics.PRECISION in ("fp16", "exact")
