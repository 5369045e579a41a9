"""Helpers for running upstream device-generic tests (``common_device_type``) on Spyre.

Use from a ``conftest.py`` (so it runs before test modules import ``common_device_type``)::

    import spyre_backend.testing
    spyre_backend.testing.prepare_device_type_tests()

then ``instantiate_device_type_tests(TestX, globals(), only_for="privateuse1")`` names the
instantiated classes ``TestXSPYRE`` with tests ``test_y_spyre_float16`` — consistently, because
``PrivateUse1TestBase.device_type`` is set to ``"spyre"`` before any instantiation (otherwise
names alternate between ``...PRIVATEUSE1`` and ``...SPYRE``). If ``common_device_type`` was
imported before the device existed, ``PrivateUse1TestBase`` is added to its frozen list of test
bases.
"""

from __future__ import annotations

import torch

from . import registration

__all__ = ["prepare_device_type_tests"]


def prepare_device_type_tests() -> type:
    """Register the device and point ``PrivateUse1TestBase`` at it; returns that base class."""
    registration.register()
    from torch.testing._internal import common_device_type as cdt

    base = cdt.PrivateUse1TestBase
    base.device_type = registration.DEVICE_TYPE
    base.device_mod = torch.spyre
    base.primary_device = f"{registration.DEVICE_TYPE}:0"
    # Repair a too-early import: the bases list is computed when common_device_type is imported.
    if base not in cdt.device_type_test_bases:
        cdt.device_type_test_bases.append(base)
    return base
