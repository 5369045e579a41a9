"""Recovery while serving: every accepted delivery is worked on again until it is final.

Restart recovery (``relay.service.lifecycle.recover_pending``) covers a relay that stopped; this
covers a relay that keeps running while a part under it failed — the submit after the commit
raised (the broker restarting), an attempt met the database restarting and could not even
record that (its row stays ``processing``), a retry timer was lost.  ``Recovery`` runs one
daemon thread; every ``RELAY_RECOVER_INTERVAL_S`` seconds (default 30) it calls ``sweep``:

* ``received`` deliveries whose retry is due and that were stored more than one interval ago,
  and that the in-process queue does not hold, are submitted again (a duplicate submit is
  harmless: processing claims the row atomically) and not again for ``HOLD_INTERVALS``
  intervals (``next_attempt_at``), so a broker backlog older than the interval is not
  multiplied at every sweep;
* in-process only: ``processing`` rows no worker thread of this relay holds (checked before and
  after reading them, so a claim racing the sweep is never taken) and whose lease nobody renews
  (``relay.store.leases``: another relay process on the same database working on one keeps its
  lease alive, so it is never taken from it) are reset to ``received`` and
  submitted — after ``POISON_ATTEMPTS`` interrupted claims they end ``failed`` instead (a relay
  with Celery workers leaves ``processing`` to the broker's redelivery: a worker may still hold
  it);
* dispatch rows still ``pending`` whose delivery is final end ``failed``.

A sweep that meets the database down logs one line and tries again at the next interval.
So an accepted delivery reaches a final state within about one interval after the failed
part is back (plus its own retry delays).
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from relay.store.deliveries import (
    due_received,
    end_orphan_dispatches,
    hold_received,
    reset_processing,
)
from relay.store.leases import expired_processing_ids
from relay.store.tables import utcnow
from relay.worker.queue import InProcessQueue

__all__ = ["Recovery", "HOLD_INTERVALS"]

log = logging.getLogger(__name__)
#: sweeps a re-submitted delivery is left alone before it may be submitted again
HOLD_INTERVALS = 4


class Recovery:
    """The recovery thread of one relay; ``queue`` is its ``TaskQueue`` (looked up through
    ``get_queue`` at each sweep, so a replaced ``app.state.queue`` is used)."""

    def __init__(self, session_factory: Any, get_queue: Any, interval_s: float) -> None:
        self._sf: Any = session_factory
        self._get_queue = get_queue
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="relay-recovery", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except Exception as exc:  # noqa: BLE001 - the database may be down: next interval
                log.warning("recovery sweep failed (%s: %s); retried in %g s",
                            type(exc).__name__, str(exc).splitlines()[0][:200], self.interval_s)

    def sweep(self) -> dict[str, int]:
        """One pass (see the module docstring); returns ``{resubmitted, reset, given_up,
        dispatches_ended}``."""
        queue = self._get_queue()
        in_process = isinstance(queue, InProcessQueue)
        sf: sessionmaker[Session] = self._sf()
        counts = {"resubmitted": 0, "reset": 0, "given_up": 0, "dispatches_ended": 0}
        stale: list[str] = []
        with sf() as session:
            if in_process:
                before = queue.known()
                stale = [d for d in expired_processing_ids(session) if d not in before]
                stale = [d for d in stale if d not in queue.known()]
                counts["reset"], counts["given_up"] = reset_processing(session, stale)
            held = queue.known() if in_process else set()
            due = [d for d in due_received(session, utcnow() - timedelta(seconds=self.interval_s))
                   if d not in held and d not in stale] + stale
            counts["dispatches_ended"] = end_orphan_dispatches(session)
            hold_received(session, due, utcnow() + timedelta(
                seconds=max(1.0, self.interval_s) * HOLD_INTERVALS))
        for delivery_id in due:
            try:
                queue.submit_delivery(delivery_id)
            except Exception as exc:  # noqa: BLE001 - broker still down: next interval
                log.warning("recovery: submitting %s failed (%s); retried in %g s",
                            delivery_id, type(exc).__name__, self.interval_s)
                break
            counts["resubmitted"] += 1
        if any(counts.values()):
            log.warning("recovery: %s", ", ".join(f"{k} {v}" for k, v in counts.items() if v))
        return counts
