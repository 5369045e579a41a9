"""``CeleryQueue``: the ``relay.worker.queue.TaskQueue`` of the web app when a broker is configured.

``submit_delivery`` publishes ``relay.process_delivery(delivery_id)`` to the broker (a few ms;
it never waits for the work) and returns; workers started by ``relay worker`` do the rest.
``close`` stops accepting deliveries; the backlog stays on the broker.
"""

from __future__ import annotations

import logging

from relay.settings import Settings
from relay.worker.celery.config import make_celery
from relay.worker.celery.names import PROCESS_DELIVERY

__all__ = ["CeleryQueue"]

log = logging.getLogger(__name__)


class CeleryQueue:
    """Publish deliveries to Celery.  Raises ``ConfigError`` without ``RELAY_BROKER_URL``."""

    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings)
        self._closed = False

    def submit_delivery(self, delivery_id: str) -> None:
        """Send ``relay.process_delivery``; raises ``RuntimeError`` once closed, and the
        broker's error when it is unreachable (the row stays ``received`` for recovery)."""
        if self._closed:
            raise RuntimeError("task queue is closed")
        self.app.send_task(PROCESS_DELIVERY, args=(delivery_id,))

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting deliveries (the backlog stays on the broker).  The broker connections
        are left to the process: kombu keeps them in process-wide pools keyed by URL, so
        force-closing them here would break every other Celery app of this process on the same
        broker ("Acquire on closed pool")."""
        self._closed = True
