"""A simulated IBM Spyre accelerator, registered with PyTorch as device ``spyre``.

``import spyre_backend`` registers the device: ``torch.device("spyre")``, ``t.to("spyre")``,
``t.spyre()``, ``t.cpu()``, factories with ``device="spyre"``, views, in-place ops and
autograd all work; tensors live in stick-rounded simulated device memory (host RAM) and every
aten op runs on the CPU through one boxed fallback, limited by the op support table.

Modules: ``registration`` (wiring into torch), ``memory`` (allocation, accounting, OOM),
``tensors`` (device tensors over CPU memory), ``fallback`` (the op runner), ``support`` and
``support.yaml`` (the op table), ``numerics`` (fp16 policy), ``adapters`` (op rewrites),
``faults`` (fault injection), ``device_module`` (``torch.spyre``), ``errors``,
``compiler`` and ``graph_rewrites`` (``torch.compile(..., backend="spyre")``), ``opinfo_compare``,
``opinfo_check`` and ``opinfo_results`` (the OpInfo sweep and its committed outcome table).

Environment (all read once at import):

* ``SPYRE_SIM_MEMORY_BYTES`` — device capacity in bytes (default 8 GiB);
* ``SPYRE_SIM_PRECISION`` — ``fp16`` (default: float32 computed in float16) or ``exact``;
* ``SPYRE_SIM_FAULTS`` — fault injection spec (see ``spyre_backend.faults``).
"""

from __future__ import annotations

from . import registration as _registration

_registration.register()

from . import compiler as _compiler  # noqa: E402

_compiler.register()

from . import support  # noqa: E402
from .errors import SpyreCompileError, SpyreDtypeError, SpyreError, SpyreUnsupportedOpError  # noqa: E402
from .numerics import SpyrePrecisionWarning  # noqa: E402

DEVICE_TYPE = "spyre"

__all__ = [
    "DEVICE_TYPE",
    "SpyreError",
    "SpyreUnsupportedOpError",
    "SpyreDtypeError",
    "SpyreCompileError",
    "SpyrePrecisionWarning",
    "support",
]
