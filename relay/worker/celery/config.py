"""The Celery application of the relay, built from ``relay.settings.Settings``.

Knobs (all ``RELAY_``-prefixed, see ``relay.settings``): ``BROKER_URL`` (required),
``RESULT_BACKEND``, ``CELERY_QUEUE``, ``SHARD_SIZE``, ``VISIBILITY_TIMEOUT_S``,
``RESTORE_INTERVAL_S``, ``RESULT_WAIT_S``.

Errors: ``ConfigError`` when ``make_celery`` is given settings without a broker URL.
"""

from __future__ import annotations

from celery import Celery

from relay.settings import Settings

__all__ = ["make_celery", "settings_of", "mutex_expire_s"]


def mutex_expire_s(settings: Settings) -> int:
    """Seconds kombu's ``unacked_mutex`` lives when its holder dies (see ``make_celery``)."""
    return int(min(300, max(2, settings.restore_interval_s)))


def make_celery(settings: Settings, *, name: str = "relay") -> Celery:
    """A Celery app for ``settings`` (broker and backend Redis URLs).

    At-least-once with idempotent effects: ``task_acks_late`` (a message is acknowledged after
    the task returns, so a worker killed mid-shard leaves it unacknowledged and Redis hands it
    out again once ``visibility_timeout`` passes), ``task_reject_on_worker_lost`` (a pool process
    that dies requeues its message at once), ``worker_prefetch_multiplier=1`` (a worker holds no
    more messages than it has processes, so a slow shard does not hide others).  JSON only.

    Redelivery honours ``RELAY_VISIBILITY_TIMEOUT_S``: kombu's Redis transport restores
    unacknowledged messages older than ``visibility_timeout`` every ``unacked_restore_interval``
    seconds under a Redis lock (``unacked_mutex``) that expires after ``unacked_mutex_expire``
    — 300 s by default, so a worker killed while holding it blocked every redelivery for ~5 min
    (issue 17).  The lock guards a scan of ≤ 10 index entries (milliseconds), so here it expires
    after ``mutex_expire_s(settings)`` (the restore interval, at least 2 s, at most 300 s): a
    dead holder delays redelivery by one restore period at most, so a message of a killed worker
    is handed out again within about ``visibility_timeout + 2 × restore interval``.
    Raises ``ConfigError`` without a broker URL.
    """
    broker = settings.require_broker()
    app = Celery(name, broker=broker, backend=settings.result_backend or broker,
                 set_as_current=False)
    transport = {"visibility_timeout": settings.visibility_timeout_s,
                 "unacked_restore_interval": settings.restore_interval_s,
                 "unacked_restore_throttle": 1,
                 "unacked_mutex_expire": mutex_expire_s(settings)}
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=settings.celery_queue,
        task_serializer="json", result_serializer="json", accept_content=["json"],
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        broker_connection_retry_on_startup=True,
        result_expires=7 * 24 * 3600,
        task_track_started=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    app.conf.relay_settings = settings
    return app


def settings_of(app: Celery) -> Settings:
    """The settings ``app`` was made from (or fresh ones from the environment)."""
    settings = getattr(app.conf, "relay_settings", None)
    return settings if isinstance(settings, Settings) else Settings()
