"""Matrix products in float16 with float32 accumulation, computed fast on the CPU.

Spyre, like PyTorch's own CPU kernel for float16 matrix products (``at::opmath_type<Half>`` is
``float``), multiplies float16 operands and accumulates in float32, rounding the result to
float16 once.  The CPU's float16 GEMM is a slow reference loop (3–4× the float32 BLAS call on the
OpInfo samples, single-threaded, measured 2026-12-06), so the fallback computes these ops as
float32 BLAS on the float16 operands (exact: a float16 value is a float32 value, and the product
of two is exact in float32) and rounds the result to float16 — the values the float16 kernel gives,
up to the order of the float32 additions.

``GEMM_OPS``: the aten ops so computed, functional and ``out=`` overloads only (an in-place
overload keeps the float16 kernel).  ``run(op, args, kwargs, outs)`` runs one call; ``outs`` are
the call's ``out=`` argument names, whose float16 tensors receive the rounded result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["GEMM_OPS", "applies", "run"]

GEMM_OPS = frozenset({"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
                      "aten::mv", "aten::addmv", "aten::dot"})


def applies(name: str, in_place: bool, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether a call of aten op ``name`` (its CPU arguments) is a float16 matrix product this
    module computes: a ``GEMM_OPS`` overload that writes no input, whose float tensors are all
    float16."""
    if name not in GEMM_OPS or in_place:
        return False
    seen = False
    for x in (*args, *kwargs.values()):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if x.dtype is not torch.float16:
                return False
            seen = True
    return seen


def run(op: torch._ops.OpOverload, args: Sequence[Any], kwargs: dict[str, Any],
        outs: Sequence[str]) -> Any:
    """``op`` on float32 copies of the float16 operands, the result rounded to float16 (see the
    module docstring); an ``out=`` tensor (float16, resizable) is resized and filled and returned
    as the schema says."""
    def up(x: Any) -> Any:
        return x.to(torch.float32) if isinstance(x, torch.Tensor) and x.dtype is torch.float16 else x

    cargs = [up(a) for a in args]
    ckwargs = {k: (torch.empty(0, dtype=torch.float32) if k in outs else up(v)) for k, v in kwargs.items()}
    result = op(*cargs, **ckwargs)
    if not outs:
        return result.to(torch.float16)
    for name in outs:
        kwargs[name].resize_(ckwargs[name].shape).copy_(ckwargs[name])
    return kwargs[outs[0]] if len(outs) == 1 else tuple(kwargs[n] for n in outs)
