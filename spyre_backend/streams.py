"""Streams and events of the simulated card (``torch.spyre.Stream``, ``Event``, ``stream()``).

Ordering contract (the one CUDA streams give, which torch-spyre mirrors): work issued to one
stream runs in issue order; work on different streams is ordered only by ``Stream.wait_event``
/ ``wait_stream`` / ``Event.wait``; the host sees results after ``synchronize()`` /
``Event.synchronize()`` / ``Stream.synchronize()``, and ``query()`` tells whether the work
recorded so far has finished.

Why synchronous execution satisfies it: the simulated device runs every aten op to completion
inside the call that issues it (the fallback returns only after the CPU kernel finished). So
at any moment all issued work on all streams has finished: in-stream order is issue order, any
cross-stream wait is already satisfied when it is issued, synchronization has nothing to wait
for, and ``query()`` is True. This is the most serialised schedule a real device could choose,
so code that is correct on Spyre's asynchronous streams is correct here (the converse does not
hold: a missing ``wait_event`` is not detected). What is real: the current-stream selection
(``stream()`` context, ``set_stream``), which stream an event was recorded on, and timing —
``Event.elapsed_time`` is the host wall-clock time between the two ``record`` calls, in ms,
which equals device time because the device is the host.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch

from .cards import check_index

__all__ = ["Stream", "Event", "stream", "set_stream", "current_stream", "default_stream"]

_ids = itertools.count(1)


def _device(device: Any) -> torch.device:
    return torch.device("spyre", check_index(device))


class Stream:
    """An in-order queue of work on the card (stream 0 is the default stream).

    ``priority`` is kept for API compatibility; the simulation has no scheduler to honour it.
    """

    def __init__(self, device: Any = None, priority: int = 0, *, _stream_id: int | None = None) -> None:
        self.device = _device(device)
        self.priority = priority
        self.stream_id = next(_ids) if _stream_id is None else _stream_id

    def __repr__(self) -> str:
        return f"torch.spyre.Stream(device={self.device}, stream_id={self.stream_id})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self) -> int:
        return hash((self.device, self.stream_id))

    def synchronize(self) -> None:
        """Wait for all work on this stream (already finished; returns at once)."""

    def query(self) -> bool:
        """True when all work on this stream has finished (always: see the module docstring)."""
        return True

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (or a new one) on this stream and return it."""
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Order later work on this stream after ``event`` (already satisfied when issued;
        waiting on a never-recorded event is a no-op, as in CUDA)."""

    def wait_stream(self, stream: Stream) -> None:
        """Order later work on this stream after all work issued so far on ``stream``."""
        self.wait_event(stream.record_event())


class Event:
    """A marker after the work issued so far on a stream.

    Attributes:
        stream: the stream of the last ``record`` (None before the first).
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("spyre: interprocess events are not supported")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.stream: Stream | None = None
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point after all work issued so far on ``stream`` (default: current)."""
        self.stream = stream if stream is not None else current_stream()
        self._time = time.perf_counter()

    def query(self) -> bool:
        """True when the marked work has finished (always; also before any ``record``)."""
        return True

    def synchronize(self) -> None:
        """Block the host until the marked work finished (already; returns at once)."""

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` (default: current) wait for this event."""
        (stream if stream is not None else current_stream()).wait_event(self)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's ``record`` to ``end_event``'s (may be 0.0, never < 0
        for events recorded in that order).

        Raises:
            RuntimeError: timing is disabled on either event, or either was not recorded.
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("spyre: both events need enable_timing=True")
        if self._time is None or end_event._time is None:
            raise RuntimeError("spyre: both events must be recorded before elapsed_time")
        return (end_event._time - self._time) * 1000.0


_default: Stream | None = None
_local = threading.local()


def default_stream(device: Any = None) -> Stream:
    """The card's default stream (``stream_id`` 0)."""
    global _default
    _device(device)
    if _default is None:
        _default = Stream(_stream_id=0)
    return _default


def current_stream(device: Any = None) -> Stream:
    """The stream work is issued to in this thread (the default stream unless selected)."""
    _device(device)
    return getattr(_local, "stream", None) or default_stream()


def set_stream(s: Stream) -> None:
    """Make ``s`` the current stream of this thread."""
    _local.stream = s


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[None]:
    """Context manager selecting ``s`` as the current stream (None: leave it unchanged)."""
    if s is None:
        yield
        return
    previous = current_stream()
    set_stream(s)
    try:
        yield
    finally:
        set_stream(previous)
