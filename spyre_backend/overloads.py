"""What the fallback knows about one aten overload, derived once from its schema and the tables.

``OverloadFacts(op, special)`` (built once per ``OpOverload`` by ``spyre_backend.fallback``):
the support-table row and its accepted dtypes, the schema's returns (``ReturnKind`` and alias
set: fresh tensor, in-place/``out=`` write, view), the arguments it writes, its ``out=``
arguments, a special handler (``special``: allocation, copies, ``set_``), whether mixing a CPU
tensor in is an error, and its capability rules (``spyre_backend.capabilities``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, NamedTuple

import torch

from . import capabilities, support

__all__ = ["OverloadFacts", "ReturnKind", "REJECTED_DTYPES", "MIXED_DEVICE_OK"]

#: dtypes Spyre never computes in (design §7: float64 and complex are rejected)
REJECTED_DTYPES = frozenset({torch.float64, torch.complex32, torch.complex64, torch.complex128})

# Ops that take CPU tensors next to device tensors on CUDA too: copies between devices,
# CPU index tensors, tensor_split's CPU sections tensor.
MIXED_DEVICE_OK = frozenset({
    "aten::copy_", "aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::set_",
    "aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_", "aten::tensor_split",
})



class ReturnKind(Enum):
    """How one schema return relates to the arguments (its ``alias_info``): a new tensor, an
    argument written in place (``Tensor(a!)``: ``add_``, ``out=``), or a view of one (``Tensor(a)``)."""

    FRESH = "fresh"
    WRITE = "write"
    VIEW = "view"


class _Return(NamedTuple):
    kind: ReturnKind
    alias: frozenset[str] | None  # the schema alias set (``{"a"}``); ``None`` for a fresh tensor


class _Mutated(NamedTuple):
    """An argument the op writes (``Tensor(a!) self`` / ``out``): position, name, alias set."""

    position: int
    name: str
    alias: frozenset[str]


class _OutArg(NamedTuple):
    """A keyword-only ``out=`` argument: position in the schema and name."""

    position: int
    name: str


class OverloadFacts:
    """Per-overload facts derived once from the schema and the support table (not a torch
    ``OpInfo``: this is one ``OpOverload`` as the fallback sees it)."""

    __slots__ = ("name", "full", "row", "dtypes", "dtype_objs", "returns", "mutated", "outs", "handler", "same_device",
                 "caps")

    def __init__(self, op: torch._ops.OpOverload, special: Mapping[str, Callable[..., Any]]) -> None:
        schema = op._schema
        self.name = schema.name
        self.full = schema.name if op._overloadname == "default" else f"{schema.name}.{op._overloadname}"
        self.row = support.lookup(self.full)
        self.dtypes = frozenset(self.row.dtypes) if self.row else frozenset()
        # torch.dtype objects accepted (float64/complex never): the per-tensor check is one set lookup.
        self.dtype_objs = frozenset(getattr(torch, d) for d in self.dtypes) - REJECTED_DTYPES
        self.returns: list[_Return] = []
        for r in schema.returns:
            a = r.alias_info
            if a is None:
                self.returns.append(_Return(ReturnKind.FRESH, None))
            else:
                kind = ReturnKind.WRITE if a.is_write else ReturnKind.VIEW
                self.returns.append(_Return(kind, frozenset(a.before_set)))
        self.mutated: list[_Mutated] = []
        self.outs: list[_OutArg] = []
        for i, arg in enumerate(schema.arguments):
            a = arg.alias_info
            if a is not None and a.is_write:
                self.mutated.append(_Mutated(i, arg.name, frozenset(a.before_set)))
                if arg.kwarg_only:
                    self.outs.append(_OutArg(i, arg.name))
        self.handler = special.get(self.full)
        self.same_device = self.name not in MIXED_DEVICE_OK
        self.caps = capabilities.rules_for(self.full, self.row.category if self.row else None)
