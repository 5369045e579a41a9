"""Adapters as FX graph rewrites, for the ``torch.compile(..., backend="spyre")`` path.

The same rewrites as ``spyre_backend.adapters`` (which apply them op by op in eager mode),
expressed on an aten-level ``torch.fx.GraphModule`` (what aot_autograd hands to the backend):

* ``pow_integral`` — ``aten.pow.Tensor_Scalar(x, n)`` with an integral exponent
  ``1 <= |n| <= 4`` (int or float, e.g. ``3.0``) → ``aten.mul.Tensor`` chain (``x·x·x``),
  followed by ``aten.reciprocal`` for negative ``n``. Source: design §7 ("pow(x, 3.0) → x·x·x").
* ``gelu_tanh`` — ``aten.gelu(x, approximate="tanh")`` →
  ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` in ``mul``/``add``/``tanh`` (issue 3).

Other exponents and the erf form of gelu are left alone (they have Spyre kernels).
``rewrite(gm)`` edits ``gm`` in place and returns the names of the rewritten nodes.
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx

__all__ = ["rewrite", "MAX_INTEGRAL_EXPONENT"]

aten = torch.ops.aten
MAX_INTEGRAL_EXPONENT = 4


def _integral_exponent(n: object) -> int | None:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return None
    if not float(n).is_integer() or not 1 <= abs(n) <= MAX_INTEGRAL_EXPONENT:
        return None
    return int(n)


def _is_float_node(node: object) -> bool:
    val = node.meta.get("val") if isinstance(node, fx.Node) else None
    return isinstance(val, torch.Tensor) and val.is_floating_point()


def _rewrite_pow(graph: fx.Graph, node: fx.Node) -> bool:
    if len(node.args) < 2 or node.kwargs:
        return False
    base, exponent = node.args[0], node.args[1]
    n = _integral_exponent(exponent)
    if n is None or not _is_float_node(base):
        return False
    with graph.inserting_before(node):
        result = base
        for _ in range(abs(n) - 1):
            result = graph.call_function(aten.mul.Tensor, (result, base))
        if n < 0:
            result = graph.call_function(aten.reciprocal.default, (result,))
        elif result is base:  # x ** 1: a fresh tensor, as pow returns one
            result = graph.call_function(aten.clone.default, (base,))
    node.replace_all_uses_with(result)
    return True


def _rewrite_gelu(graph: fx.Graph, node: fx.Node) -> bool:
    approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    if approximate != "tanh":
        return False
    x = node.args[0]
    call = graph.call_function
    with graph.inserting_before(node):
        cube = call(aten.mul.Tensor, (call(aten.mul.Tensor, (x, x)), x))
        inner = call(aten.add.Tensor, (x, call(aten.mul.Tensor, (cube, 0.044715))))
        scaled = call(aten.mul.Tensor, (inner, math.sqrt(2.0 / math.pi)))
        one_plus = call(aten.add.Tensor, (call(aten.tanh.default, (scaled,)), 1.0))
        result = call(aten.mul.Tensor, (call(aten.mul.Tensor, (x, 0.5)), one_plus))
    node.replace_all_uses_with(result)
    return True


_REWRITES = {
    aten.pow.Tensor_Scalar: ("pow_integral", _rewrite_pow),
    aten.gelu.default: ("gelu_tanh", _rewrite_gelu),
}


def rewrite(gm: fx.GraphModule) -> list[str]:
    """Apply every applicable adapter rewrite to ``gm`` (in place; recompiles when changed).

    Returns ``["<adapter>:<node name>", ...]`` for the nodes replaced.
    """
    done: list[str] = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _REWRITES:
            continue
        adapter, fn = _REWRITES[node.target]
        if fn(gm.graph, node):
            done.append(f"{adapter}:{node.name}")
            gm.graph.erase_node(node)
    if done:
        gm.graph.lint()
        gm.recompile()
    return done

