"""Backend profiles: which upstream areas a backend's tests can be affected by.

A profile names the areas the backend hooks (``ops``: aten kernels and their Python
decompositions/references; ``modules``: ``torch.nn`` modules; ``device``: the PrivateUse1
extension points) and the areas it declines (scope preferences such as "no distributed,
no dynamo").  Scope keeps a test only when its area is both touched and wanted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendProfile:
    """Scope preferences of one backend.

    ``areas``: the areas whose changes can affect the backend's tests.  ``excluded``: areas the
    backend opts out of even when they change (their files select nothing).
    """

    name: str
    areas: frozenset[str]
    excluded: frozenset[str] = frozenset()

    def wants(self, area: str) -> bool:
        """True if a change in ``area`` can select tests for this backend."""
        return area in self.areas and area not in self.excluded


#: The bundled simulated device: eager aten ops through PrivateUse1, nn modules, no
#: distributed/dynamo/inductor/CUDA (the simulator runs none of them).
SPYRE_SIM = BackendProfile(
    name="spyre-sim",
    areas=frozenset({"ops", "modules", "device", "testing"}),
    excluded=frozenset({"distributed", "dynamo", "inductor", "cuda", "mps", "xpu", "rocm"}),
)

PROFILES: dict[str, BackendProfile] = {SPYRE_SIM.name: SPYRE_SIM}


def get_profile(name: str) -> BackendProfile:
    """The profile called ``name``; raises ``KeyError`` listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown backend profile {name!r}; known: {sorted(PROFILES)}") from None
