"""Precision policy of the simulated device.

* float16 is the native compute dtype.
* bfloat16 is computed as bfloat16.
* float32 inputs of ``compute`` ops are downcast to float16, computed, and the float results are
  returned as float32 (the values carry fp16 error). The first time this happens in a process,
  ``warnings.warn(..., SpyrePrecisionWarning)`` is emitted once.
* ``SPYRE_SIM_PRECISION=exact`` (read at import) disables the downcast: every op computes in
  its input dtype. The default is ``SPYRE_SIM_PRECISION=fp16``.
"""

from __future__ import annotations

import os
import warnings

import torch

__all__ = ["SpyrePrecisionWarning", "PRECISION", "downcast_fp32", "warn_downcast_once"]


class SpyrePrecisionWarning(UserWarning):
    """Emitted once per process when float32 math is computed in float16 on Spyre."""


def _read_precision() -> str:
    raw = os.environ.get("SPYRE_SIM_PRECISION", "fp16").strip().lower() or "fp16"
    if raw not in ("fp16", "exact"):
        raise ValueError(f"SPYRE_SIM_PRECISION must be 'fp16' or 'exact', got {raw!r}")
    return raw


PRECISION: str = _read_precision()
downcast_fp32: bool = PRECISION == "fp16"
_warned = False


def warn_downcast_once(op_name: str) -> None:
    """Warn (once per process) that ``op_name`` computed float32 inputs in float16."""
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(
        f"spyre: float32 tensors are computed in float16 on Spyre (first seen in {op_name}); "
        "results are returned as float32 with fp16 precision. "
        "Set SPYRE_SIM_PRECISION=exact to compute in float32.",
        SpyrePrecisionWarning,
        stacklevel=3,
    )


def to_compute(t: torch.Tensor) -> torch.Tensor:
    """The float16 copy of a float32 CPU tensor (other dtypes returned unchanged)."""
    if t.dtype is torch.float32:
        return t.to(torch.float16)
    return t
