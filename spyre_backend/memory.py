"""Device memory of the simulated Spyre card: stick-rounded allocations with exact accounting.

Every device storage is backed by a private CPU ``uint8`` buffer (its *owner*). The device
storage is a PrivateUse1 ``UntypedStorage`` built over the owner's data pointer, so the device
tensor and the CPU view used to compute on it share the same bytes. A ``weakref.finalize`` on
the device storage returns the bytes to the pool when the last tensor using it dies.

Accounting rules:

* every allocation is rounded up to whole 128-byte sticks (``STICK_BYTES``); a 1-element fp16
  tensor costs 128 bytes, a 0-byte storage costs 0 bytes;
* capacity is ``SPYRE_SIM_MEMORY_BYTES`` (bytes, read at import; default ``DEFAULT_CAPACITY``
  = 8 GiB — real cards carry up to 128 GB, but the simulation lives in host RAM);
* an allocation past capacity raises ``torch.OutOfMemoryError`` naming the requested and free
  bytes.
"""

from __future__ import annotations

import os
import threading
import weakref

import torch

__all__ = [
    "STICK_BYTES",
    "DEFAULT_CAPACITY",
    "capacity",
    "round_to_sticks",
    "allocate_storage",
    "cpu_storage",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
]

STICK_BYTES = 128
DEFAULT_CAPACITY = 8 * 1024**3


def _read_capacity() -> int:
    raw = os.environ.get("SPYRE_SIM_MEMORY_BYTES")
    if raw is None or raw.strip() == "":
        return DEFAULT_CAPACITY
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"SPYRE_SIM_MEMORY_BYTES must be an integer byte count, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"SPYRE_SIM_MEMORY_BYTES must be >= 0, got {value}")
    return value


_CAPACITY = _read_capacity()
_lock = threading.Lock()
_allocated = 0
_peak = 0
# data_ptr -> (owner CPU uint8 tensor, rounded bytes)
_CPU = torch.device("cpu")
# data_ptr -> (owning CPU uint8 tensor, charged bytes, non-owning CPU alias storage)
_owners: dict[int, tuple[torch.Tensor, int, torch.UntypedStorage]] = {}


def capacity() -> int:
    """Total simulated device memory in bytes (``SPYRE_SIM_MEMORY_BYTES`` or 8 GiB)."""
    return _CAPACITY


def round_to_sticks(nbytes: int) -> int:
    """Round ``nbytes`` up to a whole number of 128-byte sticks (0 stays 0)."""
    return -(-int(nbytes) // STICK_BYTES) * STICK_BYTES


def _release(ptr: int) -> None:
    global _allocated
    with _lock:
        entry = _owners.pop(ptr, None)
        if entry is not None:
            _allocated -= entry[1]


def allocate_storage(nbytes: int, device: torch.device) -> torch.UntypedStorage:
    """Allocate a device storage of ``nbytes`` bytes on ``device`` (a ``spyre`` device).

    The pool is charged ``round_to_sticks(nbytes)`` bytes until the storage dies.

    Raises:
        torch.OutOfMemoryError: the rounded request does not fit in the free bytes.
    """
    global _allocated, _peak
    nbytes = int(nbytes)
    if nbytes == 0:
        # All 0-byte storages share data_ptr 0: nothing to own or account.
        return torch._C._construct_storage_from_data_pointer(0, device, 0)
    rounded = round_to_sticks(nbytes)
    with _lock:
        free = _CAPACITY - _allocated
        if rounded > free:
            raise torch.OutOfMemoryError(
                f"spyre: out of memory: tried to allocate {nbytes} bytes "
                f"({rounded} bytes in 128-byte sticks); {free} bytes free of "
                f"{_CAPACITY} bytes total, {_allocated} bytes allocated"
            )
        _allocated += rounded
        _peak = max(_peak, _allocated)
    try:
        owner = torch.empty(rounded, dtype=torch.uint8)
    except BaseException:
        with _lock:
            _allocated -= rounded
        raise
    ptr = owner.data_ptr()
    storage = torch._C._construct_storage_from_data_pointer(ptr, device, nbytes)
    # The CPU alias storage is built once here (hot path: every op reads device tensors).
    alias = torch._C._construct_storage_from_data_pointer(ptr, _CPU, nbytes)
    with _lock:
        _owners[ptr] = (owner, rounded, alias)
    weakref.finalize(storage, _release, ptr)
    return storage


def cpu_storage(device_storage: torch.UntypedStorage) -> torch.UntypedStorage:
    """A non-owning, non-resizable CPU ``UntypedStorage`` over the bytes of a device storage.

    The caller must keep the device storage alive while the CPU storage is in use. Storages
    from ``allocate_storage`` reuse the alias built at allocation (no new object per op).
    """
    ptr = device_storage.data_ptr()
    entry = _owners.get(ptr)
    if entry is not None and entry[2].nbytes() == device_storage.nbytes():
        return entry[2]
    return torch._C._construct_storage_from_data_pointer(ptr, _CPU, device_storage.nbytes())


def memory_allocated(device: object = None) -> int:
    """Bytes currently allocated on the device (stick-rounded)."""
    return _allocated


def max_memory_allocated(device: object = None) -> int:
    """Peak of ``memory_allocated()`` in bytes since start or the last reset."""
    return _peak


def reset_peak_memory_stats(device: object = None) -> None:
    """Reset the peak tracked by ``max_memory_allocated()`` to the current allocation."""
    global _peak
    with _lock:
        _peak = _allocated
