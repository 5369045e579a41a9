"""``CeleryQueue``: the ``relay.worker.queue.TaskQueue`` of the web app when a broker is configured.

``submit_delivery`` publishes ``relay.process_delivery(delivery_id)`` to the broker (a few ms;
it never waits for the work) and returns; workers started by ``relay worker`` do the rest.
``close`` releases the broker connection pool; the backlog stays on the broker.
"""

from __future__ import annotations

import logging

from relay.worker.celery.config import make_celery
from relay.worker.celery.tasks import PROCESS_DELIVERY
from relay.settings import Settings

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
        if self._closed:
            return
        self._closed = True
        try:
            self.app.pool.force_close_all()
        except Exception:  # noqa: BLE001 - closing must not fail the shutdown
            log.debug("closing the broker pool failed", exc_info=True)
