"""Settings of the distributed mode and the Celery application built from them.

``DistributedSettings`` extends ``relay.settings.Settings`` (same ``RELAY_`` prefix) with:

``RELAY_RESULT_BACKEND``          Celery result backend URL (default: ``RELAY_BROKER_URL``)
``RELAY_CELERY_QUEUE``            queue name for every relay task (default ``relay``)
``RELAY_SHARD_SIZE``              items per shard (default 200); a run of n items becomes
                                  ceil(n / size) shards dealt round-robin from the sorted ids
``RELAY_VISIBILITY_TIMEOUT_S``    seconds a delivered, unacknowledged task message stays
                                  invisible before Redis hands it to another worker (default
                                  7,200); must exceed the longest shard, or a healthy shard is
                                  started a second time (harmless — results are upserted — but
                                  wasted)
``RELAY_RESTORE_INTERVAL_S``      seconds between a worker's sweeps for messages whose visibility
                                  timeout expired (kombu ``unacked_restore_interval``, default 10)
``RELAY_RESULT_WAIT_S``           longest wait for a run's chord, seconds (default: 6 h)

Errors: ``ConfigError`` when ``make_celery`` is given settings without a broker URL.
"""

from __future__ import annotations

from celery import Celery

from relay.errors import ConfigError
from relay.settings import Settings

__all__ = ["DistributedSettings", "make_celery", "TASK_MODULE"]

#: The module whose import registers the task bodies on an app (see ``tasks.register``).
TASK_MODULE = "relay.worker.celery.tasks"


class DistributedSettings(Settings):
    """``Settings`` plus the knobs of the Celery mode (all optional, all ``RELAY_``-prefixed)."""

    result_backend: str | None = None
    celery_queue: str = "relay"
    shard_size: int = 200
    visibility_timeout_s: int = 7200
    restore_interval_s: int = 10
    result_wait_s: float = 6 * 3600.0

    def require_broker(self) -> str:
        """The broker URL; raises ``ConfigError`` when ``RELAY_BROKER_URL`` is unset."""
        if not self.broker_url:
            raise ConfigError("RELAY_BROKER_URL must be set for the distributed mode "
                              "(e.g. redis://127.0.0.1:6379/0)")
        if self.shard_size < 1:
            raise ConfigError("RELAY_SHARD_SIZE must be >= 1")
        if self.visibility_timeout_s < 1:
            raise ConfigError("RELAY_VISIBILITY_TIMEOUT_S must be >= 1")
        return self.broker_url


def as_distributed(settings: Settings) -> DistributedSettings:
    """``settings`` as ``DistributedSettings`` (extra knobs from the environment if not given)."""
    if isinstance(settings, DistributedSettings):
        return settings
    return DistributedSettings(**settings.model_dump())


def make_celery(settings: Settings, *, name: str = "relay") -> Celery:
    """A Celery app for ``settings`` (broker and backend Redis URLs).

    At-least-once with idempotent effects: ``task_acks_late`` (a message is acknowledged after
    the task returns, so a worker killed mid-shard leaves it unacknowledged and Redis hands it
    out again once ``visibility_timeout`` passes), ``task_reject_on_worker_lost`` (a pool process
    that dies requeues its message at once), ``worker_prefetch_multiplier=1`` (a worker holds no
    more messages than it has processes, so a slow shard does not hide others).  JSON only.
    Raises ``ConfigError`` without a broker URL.
    """
    ds = as_distributed(settings)
    broker = ds.require_broker()
    app = Celery(name, broker=broker, backend=ds.result_backend or broker, set_as_current=False)
    transport = {"visibility_timeout": ds.visibility_timeout_s,
                 "unacked_restore_interval": ds.restore_interval_s,
                 "unacked_restore_throttle": 1}
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=ds.celery_queue,
        task_serializer="json", result_serializer="json", accept_content=["json"],
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        broker_connection_retry_on_startup=True,
        result_expires=7 * 24 * 3600,
        task_track_started=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    app.conf.relay_settings = ds
    return app
