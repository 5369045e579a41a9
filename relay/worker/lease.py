"""The heartbeat of an attempt: it renews the leases of the deliveries it works on.

``Heartbeat(session_factory, ids, lease_s)`` is a context manager around the work on claimed
deliveries (``relay.worker.processing.process_deliveries``): a daemon thread renews their
leases (``relay.store.leases.renew``) every ``lease_s / 3`` seconds until the block ends.  So a
planning step slower than ``RELAY_VISIBILITY_TIMEOUT_S`` — the broker hands its task out again —
or than another relay process's recovery interval still holds its delivery, and nothing runs it
a second time; an attempt that dies stops renewing, and after ``lease_s`` its delivery is free
for recovery.  A renewal that fails (the database restarting) is logged and tried again at the
next beat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from sqlalchemy.orm import Session

from relay.store.leases import renew

__all__ = ["Heartbeat"]

log = logging.getLogger(__name__)


class Heartbeat:
    """Renews the leases of ``ids`` every ``lease_s / 3`` s while the ``with`` block runs."""

    def __init__(self, session_factory: Callable[[], Session], ids: list[str],
                 lease_s: float) -> None:
        self._sf = session_factory
        self.ids = list(ids)
        self.lease_s = lease_s
        self.beats = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        if self.ids:
            self._thread = threading.Thread(target=self._run, name="relay-lease-heartbeat",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                with self._sf() as session:
                    renew(session, self.ids, self.lease_s)
                self.beats += 1
            except Exception as exc:  # noqa: BLE001 - the database may be restarting: next beat
                log.warning("renewing the leases of %d deliveries failed (%s); next beat in %g s",
                            len(self.ids), type(exc).__name__, self.lease_s / 3)
