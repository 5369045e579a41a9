"""Exceptions raised by the simulated Spyre device.

Hierarchy (each also subclasses the builtin a PyTorch user would expect)::

    SpyreError
     ├── SpyreUnsupportedOpError   (NotImplementedError) op has no Spyre kernel / not in the table
     └── SpyreDtypeError           (TypeError)           dtype not supported by that op on Spyre

Out-of-memory is reported with ``torch.OutOfMemoryError`` (not part of this tree) so code that
already handles CUDA OOM handles Spyre OOM the same way.
"""

from __future__ import annotations

__all__ = ["SpyreError", "SpyreUnsupportedOpError", "SpyreDtypeError"]


class SpyreError(Exception):
    """Base class of every Spyre-specific error."""


class SpyreUnsupportedOpError(SpyreError, NotImplementedError):
    """An aten op reached the device but has no Spyre kernel (message names the aten op)."""


class SpyreDtypeError(SpyreError, TypeError):
    """A tensor's dtype is not supported by the aten op on Spyre (message names dtype and op)."""
