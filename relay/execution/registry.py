"""The one place that chooses between in-process work and Celery workers.

``RELAY_BROKER_URL`` unset: deliveries run on the web process's ``InProcessQueue`` and tests in
local pytest subprocesses (``relay.pipeline.local.LocalExecutors``).  Set: deliveries go to
the broker (``relay.worker.celery.queue.CeleryQueue``) and ``relay replay`` sends its tests as
chords of shards (``relay.worker.celery.executor.CeleryExecutors``).  Celery is imported only
then, so a plain install without the ``distributed`` extra works in-process.

Callers: the composition roots (``relay.cli``, ``relay.service.factory``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from relay.errors import ConfigError
from relay.pipeline.local import LocalExecutors
from relay.pipeline.ports import ExecutorFactory
from relay.settings import Settings
from relay.store.durations import durations_from_db
from relay.worker.queue import InProcessQueue, TaskQueue
from test_specs.run.runner import default_shards

__all__ = ["executors_for", "task_queue_for", "distributed"]


def distributed(settings: Settings) -> bool:
    """Whether work goes to Celery workers (``RELAY_BROKER_URL`` is set)."""
    return bool(settings.broker_url)


def _celery_missing(exc: ImportError) -> ConfigError:
    return ConfigError(f"RELAY_BROKER_URL is set but Celery is not installed ({exc}); "
                       "pip install 'spyre-relay[distributed]'")


def executors_for(settings: Settings, spec_paths: Sequence[Path], *, device: str = "spyre",
                  timeout_s: float = 120, shards: int | None = None,
                  upstream: Path | None = None) -> ExecutorFactory:
    """How a replay's tests execute: Celery shards with a broker (the workers' own concurrency),
    else local pytest processes — ``shards`` of them, default every core — running the tests
    longest first by the durations stored in ``RELAY_DATABASE_URL`` so they end together.
    Raises ``ConfigError`` when a broker is set but Celery is not installed."""
    if distributed(settings):
        try:
            from relay.worker.celery.executor import CeleryExecutors  # lazy: needs celery
        except ImportError as exc:
            raise _celery_missing(exc) from None
        return CeleryExecutors(settings, spec_paths, device=device, timeout_s=timeout_s)
    return LocalExecutors(tuple(spec_paths), device=device, timeout_s=timeout_s,
                          shards=shards or default_shards(), upstream=upstream,
                          durations=lambda: durations_from_db(settings.database_url))


def task_queue_for(settings: Settings, handler: Callable[[str], None],
                   batch_handler: Callable[[list[str], Callable[[list[str]], None]], None] | None = None
                   ) -> TaskQueue:
    """Where accepted deliveries go: the broker (Celery workers run ``handler``'s equivalent),
    else an ``InProcessQueue`` of ``RELAY_WORKERS`` threads calling ``handler(delivery_id)`` —
    or ``batch_handler(ids, give_back)`` with the due backlog at once, when given.
    Raises ``ConfigError`` for a broker without Celery installed."""
    if distributed(settings):
        try:
            from relay.worker.celery.queue import CeleryQueue  # lazy: needs celery
        except ImportError as exc:
            raise _celery_missing(exc) from None
        return CeleryQueue(settings)
    return InProcessQueue(handler, workers=settings.workers, batch_handler=batch_handler)
