"""The cards of the simulation and the device indices that name them.

There is one simulated card, index 0 (design §7 describes one card per ``spyre`` device).
``device_module`` (``torch.spyre``) re-exports both functions; ``streams`` and ``tensors`` use
them to validate the ``device`` arguments they receive.
"""

from __future__ import annotations

from typing import Any

import torch


def device_count() -> int:
    """Number of Spyre cards: 1."""
    return 1


def check_index(device: Any) -> int:
    """The card index of ``device`` (``None``, an int, a ``torch.device`` or ``"spyre[:N]"``).

    ``None`` means the current card, 0.

    Raises:
        RuntimeError: the index is not one of ``range(device_count())`` (only 0 exists), e.g.
            ``torch.ones(2, device="spyre:5")`` — instead of torch's storage-device mismatch.
        ValueError: ``device`` is not a spyre device.
    """
    if device is None:
        return 0
    if isinstance(device, int):
        idx = device
    else:
        d = torch.device(device)
        if d.type != "spyre":
            raise ValueError(f"spyre: expected a spyre device, got {d}")
        idx = 0 if d.index is None else d.index
    if not 0 <= idx < device_count():
        raise RuntimeError(f"spyre: invalid device index {idx}: the simulated Spyre has device_count() == "
                           f"{device_count()} (use device 'spyre' or 'spyre:0')")
    return idx
