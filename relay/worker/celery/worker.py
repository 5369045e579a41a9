"""``start_worker``: what ``relay worker`` runs — a Celery worker consuming the relay queue.

Equivalent to ``celery -A relay.worker.celery.app worker -Q <queue> -c <n>``.  The worker
needs only ``RELAY_BROKER_URL`` and ``RELAY_DATABASE_URL`` (PostgreSQL when workers run on
several machines); spec files come with the package or inside the task messages, and every
shard runs in a local temporary directory.
"""

from __future__ import annotations

import os

from relay.settings import Settings
from relay.worker.celery.config import make_celery
from relay.worker.celery.tasks import register

__all__ = ["start_worker", "worker_argv"]


def worker_argv(settings: Settings, *, concurrency: int | None, loglevel: str,
                hostname: str | None, pool: str) -> list[str]:
    """The ``celery worker`` arguments; raises ``ValueError`` for a concurrency below 1."""
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    n = concurrency or max(2, os.cpu_count() or 1)
    argv = ["worker", "-Q", settings.celery_queue, "-c", str(n), "-P", pool,
            "--loglevel", loglevel, "--without-gossip", "--without-mingle"]
    if hostname:
        argv += ["-n", hostname]
    return argv


def start_worker(settings: Settings, *, concurrency: int | None = None,
                 loglevel: str = "INFO", hostname: str | None = None,
                 pool: str = "prefork") -> None:
    """Run a worker until it is stopped (SIGTERM: warm shutdown).  ``concurrency``: pool
    processes (default: CPU count, at least 2).  Raises ``ConfigError`` without a broker URL."""
    app = make_celery(settings)
    register(app)
    app.worker_main(worker_argv(settings, concurrency=concurrency, loglevel=loglevel,
                                hostname=hostname, pool=pool))
