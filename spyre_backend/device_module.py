"""``torch.spyre``: the runtime module of the simulated Spyre device (one card, index 0).

Registered by ``spyre_backend.registration`` as ``torch.spyre``. Everything runs synchronously
on the host, so ``synchronize`` returns at once; streams and events (``spyre_backend.streams``)
keep the stream-ordering contract because every op completes before it returns.
Random numbers for device tensors come from a private CPU ``torch.Generator`` seeded through
``manual_seed``/``manual_seed_all`` (``torch.manual_seed`` calls ``manual_seed_all``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from . import memory
from .cards import check_index, device_count
from .memory import max_memory_allocated, memory_allocated, reset_peak_memory_stats
from .streams import Event, Stream, current_stream, default_stream, set_stream, stream

__all__ = [
    "SpyreDeviceProperties",
    "check_index",
    "device",
    "Stream",
    "Event",
    "is_available",
    "is_initialized",
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "get_device_properties",
    "synchronize",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "generator",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
    "mem_get_info",
    "get_amp_supported_dtype",
]

NUM_CORES = 32
SCRATCHPAD_BYTES_PER_CORE = 2 * 1024 * 1024


@dataclass(frozen=True)
class SpyreDeviceProperties:
    """Static properties of the simulated card (all sizes in bytes)."""

    name: str = "IBM Spyre (simulated)"
    num_cores: int = NUM_CORES
    scratchpad_bytes_per_core: int = SCRATCHPAD_BYTES_PER_CORE
    stick_bytes: int = memory.STICK_BYTES
    total_memory: int = 0
    compute_dtype: str = "float16"


_generator = torch.Generator(device="cpu")
_generator.manual_seed(0)


class device:  # noqa: N801 - mirrors torch.cuda.device
    """Context manager selecting a card (only index 0 exists); used by ``torch.load``."""

    def __init__(self, device: Any) -> None:
        self.idx = check_index(device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def is_available() -> bool:
    """Always True: the simulated card is always present."""
    return True


def is_initialized() -> bool:
    """Always True."""
    return True


def _is_in_bad_fork() -> bool:
    return False


def current_device() -> int:
    """Index of the current card: 0."""
    return 0


def set_device(device: Any) -> None:
    """Select a card; only index 0 exists (RuntimeError otherwise)."""
    check_index(device)


def get_device_name(device: Any = None) -> str:
    """Human name of the card."""
    check_index(device)
    return SpyreDeviceProperties.name


def get_device_properties(device: Any = None) -> SpyreDeviceProperties:
    """Properties of card ``device``: 32 cores, 2 MiB scratchpad per core, 128-byte sticks,
    ``total_memory`` = the simulated capacity in bytes."""
    check_index(device)
    return SpyreDeviceProperties(total_memory=memory.capacity())


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """``(free, total)`` device memory in bytes."""
    check_index(device)
    return memory.capacity() - memory.memory_allocated(), memory.capacity()


def synchronize(device: Any = None) -> None:
    """Wait for all work on the card: a no-op, every op completes before it returns."""
    check_index(device)


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes usable under ``torch.autocast("spyre")``."""
    return [torch.float16, torch.bfloat16]


# --- random numbers ----------------------------------------------------------------------------


def generator() -> torch.Generator:
    """The CPU generator that device RNG ops (uniform_, normal_, ...) draw from."""
    return _generator


def manual_seed(seed: int) -> None:
    """Seed the device generator. Must not call ``torch.manual_seed`` (which calls us)."""
    _generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every card (there is one)."""
    manual_seed(seed)


def seed() -> int:
    """Seed the device generator non-deterministically; returns the seed."""
    return _generator.seed()


def initial_seed() -> int:
    """The seed the device generator was last seeded with."""
    return _generator.initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    """The device generator state as a CPU ``uint8`` tensor."""
    return _generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    """Restore a state from ``get_rng_state``."""
    _generator.set_state(new_state)

