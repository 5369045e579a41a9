"""Device tensors over CPU memory: creating them, viewing them, and their CPU aliases.

A device tensor is a genuine PrivateUse1 ``TensorImpl`` (from ``torch._C._acc.create_empty_tensor``)
whose storage is a device ``UntypedStorage`` from ``spyre_backend.memory``. ``set_`` is
redispatched straight to the CPU kernel, which only rewires size/stride/storage and so works
for any device. The CPU alias of a device tensor shares its bytes through a non-owning,
non-resizable CPU storage, so CPU kernels can neither free nor reallocate device memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from . import cards, memory

__all__ = ["contiguous_strides", "storage_nbytes", "empty_device", "device_view", "rebind", "cpu_alias", "to_device"]

_CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_set_storage = torch.ops.aten.set_.source_Storage_storage_offset


def contiguous_strides(size: Sequence[int]) -> list[int]:
    """Row-major strides (in elements) for ``size``."""
    strides: list[int] = []
    acc = 1
    for s in reversed(list(size)):
        strides.append(acc)
        acc *= max(int(s), 1)
    return strides[::-1]


def storage_nbytes(size: Sequence[int], stride: Sequence[int], dtype: torch.dtype, offset: int = 0) -> int:
    """Bytes a storage needs to hold a tensor of ``size``/``stride`` (elements) at ``offset``."""
    if any(int(s) == 0 for s in size):
        return 0
    span = 1 + sum((int(s) - 1) * int(st) for s, st in zip(size, stride, strict=True))
    return (int(offset) + span) * dtype.itemsize


def device_view(
    storage: torch.UntypedStorage, offset: int, size: Sequence[int], stride: Sequence[int], dtype: torch.dtype
) -> torch.Tensor:
    """A device tensor of ``dtype`` over ``storage`` (a device storage); no bytes are copied."""
    t = torch._C._acc.create_empty_tensor([0], dtype)
    _set_storage.redispatch(_CPU_KEYSET, t, storage, int(offset), list(size), list(stride))
    return t


def empty_device(
    size: Sequence[int], stride: Sequence[int] | None, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """A new uninitialised device tensor; charges ``memory`` (stick-rounded).

    Raises:
        torch.OutOfMemoryError: the device pool cannot hold it.
        RuntimeError: ``device`` has an index other than 0 ("invalid device index").
    """
    if device.index != 0:  # None → spyre:0; 1 and up raise
        device = torch.device(device.type, cards.check_index(device))
    size = [int(s) for s in size]
    stride = contiguous_strides(size) if stride is None else [int(s) for s in stride]
    storage = memory.allocate_storage(storage_nbytes(size, stride, dtype), device)
    return device_view(storage, 0, size, stride, dtype)


def rebind(t: torch.Tensor, size: Sequence[int], stride: Sequence[int] | None) -> None:
    """Point device tensor ``t`` at new device memory of ``size`` (the out= resize path).

    Used only for ``out=`` tensors of the wrong shape; ``aten::resize_`` itself is unsupported.
    """
    size = [int(s) for s in size]
    stride = contiguous_strides(size) if stride is None else [int(s) for s in stride]
    device = t.device if t.device.index is not None else torch.device(t.device.type, 0)
    storage = memory.allocate_storage(storage_nbytes(size, stride, t.dtype), device)
    _set_storage.redispatch(_CPU_KEYSET, t, storage, 0, size, stride)


def cpu_alias(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor sharing the bytes, size, stride and offset of device tensor ``t``."""
    storage = memory.cpu_storage(t.untyped_storage())
    out = torch.empty(0, dtype=t.dtype)
    out.set_(storage, t.storage_offset(), t.size(), t.stride())
    if t.is_neg():
        torch._C._set_neg(out, True)
    return out


def to_device(cpu: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy CPU tensor ``cpu`` into a new device tensor (keeps dense strides, else contiguous)."""
    stride = cpu.stride() if _is_non_overlapping_and_dense(cpu) else None
    out = empty_device(cpu.size(), stride, cpu.dtype, device)
    if cpu.numel():
        cpu_alias(out).copy_(cpu)
    return out


def _is_non_overlapping_and_dense(t: torch.Tensor) -> bool:
    if t.is_contiguous():
        return True
    pairs = sorted((st, s) for s, st in zip(t.size(), t.stride(), strict=True) if s != 1)
    expected = 1
    for st, s in pairs:
        if st != expected:
            return False
        expected *= s
    return True
