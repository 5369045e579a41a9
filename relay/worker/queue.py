"""The task interface between the web handler and the work it hands off.

The webhook handler only verifies, records and acknowledges (Zuul's habit); after the delivery
row is committed it calls ``TaskQueue.submit_delivery(delivery_id)`` exactly once per accepted
delivery, and once more per still-``received`` delivery at application startup (restart
recovery).  Implementations must return quickly (GitHub counts a response slower than 10 s as
failed) and must tolerate a delivery being submitted twice — processing claims the row
atomically (``relay.store.deliveries.claim_many``) so it runs once.

``InProcessQueue`` runs the work on a small pool of background threads of this process (the
default when ``RELAY_BROKER_URL`` is unset; ``RELAY_WORKERS`` threads, default 2); a Celery queue
implements the same protocol.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["TaskQueue", "InProcessQueue"]

log = logging.getLogger(__name__)


@runtime_checkable
class TaskQueue(Protocol):
    """Where accepted deliveries go to be processed."""

    def submit_delivery(self, delivery_id: str) -> None:
        """Schedule processing of the stored delivery ``delivery_id``; never blocks on the work."""

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting work, give the deliveries in hand up to ``timeout`` s to finish and
        drop the rest of the local backlog: those rows are still ``received`` in the database
        and restart recovery submits them again.  A delivery still running after ``timeout``
        is abandoned (its row stays ``processing``; see the implementations)."""


class InProcessQueue:
    """A pool of ``workers`` daemon threads calling ``handler(delivery_id)`` per submission —
    or, with a ``batch_handler``, ``batch_handler(ids)`` with every due submission up to
    ``max_batch`` at once: a backlog (a burst of webhooks) is then claimed and finished in one
    transaction each instead of two per delivery (``relay.worker.processing.process_deliveries``).
    It may give ids back (its second argument; deliveries that may run long, one per batch):
    they are due again at once, for the next free thread.

    Work is taken in order of its due time, then of submission: ``submit_delivery`` is due at
    once, ``submit_later(id, delay_s)`` after ``delay_s`` seconds (a transient failure's retry,
    ``relay.worker.processing``) — the retry is started at its announced time by the first free
    thread, so one long pipeline run no longer holds every other delivery; with every thread
    busy it waits for the first one to finish.  Keep ``workers`` small (default 1 here,
    ``RELAY_WORKERS`` = 2 in a served relay): each run starts pytest processes of its own.

    A handler exception is logged and swallowed (the handler records failures on the delivery
    row).  Threads start on first submit.  They are daemon threads: a delivery still running
    when ``close`` gives up dies with the process, its row left ``processing``, which restart
    recovery (``relay.service.lifecycle.recover_pending``) resets to ``received`` and runs again
    — the same as after a crash, so shutdown never waits for a pipeline run (minutes).
    """

    def __init__(self, handler: Callable[[str], None], *, workers: int = 1,
                 name: str = "relay-worker",
                 batch_handler: Callable[[list[str], Callable[[list[str]], None]], None] | None = None,
                 max_batch: int = 256, linger_s: float = 0.05) -> None:
        if workers < 1:
            raise ValueError("an in-process queue needs at least one worker thread")
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._handler = handler
        self._batch_handler = batch_handler
        self._max_batch = max_batch if batch_handler is not None else 1
        self._linger_s = linger_s if batch_handler is not None else 0.0
        self._name = name
        self._workers = workers
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []  # (due monotonic time, sequence, id)
        self._seq = itertools.count()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._current: dict[str, list[str]] = {}  # thread name -> the deliveries in hand

    @property
    def workers(self) -> int:
        """The number of worker threads (``RELAY_WORKERS``)."""
        return self._workers

    def submit_delivery(self, delivery_id: str) -> None:
        """Process ``delivery_id`` as soon as a thread is free (FIFO among due work)."""
        self.submit_later(delivery_id, 0.0)

    def submit_later(self, delivery_id: str, delay_s: float) -> None:
        """Process ``delivery_id`` ``delay_s`` seconds from now; raises ``RuntimeError`` once
        the queue is closed (the row stays ``received`` for restart recovery)."""
        with self._cond:
            if self._closed:
                raise RuntimeError("task queue is closed")
            heapq.heappush(self._heap, (time.monotonic() + max(0.0, delay_s), next(self._seq),
                                        delivery_id))
            while len(self._threads) < self._workers:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._name}-{len(self._threads) + 1}")
                self._threads.append(thread)
                thread.start()
            self._cond.notify()

    def _next(self) -> list[str] | None:
        """The next due deliveries, at most ``max_batch`` (waiting for one), or ``None`` once
        closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                if self._heap and self._heap[0][0] <= now:
                    self._linger(now)
                    now = time.monotonic()
                    if self._closed or not self._heap or self._heap[0][0] > now:
                        continue  # another thread took them meanwhile
                    taken = [heapq.heappop(self._heap)[2]]
                    while (self._heap and self._heap[0][0] <= now
                           and len(taken) < self._max_batch):
                        taken.append(heapq.heappop(self._heap)[2])
                    self._current[threading.current_thread().name] = taken
                    return taken
                self._cond.wait(self._heap[0][0] - now if self._heap else None)

    def _linger(self, since: float) -> None:
        """With a batch handler: wait up to ``linger_s`` (50 ms) for a batch to fill while
        fewer than ``max_batch`` (256) submissions wait — under a burst, one claim and one
        final-state transaction then serve dozens of deliveries instead of one or two (the
        Nagle habit; on the bench machine 256/50 ms gave ~20 % more intake throughput beside
        processing than 64/20 ms); a lone delivery starts at most 50 ms later.  Called holding
        the lock."""
        deadline = since + self._linger_s
        while not self._closed and 0 < len(self._heap) < self._max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _work(self) -> None:
        me = threading.current_thread().name
        while (taken := self._next()) is not None:
            try:
                if self._batch_handler is not None:
                    self._batch_handler(taken, self._give_back)
                else:
                    self._handler(taken[0])
            except Exception:  # noqa: BLE001 - the worker must survive any handler bug
                log.exception("processing deliveries %s crashed", ", ".join(taken[:10]))
            finally:
                with self._cond:
                    self._current.pop(me, None)
                    self._cond.notify_all()

    def _give_back(self, ids: list[str]) -> None:
        """Ids of its batch a handler does not take: due again at once, ahead of later
        submissions, for the next free thread."""
        if not ids:
            return
        me = threading.current_thread().name
        with self._cond:
            given = set(ids)
            self._current[me] = [d for d in self._current.get(me, []) if d not in given]
            for delivery_id in ids:
                heapq.heappush(self._heap, (0.0, next(self._seq), delivery_id))
            self._cond.notify_all()

    def in_hand(self) -> list[str]:
        """The deliveries being handled right now (at most ``workers`` × ``max_batch``)."""
        with self._cond:
            return [d for taken in self._current.values() for d in taken]

    def known(self) -> set[str]:
        """Every delivery this queue holds: scheduled (now or later) or being handled."""
        with self._cond:
            return {entry[2] for entry in self._heap} | set(self.in_hand())  # an RLock

    def scheduled(self) -> int:
        """Submissions not yet taken by a thread (due now or later)."""
        with self._cond:
            return len(self._heap)

    def join(self, timeout: float = 10.0) -> bool:
        """Wait until no due submission is waiting and no thread is busy; ``False`` on timeout
        (tests).  Retries scheduled for later do not count until they are due."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._current or (self._heap and self._heap[0][0] <= time.monotonic()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def close(self, timeout: float | None = 10.0) -> None:
        """See ``TaskQueue.close``; returns after at most ``timeout`` s (``None``: no limit)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            dropped = len(self._heap)
            self._heap.clear()
            threads = list(self._threads)
            self._cond.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for current in self.in_hand():
            log.warning("task queue closed while delivery %s was still processing; it stays "
                        "'processing' and restart recovery runs it again", current)
        if dropped:
            log.info("task queue closed with %d deliveries left for restart recovery", dropped)
