"""The task interface between the web handler and the work it hands off.

The webhook handler only verifies, records and acknowledges (Zuul's habit); after the delivery
row is committed it calls ``TaskQueue.submit_delivery(delivery_id)`` exactly once per accepted
delivery, and once more per still-``received`` delivery at application startup (restart
recovery).  Implementations must return quickly (GitHub counts a response slower than 10 s as
failed) and must tolerate a delivery being submitted twice — processing claims the row
atomically (``relay.store.claim_delivery``) so it runs once.

``InProcessQueue`` runs the work on one background thread of this process (the default when
``RELAY_BROKER_URL`` is unset); a Celery queue will implement the same protocol.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["TaskQueue", "InProcessQueue"]

log = logging.getLogger(__name__)
_STOP = object()


@runtime_checkable
class TaskQueue(Protocol):
    """Where accepted deliveries go to be processed."""

    def submit_delivery(self, delivery_id: str) -> None:
        """Schedule processing of the stored delivery ``delivery_id``; never blocks on the work."""

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting work, give the delivery in hand up to ``timeout`` s to finish and
        drop the rest of the local backlog: those rows are still ``received`` in the database
        and restart recovery submits them again.  A delivery still running after ``timeout``
        is abandoned (its row stays ``processing``; see the implementations)."""


class InProcessQueue:
    """A FIFO worked by one daemon thread that calls ``handler(delivery_id)`` per submission.

    One thread keeps pipeline runs from competing for the CPU.  A handler exception is logged
    and swallowed (the handler is responsible for recording failures on the delivery row).
    The thread starts on first submit.  It is a daemon thread: a delivery still running when
    ``close`` gives up dies with the process, its row left ``processing``, which restart
    recovery (``relay.service.factory.recover_pending``) resets to ``received`` and runs again —
    the same as after a crash, so shutdown never waits for a pipeline run (minutes).
    """

    def __init__(self, handler: Callable[[str], None], *, name: str = "relay-worker") -> None:
        self._handler = handler
        self._name = name
        self._queue: queue.Queue[object] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._current: str | None = None  # the delivery being handled, if any

    def submit_delivery(self, delivery_id: str) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("task queue is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put(delivery_id)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP or self._closed:
                    if item is _STOP:
                        return
                    continue  # closing: leave it to restart recovery
                self._current = str(item)
                self._handler(self._current)
            except Exception:  # noqa: BLE001 - the worker must survive any handler bug
                log.exception("processing delivery %s crashed", item)
            finally:
                self._current = None
                self._queue.task_done()

    def join(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted delivery has been handled; ``False`` on timeout (tests)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self, timeout: float | None = 10.0) -> None:
        """See ``TaskQueue.close``; returns after at most ``timeout`` s (``None``: no limit)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)
            if thread.is_alive() and (current := self._current) is not None:
                log.warning("task queue closed while delivery %s was still processing; it stays "
                            "'processing' and restart recovery runs it again", current)
        # the backlog left behind (not counting the stop marker a still-busy thread has not read)
        dropped = max(0, self._queue.qsize() - (1 if thread is not None and thread.is_alive() else 0))
        if dropped:
            log.info("task queue closed with %d deliveries left for restart recovery", dropped)
