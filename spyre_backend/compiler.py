"""``torch.compile(model, backend="spyre")``: an FX-level dynamo backend for the simulated card.

Pipeline (issue 3, "torch.compile"): dynamo captures the Python-level graph; ``aot_autograd``
lowers it to aten-level forward (and backward) graphs; for each of them this backend

1. checks every ``call_function`` node on an aten ``OpOverload`` against the support table
   (``spyre_backend.support``): the op must be in the table and supported, and every tensor
   input and output dtype must be one it lists. All failures are collected and raised together
   as one ``SpyreUnsupportedOpError`` listing ``<node>: <aten op> — <reason>`` per line
   (dynamo wraps it in ``torch._dynamo.exc.BackendCompilerFailed``, whose message keeps the list);
2. applies the adapters as graph rewrites (``spyre_backend.graph_rewrites``);
3. returns the rewritten graph, run eagerly: on device inputs each aten op goes through the
   Spyre fallback, so memory accounting, fp16 numerics and fault injection apply as in eager.

Registration: ``register()`` (called by ``import spyre_backend``) makes the name ``"spyre"``
known to ``torch._dynamo`` without importing it: if dynamo's backend registry is already
imported the backend is registered at once, else a one-shot import hook registers it when
``torch.compile`` first imports the registry (importing dynamo costs seconds).

``last_compiled`` holds the most recent rewritten graph and its rewrites, for tests/debugging.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from . import capabilities, graph_rewrites, support
from .errors import SpyreUnsupportedOpError

__all__ = ["BACKEND_NAME", "spyre_compiler", "check_graph", "register", "last_compiled"]

BACKEND_NAME = "spyre"
_REGISTRY = "torch._dynamo.backends.registry"


@dataclass
class CompiledGraph:
    """What the backend produced for one aot graph: the module and the rewrites applied."""

    graph_module: fx.GraphModule
    rewrites: list[str] = field(default_factory=list)


last_compiled: list[CompiledGraph] = []


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _node_tensors(node: fx.Node) -> list[torch.Tensor]:
    """Fake tensors of the node's output and inputs (from ``meta["val"]``)."""
    found = _tensors(node.meta.get("val"))
    for arg in (*node.args, *node.kwargs.values()):
        for a in arg if isinstance(arg, (list, tuple)) else [arg]:
            if isinstance(a, fx.Node):
                found += _tensors(a.meta.get("val"))
    return found


def check_graph(gm: fx.GraphModule) -> list[str]:
    """Problems of ``gm`` on Spyre, one ``"<node>: <aten op> — <reason>"`` per unsupported node.

    Nodes that produce no tensor (``sym_size``, asserts), nodes with no Spyre tensor among
    their inputs and output (CPU constants such as ``lift_fresh_copy`` of ``torch.tensor``)
    and non-aten targets (``operator.getitem``) are not checked.
    """
    problems: list[str] = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if node.target.namespace != "aten" or not _tensors(node.meta.get("val")):
            continue
        tensors = _node_tensors(node)
        if not any(t.device.type == BACKEND_NAME for t in tensors):
            continue
        name = support.normalize_name(f"aten::{node.target._opname}.{node.target._overloadname}")
        reason = support.unsupported_reason(name)
        if reason is None:
            for dtype in dict.fromkeys(t.dtype for t in tensors if t.device.type == BACKEND_NAME):
                reason = support.unsupported_reason(name, str(dtype))
                if reason is not None:
                    break
        if reason is not None:
            problems.append(f"{node.name}: {name} — {reason}")
    return problems


def _compile_aten_graph(gm: fx.GraphModule, example_inputs: list) -> Callable:
    problems = check_graph(gm)
    if problems:
        raise SpyreUnsupportedOpError(
            f"spyre: torch.compile graph has {len(problems)} node(s) Spyre cannot run:\n  " + "\n  ".join(problems),
            reason="unsupported nodes in compiled graph",
        )
    rewrites = graph_rewrites.rewrite(gm)
    last_compiled.clear()
    last_compiled.append(CompiledGraph(gm, rewrites))

    def run(args: list) -> Any:
        with capabilities.compiled_graph():
            return gm(*args)

    run._boxed_call = True  # aot_autograd passes the inputs as one list
    return run


def spyre_compiler(gm: fx.GraphModule, example_inputs: list) -> Callable:
    """The dynamo backend: aot_autograd with ``_compile_aten_graph`` for forward and backward."""
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_compile_aten_graph, bw_compiler=_compile_aten_graph)(gm, example_inputs)


def _register_now() -> None:
    registry = sys.modules[_REGISTRY]
    if BACKEND_NAME not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=spyre_compiler, name=BACKEND_NAME)


class _RegistryImportHook(importlib.abc.MetaPathFinder):
    """Registers the backend right after ``torch._dynamo.backends.registry`` executes."""

    def find_spec(self, fullname, path, target=None):  # noqa: ARG002
        if fullname != _REGISTRY:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module):
            exec_module(module)
            _register_now()

        spec.loader.exec_module = exec_and_register
        return spec


def register() -> None:
    """Make ``backend="spyre"`` available to ``torch.compile`` (idempotent)."""
    if _REGISTRY in sys.modules:
        _register_now()
    elif not any(isinstance(f, _RegistryImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegistryImportHook())
