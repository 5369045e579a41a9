"""Module → aten ops, forward and backward, captured with ``TorchDispatchMode`` (issue 13).

For a ModuleInfo of ``torch.testing._internal.common_modules.module_db`` (``nn.Linear``) the
module is built from each of its first ``max_samples`` ``ModuleInput``s (float32, on the CPU,
``training=False`` as our module templates run it), run forward on the sample's forward input,
and then backward: the gradients of every output (seeded with ones made outside the recorder, so
no loss op is recorded) w.r.t. the inputs and parameters that require grad.  Both run under a
dispatch mode recording each aten op's schema name, so
``nn.Linear`` records ``aten::addmm``/``aten::t`` and its backward ``aten::mm``;
``nn.Embedding`` records ``aten::embedding`` and ``aten::embedding_dense_backward``.  The
caller (``selection.index.op_index``) drops data movement.

One capture per ModuleInfo serves every item of it (each template and dtype): which kernels a
module calls does not depend on the spec's dtype, and the CPU runs every module in float32.
The CPU is used whatever the index device: the dispatch mode sits above the backend keys, so it
records the same aten ops for any device.  Returns ``None`` when the module or its inputs cannot
be built (the item then stays unindexed and memory keeps it, fail soft).
"""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _module_table() -> dict[str, Any]:
    from torch.testing._internal.common_modules import module_db

    return {m.name: m for m in module_db}


def _recorder(seen: set[str]) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    return Recorder()


def _forward_backward(module: Any, args: Any, kwargs: Any, seen: set[str]) -> None:
    """Forward, then backward of every output w.r.t. inputs and parameters, recording both;
    the ``ones_like`` seeds are made outside the recorder (no op of the module's own)."""
    import torch
    from torch.utils._pytree import tree_flatten

    try:
        with _recorder(seen):
            out = module(*args, **kwargs)
        leaves = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        wrt = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        wrt += [p for p in module.parameters() if p.requires_grad]
        if leaves and wrt:
            seeds = [torch.ones_like(t) for t in leaves]
            with _recorder(seen):
                torch.autograd.grad(leaves, wrt, seeds, allow_unused=True)
    except Exception:  # noqa: BLE001 — the attempt is what we index, not the outcome
        pass


@functools.cache
def capture_module_ops(name: str, max_samples: int = 4) -> tuple[str, ...] | None:
    """The aten ops (sorted) ModuleInfo ``name`` calls forward and backward; ``None`` if it is
    not in the installed ``module_db`` or none of its inputs can be built."""
    import torch

    info = _module_table().get(name)
    if info is None:
        return None
    seen: set[str] = set()
    built = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                             requires_grad=True, training=False)
        except Exception as exc:  # noqa: BLE001 — an input generator that raises: not indexed
            log.warning("module index: %s inputs: %s", name, exc)
            return None
        for mi in [m for m in inputs if m.forward_input is not None][:max_samples]:
            c = mi.constructor_input
            try:
                module = info.module_cls(*c.args, **c.kwargs).to(torch.float32).train(False)
            except Exception:  # noqa: BLE001 — this input's constructor fails; try the next
                continue
            built += 1
            _forward_backward(module, mi.forward_input.args, mi.forward_input.kwargs, seen)
    if not built:
        return None
    return tuple(sorted(seen))
