"""Registers the simulated Spyre device with PyTorch under the PrivateUse1 dispatch key.

``register()`` is called by ``import spyre_backend`` and is idempotent. It

* renames PrivateUse1 to ``spyre`` and generates ``Tensor.spyre()``/``is_spyre`` and
  ``Module.spyre()`` (``torch.utils.backend_registration._setup_privateuseone_for_python_backend``);
* registers ``torch.spyre`` (``spyre_backend.device_module``) plus the default hooks and guard;
* installs the boxed fallback (``spyre_backend.fallback``) for every aten op on PrivateUse1;
* routes ``convolution_overrideable`` and its backward (whose default kernels raise) to the
  fallback;
* adds fallthroughs that torch needs for a Python backend: ``AutocastPrivateUse1``, and
  ``_copy_from`` under ``Conjugate``/``Negative`` (otherwise ``.cpu()`` of a neg/conj view
  recurses until it crashes);
* formats printed device tensors from a CPU copy;
* replaces ``torch.UntypedStorage(n, device="spyre")`` (which segfaults without a C++
  allocator) with an allocation from ``spyre_backend.memory``.

Import this package before ``torch.testing._internal.common_device_type``: that module
freezes its device test bases at import time.
"""

from __future__ import annotations

import functools

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

from . import cards, device_module, fallback, memory

__all__ = ["register", "DEVICE_TYPE"]

DEVICE_TYPE = "spyre"
_libraries: list[torch.library.Library] = []
_EXPLICIT_OPS = ("convolution_overrideable", "convolution_backward_overrideable")


def register() -> None:
    """Register the device (no-op when already registered in this process)."""
    if _libraries:
        return
    if torch._C._get_privateuse1_backend_name() != DEVICE_TYPE:
        _setup_privateuseone_for_python_backend(DEVICE_TYPE, backend_module=device_module)
    elif not hasattr(torch, DEVICE_TYPE):
        torch._register_device_module(DEVICE_TYPE, device_module)

    any_lib = torch.library.Library("_", "IMPL")
    any_lib.fallback(fallback.spyre_fallback, "PrivateUse1")
    any_lib.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    aten_lib = torch.library.Library("aten", "IMPL")
    for key in ("Conjugate", "Negative"):
        aten_lib.impl("_copy_from", torch.library.fallthrough_kernel, key)
    # Ops whose CompositeExplicitAutograd default just raises would never reach the fallback.
    for name in _EXPLICIT_OPS:
        op = getattr(torch.ops.aten, name).default
        aten_lib.impl(name, functools.partial(fallback.spyre_fallback, op), "PrivateUse1")
    _libraries.extend([any_lib, aten_lib])
    _patch_untyped_storage()
    _patch_tensor_printing()


def _patch_untyped_storage() -> None:
    original_new = torch.UntypedStorage.__new__

    def __new__(cls, *args, device=None, **kwargs):  # noqa: N807 - mirrors the patched name
        if device is not None and torch.device(device).type == DEVICE_TYPE:
            if len(args) == 1 and isinstance(args[0], int) and not kwargs:
                index = cards.check_index(device)  # RuntimeError for spyre:1 and up
                return memory.allocate_storage(args[0], torch.device(DEVICE_TYPE, index))
            raise NotImplementedError("spyre: torch.UntypedStorage(..., device='spyre') only takes a byte count")
        if device is None:
            return original_new(cls, *args, **kwargs)
        return original_new(cls, *args, device=device, **kwargs)

    torch.UntypedStorage.__new__ = __new__


def _patch_tensor_printing() -> None:
    """Format device tensors from a CPU copy, as torch does for xla/lazy/ipu/mtia tensors.

    Printing otherwise runs masked_select, ceil, log10 ... on the device, which the op table
    need not support; the ``device='spyre:0'`` suffix still comes from the original tensor.
    """
    import torch._tensor_str as tensor_str

    original = tensor_str._tensor_str

    def _tensor_str(self, indent):
        if self.device.type == DEVICE_TYPE:
            self = self.to("cpu")
        return original(self, indent)

    tensor_str._tensor_str = _tensor_str
