"""Adapters: rewrites of ops that have no direct Spyre kernel into equivalent supported forms.

An adapter is named in ``support.yaml`` (``adapter: <name>``) and called by the fallback instead
of the op itself, with the op's CPU arguments. Adapters only use ops Spyre has.

* ``pow_integral`` — ``pow(x, n)`` for a float or int exponent that is a small integer
  (``|n| <= 4``) becomes repeated multiplication (``x·x·x`` for 3), with a reciprocal for
  negative ``n``; any other exponent runs the pow kernel.
* ``gelu_tanh`` — ``gelu(x, approximate="tanh")`` via
  ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``; the erf form runs the gelu kernel.
* ``convolution`` / ``convolution_backward`` — ``convolution_overrideable`` and
  ``convolution_backward_overrideable`` (what PrivateUse1 receives) run as the generic
  ``aten::convolution`` / ``aten::convolution_backward``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["ADAPTERS", "run"]

_MAX_INTEGRAL_EXPONENT = 4


def _pow_integral(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    if op._overloadname not in ("Tensor_Scalar", "Tensor_Scalar_out") or len(args) < 2:
        return op(*args, **kwargs)
    base, exponent = args[0], args[1]
    n = exponent.item() if isinstance(exponent, torch.Tensor) else exponent
    integral = isinstance(n, (int, float)) and not isinstance(n, bool) and float(n).is_integer()
    if not (base.is_floating_point() and integral and 0 < abs(n) <= _MAX_INTEGRAL_EXPONENT):
        return op(*args, **kwargs)
    n = int(n)
    result = base.clone()
    for _ in range(abs(n) - 1):
        result = torch.mul(result, base)
    if n < 0:
        result = torch.reciprocal(result)
    return _into_out(kwargs, result)


def _gelu_tanh(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    if approximate != "tanh" or op._overloadname not in ("default", "out"):
        return op(*args, **kwargs)
    x = args[0]
    inner = torch.mul(torch.add(x, torch.mul(torch.mul(torch.mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
    result = torch.mul(torch.mul(x, 0.5), torch.add(torch.tanh(inner), 1.0))
    return _into_out(kwargs, result)


def _into_out(kwargs: dict, result: torch.Tensor) -> torch.Tensor:
    out = kwargs.get("out")
    if out is None:
        return result
    if out.shape != result.shape:
        out.resize_(result.shape)  # a fresh CPU temporary from the fallback, never device memory
    return out.copy_(result)


def _convolution(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    # PrivateUse1 convolutions arrive as convolution_overrideable (same arguments as
    # aten::convolution); run the generic convolution on the CPU aliases.
    return torch.ops.aten.convolution.default(*args, **kwargs)


def _convolution_backward(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    grad_output, inp, weight, stride, padding, dilation, transposed, output_padding, groups, mask = args
    bias_sizes = [weight.size(1) * groups] if transposed else [weight.size(0)]
    return torch.ops.aten.convolution_backward.default(
        grad_output, inp, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, mask
    )


ADAPTERS: dict[str, Callable[[torch._ops.OpOverload, tuple, dict], Any]] = {
    "pow_integral": _pow_integral,
    "gelu_tanh": _gelu_tanh,
    "convolution": _convolution,
    "convolution_backward": _convolution_backward,
}


def run(name: str, op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run adapter ``name`` for ``op`` on CPU arguments (KeyError if the table names an unknown one)."""
    return ADAPTERS[name](op, args, kwargs)
