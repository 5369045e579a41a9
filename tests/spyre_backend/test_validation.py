"""Torch's own argument errors come before Spyre's "not supported" (torch-spyre configs declare
test_isposinf_isneginf_non_boolean_output and test_polygamma_neg mandatory_success on Spyre)."""

from __future__ import annotations

import pytest
import torch

from spyre_backend.errors import SpyreUnsupportedOpError


def test_invalid_out_dtype_raises_torchs_error_not_unsupported() -> None:
    t = torch.tensor([float("inf"), -float("inf"), 1.2], device="spyre")
    out = torch.empty_like(t, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
        torch.isposinf(t, out=out)
    assert out.device.type == "spyre"  # the check ran on a CPU copy


def test_invalid_argument_of_an_unsupported_op() -> None:
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n"):
        torch.polygamma(-1, torch.tensor([1.0, 2.0], device="spyre"))


def test_valid_call_of_an_unsupported_op_is_still_refused() -> None:
    t = torch.tensor([float("inf"), 1.0], device="spyre")
    with pytest.raises(SpyreUnsupportedOpError, match="aten::isposinf"):
        torch.isposinf(t)


def test_isnan_isinf_on_index_dtypes_for_comparisons() -> None:
    b = torch.tensor([True, False], device="spyre")
    i = torch.tensor([3, -1], device="spyre")
    assert not torch.isnan(b).cpu().any() and not torch.isinf(i).cpu().any()
    torch.testing.assert_close(b, torch.tensor([True, False], device="spyre"))
