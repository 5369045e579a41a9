"""Exceptions raised by the simulated Spyre device.

Hierarchy (each also subclasses the builtin a PyTorch user would expect)::

    SpyreError
     ├── SpyreUnsupportedOpError   (NotImplementedError) op has no Spyre kernel / not in the table
     ├── SpyreDtypeError           (TypeError)           dtype not supported by that op on Spyre
     └── SpyreCompileError         (RuntimeError)        the Spyre compiler/runtime rejects the call
                                                         (a capability rule, ``capabilities.yaml``)

Out-of-memory is reported with ``torch.OutOfMemoryError`` (not part of this tree) so code that
already handles CUDA OOM handles Spyre OOM the same way.
"""

from __future__ import annotations

__all__ = ["SpyreError", "SpyreUnsupportedOpError", "SpyreDtypeError", "SpyreCompileError", "REFUSALS"]


class SpyreError(Exception):
    """Base class of every Spyre-specific error.

    Attributes (both None when the raiser did not know them):
        aten_op: the aten overload that reached the device, e.g. ``"aten::pow.Tensor_Scalar_out"``.
        reason: the short reason, without the ``spyre: <op>`` prefix, e.g. ``"has no Spyre kernel"``.
    """

    def __init__(self, message: str, *, aten_op: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.aten_op = aten_op
        self.reason = reason


class SpyreUnsupportedOpError(SpyreError, NotImplementedError):
    """An aten op reached the device but has no Spyre kernel (message names the aten op)."""


class SpyreDtypeError(SpyreError, TypeError):
    """A tensor's dtype is not supported by the aten op on Spyre (message names dtype and op)."""


class SpyreCompileError(SpyreError, RuntimeError):
    """The op has a kernel but real Spyre rejects this call (an in-device copy, a non-contiguous
    kernel input); the message names the aten op, dtype, capability rule and its source."""


#: The device's deterministic refusals: the same call on the same build raises them every time,
#: so a rerun cannot change the outcome (the spec runner does not rerun them:
#: ``test_specs.values.refusals``).  An injected fault (``spyre_backend.faults``) never raises one.
REFUSALS: tuple[type[SpyreError], ...] = (SpyreUnsupportedOpError, SpyreDtypeError, SpyreCompileError)
