"""The relay's Celery tasks (names: ``relay.worker.celery.names``), registered by ``register``.

``relay.process_delivery(delivery_id)``
    once per accepted webhook delivery (``CeleryQueue.submit_delivery``; again at relay startup
    for rows still ``received``): ``relay.worker.celery.runs.start`` — claim, fan-out, plan,
    shards sent as a chord.  A message redelivered after its worker died finds the row
    ``processing``: it is moved back to ``received`` first so the delivery is not lost.  An
    attempt that met the database gone (``AttemptResult.INTERRUPTED``) retries the task after
    ``RELAY_DELIVERY_RETRY_S``, which moves the row back the same way.
``relay.run_shard(run_key, shard, ids, specs, device, timeout_s, reruns, env, python, modes)``
    ``relay.worker.celery.shards.run_shard``; a database blip retries it under
    ``relay.retrying.SHARD_DB`` (its finished tests are kept), other errors fail the chord.
``relay.finish_run(shard_returns, plan, note)`` / ``relay.run_failed(...)``
    the chord callback and errback of a delivery's run (``runs.finish`` / ``runs.failed``).
``relay.aggregate(shard_returns, run_key, ids)``
    the chord callback of ``relay replay``'s shards (``CeleryExecutor``): the results in
    ``ids`` order, read from the database.

Every task is late-acknowledged (``config.make_celery``), so all are idempotent: claims are
atomic, results are upserts keyed by (run key, test id), a finished delivery is not finished
again.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from relay.retrying import SHARD_DB
from relay.store.deliveries import POISON_ATTEMPTS
from relay.store.leases import lease_of
from relay.store.tables import DeliveryRecord, utcnow
from relay.worker.celery import runs
from relay.worker.celery.config import settings_of
from relay.worker.celery.names import AGGREGATE, FINISH_RUN, PROCESS_DELIVERY, RUN_FAILED, RUN_SHARD
from relay.worker.celery.shards import load_execution, run_shard, session_factory
from relay.worker.job import AttemptResult

__all__ = ["register"]

log = logging.getLogger(__name__)


def _requeue_if_redelivered(sf: sessionmaker[Session], delivery_id: str, request: Any) -> float | None:
    """For a message handed out again (broker redelivery, our own retry): when the delivery is
    ``processing`` and its lease has run out (the attempt died), move it back to ``received`` so
    this attempt runs it; when a live attempt still renews the lease (a planning step slower
    than ``RELAY_VISIBILITY_TIMEOUT_S``), return the seconds until it would run out — the caller
    retries then instead of running the delivery twice.  ``None``: go ahead."""
    info = getattr(request, "delivery_info", None) or {}
    again = info.get("redelivered") or getattr(request, "redelivered", False) \
        or (getattr(request, "retries", 0) or 0) > 0  # our own retry after the database left
    if not again:
        return None
    with sf() as session:
        found = lease_of(session, delivery_id)
        if found is None or found[0] != "processing":
            return None  # received: claim it; final: nothing to do (the claim says so)
        until = found[1]
        if until is None:
            log.info("[delivery: %s] redelivered, but its run went on as shards: dropped", delivery_id)
            return 0.0
        left = (until - utcnow()).total_seconds()
        if left > 0:
            log.warning("[delivery: %s] redelivered by the broker while a live attempt holds it "
                        "(lease %.0f s left): not run twice, checked again then", delivery_id, left)
            return left
        session.execute(update(DeliveryRecord)
                        .where(DeliveryRecord.delivery_id == delivery_id,
                               DeliveryRecord.status == "processing")
                        .values(status="received"))
        session.commit()
    log.warning("[delivery: %s] redelivered by the broker, its lease ran out: processing it again",
                delivery_id)
    return None


def _error_text(args: tuple[Any, ...]) -> str:
    """The exception among a Celery errback's positional arguments, as text."""
    exc = next((a for a in args if isinstance(a, BaseException)), None)
    return f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"


def register(app: Celery) -> dict[str, Any]:
    """Define the relay's tasks on ``app``; returns ``{name: task}``."""

    @app.task(name=RUN_SHARD, bind=True, autoretry_for=(OperationalError,),
              max_retries=(SHARD_DB.attempts or 1) - 1, retry_backoff=SHARD_DB.first_s,
              retry_backoff_max=SHARD_DB.max_s, retry_jitter=False)
    def run_shard_task(self, run_key: str, shard: int, ids: list[str], specs: list[dict],
                       device: str = "spyre", timeout_s: float = 120, reruns: int = 2,
                       env: dict[str, str] | None = None, python: str | None = None,
                       modes: dict[str, dict] | None = None) -> list[dict]:
        return run_shard(settings_of(app), run_key, shard, ids, specs, device=device,
                         timeout_s=timeout_s, reruns=reruns, env=env, python=python,
                         worker=self.request.hostname or "", modes=modes)

    @app.task(name=AGGREGATE)
    def aggregate_task(shard_returns: list[Any], run_key: str, ids: list[str]) -> list[dict]:
        sf = session_factory(settings_of(app).database_url)
        return [r.model_dump() for r in load_execution(sf, run_key, ids)]

    # max_retries=None: a lease wait (below) may repeat while a live attempt works, however long;
    # the database-gone path bounds its own retries (POISON_ATTEMPTS)
    @app.task(name=PROCESS_DELIVERY, bind=True, max_retries=None)
    def process_delivery_task(self, delivery_id: str) -> str | None:
        settings = settings_of(app)
        wait = _requeue_if_redelivered(session_factory(settings.database_url), delivery_id,
                                       self.request)
        if wait == 0.0:
            return None  # its shards finish it
        if wait is not None:  # a live attempt holds it: look again once its lease could end
            raise self.retry(countdown=wait + 1)
        status = runs.start(app, settings, delivery_id,  # transient failures: again, later
                            retry=lambda d, delay: self.apply_async((d,), countdown=delay))
        if status is AttemptResult.INTERRUPTED:  # the database left under the claim: once it is back
            raise self.retry(countdown=settings.delivery_retry_s, max_retries=POISON_ATTEMPTS)
        return status

    @app.task(name=FINISH_RUN)
    def finish_run_task(shard_returns: list[Any], plan: dict[str, Any], note: str | None) -> str:
        return runs.finish(settings_of(app), plan, note)

    @app.task(name=RUN_FAILED)
    def run_failed_task(*args: Any) -> None:
        runs.failed(settings_of(app), args[-1] if args and isinstance(args[-1], str) else None,
                    _error_text(args))

    return {RUN_SHARD: run_shard_task, AGGREGATE: aggregate_task,
            PROCESS_DELIVERY: process_delivery_task, FINISH_RUN: finish_run_task,
            RUN_FAILED: run_failed_task}
